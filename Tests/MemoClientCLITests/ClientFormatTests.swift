import Foundation
import MemoClient
import MemoClientCLI
import MemoModel
import MemoTLS
import MemoText
import MemoWire
import Testing

@Suite("Client: timestamps and JSON")
struct ClientFormatTests {
    @Test func firstLineEndsAtTheFirstNewlineWithTabsAndReturnsAsSpaces() {
        #expect(MemoFormatter.firstLine("plain") == "plain")
        #expect(MemoFormatter.firstLine("one\ntwo") == "one")
        #expect(MemoFormatter.firstLine("crlf\r\nnext") == "crlf ")
        #expect(MemoFormatter.firstLine("a\tb\rc") == "a b c")
        #expect(MemoFormatter.firstLine("한글\t메모\n둘째") == "한글 메모")
        #expect(MemoFormatter.firstLine("\nsecond") == "")
        #expect(MemoFormatter.firstLine("") == "")
        // NFD stays NFD: the bytes are kept, not normalized.
        #expect(Array(MemoFormatter.firstLine("e\u{301}\n").utf8) == Array("e\u{301}".utf8))
    }

    @Test func timestampsBeyondFourDigitYearsKeepTheirSign() {
        #expect(Timestamp.iso8601(micros: 253_402_300_800_000_000) == "+010000-01-01T00:00:00.000000Z")
        #expect(Timestamp.iso8601(micros: -62_167_219_200_000_001) == "-000001-12-31T23:59:59.999999Z")
    }

    @Test func timestampsAreUTCWithSixFractionDigits() {
        #expect(Timestamp.iso8601(micros: 1_795_000_000_000_000) == "2026-11-18T11:06:40.000000Z")
        #expect(Timestamp.iso8601(micros: 1_795_000_000_123_456) == "2026-11-18T11:06:40.123456Z")
        #expect(Timestamp.iso8601(micros: 0) == "1970-01-01T00:00:00.000000Z")
        #expect(Timestamp.iso8601(micros: -1) == "1969-12-31T23:59:59.999999Z")
        #expect(Timestamp.iso8601(micros: 951_782_400_000_000) == "2000-02-29T00:00:00.000000Z")
    }

    @Test func timestampsParseOffsetsAndAnyFractionLength() {
        #expect(Timestamp.parse("2026-11-18T11:06:40Z") == 1_795_000_000_000_000)
        #expect(Timestamp.parse("2026-11-18T11:06:40.1Z") == 1_795_000_000_100_000)
        #expect(Timestamp.parse("2026-11-18T11:06:40.123456789Z") == 1_795_000_000_123_456)
        #expect(Timestamp.parse("2026-11-18T20:06:40.5+09:00") == 1_795_000_000_500_000)
        #expect(Timestamp.parse("2026-11-18T06:36:40-04:30") == 1_795_000_000_000_000)
        for bad in ["2026-11-18", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-18T24:00:00Z",
                    "2026-11-18T11:06:40", "2026-11-18T11:06:40.Z", "2026-11-18T11:06:40.1234567890Z",
                    "2026-11-18T11:06:40Zjunk", "2026-11-18T11:06:40+0900", " 2026-11-18T11:06:40Z"] {
            #expect(Timestamp.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func timestampsRoundTripExactly() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let micros = Int64.random(in: -62_135_596_800_000_000...253_402_300_799_999_999, using: &generator)
            #expect(Timestamp.parse(Timestamp.iso8601(micros: micros)) == micros)
        }
    }

    @Test func memoJSONHasTheFieldsInOrderAndRoundTripsAnyContent() throws {
        let content = "line \"one\"\n\ttab\\ 안녕 🎉 \u{0}\u{1F}\u{7F} \r end"
        let memo = Memo(
            id: UUID(uuidString: "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0")!, content: content,
            insertMicros: 1_795_000_000_000_001, updateMicros: 1_795_000_000_999_999, revision: 42)
        let text = MemoJSON.object(memo)
        #expect(text.hasPrefix(
            "{\"id\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"content\":\"line \\\"one\\\"\\n\\ttab"))
        #expect(text.hasSuffix("\"insertDate\":\"2026-11-18T11:06:40.000001Z\","
            + "\"updateDate\":\"2026-11-18T11:06:40.999999Z\",\"revision\":42}"))
        #expect(!text.contains("\n"))
        let record = try MemoJSON.record(fromLine: text)
        #expect(record.id == memo.id)
        #expect(record.content == content)
        #expect(record.insertMicros == memo.insertMicros)
        #expect(record.updateMicros == memo.updateMicros)
        #expect(record.revision == 42)
        // Foundation agrees that it is JSON.
        let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        #expect(parsed?["content"] as? String == content)
    }

    @Test func changeJSONWrapsTheMemo() {
        let memo = Memo(id: UUID(), content: "x", insertMicros: 0, updateMicros: 0, revision: 7)
        #expect(MemoJSON.object(Change(revision: 7, kind: .deleted, memo: memo))
            == "{\"type\":\"deleted\",\"revision\":7,\"memo\":" + MemoJSON.object(memo) + "}")
    }

    @Test func badImportLinesSayWhatIsWrong() {
        #expect(throws: MemoError.invalidArgument("missing field \"insertDate\"")) {
            try MemoJSON.record(fromLine: "{\"id\":\"0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\",\"content\":\"x\"}")
        }
        #expect(throws: MemoError.self) {
            try MemoJSON.record(fromLine: "{\"id\":\"nope\",\"content\":\"x\",\"insertDate\":\"2026-11-18T11:06:40Z\"}")
        }
        #expect(throws: MemoError.self) { try MemoJSON.record(fromLine: "[1,2]") }
    }

    @Test func plainLinesAreTabSeparatedWithOneLineOfContent() {
        let memo = Memo(
            id: UUID(uuidString: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!, content: "a\tb\r\nsecond line",
            insertMicros: 1_795_000_000_000_000, updateMicros: 1_795_000_000_000_000, revision: 3)
        let plain = MemoFormatter(style: OutputStyle(json: false, human: false, color: true))
        #expect(plain.line(memo) == "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\t3\t2026-11-18T11:06:40.000000Z\ta b ")
        #expect(plain.line(Change(revision: 3, kind: .updated, memo: memo))
            == "updated\t0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0\t3\t2026-11-18T11:06:40.000000Z\ta b ")
        #expect(plain.detail(memo) == "a\tb\r\nsecond line\n")
        let human = MemoFormatter(style: OutputStyle(json: false, human: true, color: false))
        #expect(human.line(memo).hasPrefix("0f1e2d3c  "))
        #expect(!human.line(memo).contains("\u{1B}"))
        let colored = MemoFormatter(style: OutputStyle(json: false, human: true, color: true))
        #expect(colored.line(memo).contains("\u{1B}[33m0f1e2d3c\u{1B}[0m"))
    }

    @Test func linesForPeopleFitTheTerminalAndShowControlCharacters() {
        let memo = Memo(
            id: UUID(uuidString: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")!,
            content: "한글 \u{1B}[31mred\u{1B}[0m " + String(repeating: "x", count: 80) + "\nline\u{7F} two\r\nthree",
            insertMicros: 1_795_000_000_000_000, updateMicros: 1_795_000_000_000_000, revision: 3)
        let narrow = MemoFormatter(style: OutputStyle(json: false, human: true, color: false, columns: 50))
        let line = narrow.line(memo)
        #expect(line.columns == 50 && line.hasSuffix("…"), "\(line)")
        #expect(line.contains("한글 ␛[31mred␛[0m x"))
        let change = narrow.line(Change(revision: 3, kind: .updated, memo: memo))
        #expect(change.columns == 50 && change.hasPrefix("~ 0f1e2d3c"), "\(change)")
        // The whole memo for people: its lines kept, its control characters shown, never cut.
        let detail = narrow.detail(memo)
        #expect(detail.hasSuffix("한글 ␛[31mred␛[0m " + String(repeating: "x", count: 80) + "\nline� two\nthree\n"))
        #expect(!detail.contains("\u{1B}"))
        // Unknown width: nothing cut. Scripts and JSON: every byte as stored, whatever the terminal.
        let wide = MemoFormatter(style: OutputStyle(json: false, human: true, color: false))
        #expect(wide.line(memo).hasSuffix(String(repeating: "x", count: 80)))
        #expect(OutputStyle(json: false, human: false, color: false, columns: 40).columns == nil)
        #expect(OutputStyle(json: true, human: true, color: false, columns: 40).columns == nil)
        let plain = MemoFormatter(style: OutputStyle(json: false, human: false, color: false, columns: 40))
        #expect(plain.line(memo).contains("\u{1B}[31mred"))
        #expect(plain.detail(memo) == memo.content + "\n")
    }
}

@Suite("Client command line: exit codes")
struct ClientExitCodeTests {
    @Test func errorsMapToTheDocumentedExitCodes() {
        let id = UUID()
        #expect(ExitCode(MemoError.notFound(id)) == .notFound)
        #expect(ExitCode(MemoError.conflict(id: id, expected: 1, actual: 2)) == .conflict)
        #expect(ExitCode(IDLookupError.ambiguous("a", matches: ["a1", "a2"])) == .conflict)
        #expect(ExitCode(IDLookupError.notFound("a")) == .notFound)
        #expect(ExitCode(MemoError.permissionDenied("read-only")) == .refused)
        #expect(ExitCode(TLSError(kind: .unknownCA, operation: "TLS handshake (client)")) == .refused)
        #expect(ExitCode(ClientError.tlsRefused(
            server: "s", TLSError(kind: .noClientCertificate, operation: "x"))) == .refused)
        #expect(ExitCode(ClientError.unreachable(server: "s", reason: "connection refused")) == .unreachable)
        #expect(ExitCode(ClientError.timedOut(server: "s", seconds: 1)) == .unreachable)
        #expect(ExitCode(MemoError.contentTooLarge(size: 70_000, limit: 65_536)) == .failure)
        #expect(ExitCode(CommandUsageError("x")) == .usage)
        #expect(ExitCode.message(for: ClientError.unreachable(server: "127.0.0.1:7420", reason: "connection refused"))
            == "cannot reach 127.0.0.1:7420: connection refused")
    }

    @Test func theResyncLineSaysTheRevisionInEachStyle() {
        #expect(MemoFormatter(style: OutputStyle(json: true, human: false, color: false)).resync(revision: 42)
            == #"{"event":"resync","revision":42}"#)
        #expect(MemoFormatter(style: OutputStyle(json: false, human: false, color: true)).resync(revision: 42)
            == "resync\t42")
        #expect(MemoFormatter(style: OutputStyle(json: false, human: true, color: false)).resync(revision: 42)
            == "= resync at revision 42: changes made while away are no longer held by the server; the whole list "
                + "follows")
    }

    @Test func anUnknownOutcomeIsExitSevenAndItsLineSaysTheWriteMayHaveBeenApplied() {
        #expect(ExitCode(MemoError.outcomeUnknown("x")) == .outcomeUnknown)
        #expect(ExitCode.message(for: MemoError.outcomeUnknown("the commit's connection broke"))
            == "outcome unknown: the commit's connection broke; the write may or may not have been applied")
        #expect(ExitCode.message(for: MemoError.outcomeUnknown("no answer; it may or may not have been applied"))
            == "outcome unknown: no answer; it may or may not have been applied")
    }
}

@Suite("memo-client status: rows and exit codes")
struct StatusFormatTests {
    private let ready = StatusReport(ready: true, fields: [
        StatusField("revision.head", .integer(7)), StatusField("memos.count", .integer(3)),
        StatusField("connections.read_write", .integer(2)), StatusField("connections.read_only", .integer(1)),
        StatusField("subscribers", .integer(2)), StatusField("store.kind", .text("sqlite")),
        StatusField("store.location", .text("/var/lib/memo/memos.sqlite")), StatusField("uptime.seconds", .number(3725)),
        StatusField("postgres.applied_revision", .none),
    ])

    @Test func everyServerReadyIsExitZeroANotReadyOneIsEightAndAnUnreachableOneWins() {
        let notReady = StatusReport(ready: false, reason: "feed lagging 9.1 s", fields: [])
        let down = StatusRow(server: "c:7420", failure: "cannot reach c:7420: connection refused", code: .unreachable)
        #expect(StatusFormat.exitCode([StatusRow(server: "a:7420", report: ready)]) == .ok)
        #expect(StatusFormat.exitCode([
            StatusRow(server: "a:7420", report: ready), StatusRow(server: "b:7420", report: notReady),
        ]) == .notReady)
        #expect(StatusFormat.exitCode([StatusRow(server: "b:7420", report: notReady), down]) == .unreachable)
        #expect(ExitCode.notReady.rawValue == 8)
    }

    @Test func rowsForPeopleScriptsAndJSON() {
        let notReady = StatusReport(ready: false, reason: "shutting down", fields: [
            StatusField("postgres.applied_revision", .integer(5)), StatusField("postgres.database_head", .integer(9)),
            StatusField("postgres.feed_progress_age.seconds", .number(2.25)),
        ])
        let rows = [StatusRow(server: "a:7420", report: ready), StatusRow(server: "b:7420", report: notReady)]
        let script = StatusFormat.lines(rows, style: OutputStyle(json: false, human: false, color: false))
        #expect(script == [
            "a:7420\tready\t7\t3\t3\t2\t-\tsqlite:/var/lib/memo/memos.sqlite\t1h02m\t",
            "b:7420\tnot-ready\t-\t-\t0\t-\t4 (2.2s)\t-\t-\tshutting down",
        ])
        let human = StatusFormat.lines(rows, style: OutputStyle(json: false, human: true, color: false))
        #expect(human.count == 3)
        #expect(human[0].hasPrefix("SERVER  STATUS     REVISION"))
        let json = StatusFormat.lines(rows, style: OutputStyle(json: true, human: false, color: false))
        #expect(json[1] == #"{"server":"b:7420","reachable":true,"ready":false,"reason":"shutting down","fields":"#
            + #"{"postgres.applied_revision":5,"postgres.database_head":9,"postgres.feed_progress_age.seconds":2.25}}"#)
    }
}
