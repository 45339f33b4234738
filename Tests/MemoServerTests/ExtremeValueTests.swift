import Foundation
import MemoModel
import MemoPostgres
import MemoProbe
import MemoSQLite
import MemoServer
import MemoTestSupport
import MemoWire
import PostgresTestSupport
import ServerTestSupport
import Testing

/// Every numeric field of every frame a client can send, driven with extreme values over TLS to a real server:
/// each request gets an answer (a response or an error frame), and the server goes on serving.
@Suite("Extreme values: every numeric field of every frame gets an answer and the server keeps serving")
struct ExtremeValueTests {
    /// What the server does with a case's frame.
    enum Expect {
        /// A response or an error frame, with the frame's request id (or 0 for an error before the request id).
        case answer
        /// Nothing by design: a client's `pong` and `error` are not answered (PROTOCOL.md).
        case nothing
        /// The connection ends (a client's `going-away`).
        case close
    }

    struct Case: CustomStringConvertible {
        var description: String
        var bytes: [UInt8]
        var requestID: UInt32
        var expect: Expect = .answer
        /// Sent as the first frame of a connection, instead of after hello.
        var beforeHello = false
    }

    static let values64: [UInt64] = [
        0, 1, UInt64.max /* −1 */, UInt64(bitPattern: Int64.min), UInt64(Int64.max), UInt64(UInt32.max),
    ]
    static let values32: [UInt32] = [0, 1, UInt32.max, 1 << 31]
    static let values16: [UInt16] = [0, 1, UInt16.max]
    static let values8: [UInt8] = [0, 1, 2, UInt8.max]

    static func frame(_ type: Message.Kind, _ requestID: UInt32, _ build: (inout WireWriter) -> Void) -> [UInt8] {
        var payload = WireWriter()
        build(&payload)
        var frame = WireWriter()
        frame.u32(UInt32(5 + payload.bytes.count))
        frame.u8(type.rawValue)
        frame.u32(requestID)
        return frame.bytes + payload.bytes
    }

    /// A `welcome` payload (a frame only a server sends) with one field changed.
    static func welcome(
        _ writer: inout WireWriter, version: UInt16 = 1, revision: UInt64 = 1, frameSize: UInt32 = 1 << 20,
        role: UInt8 = 1
    ) {
        writer.u16(version); writer.u64(revision); writer.u32(frameSize); writer.u8(role); writer.string("s")
    }

    /// Every case: one field at a time at each extreme (the others ordinary), and both dates of a create
    /// together.
    static func cases(existing id: UUID) -> [Case] {
        var cases: [Case] = []
        var next: UInt32 = 1000
        func add(_ name: String, _ type: Message.Kind, expect: Expect = .answer, beforeHello: Bool = false,
                 _ build: (inout WireWriter) -> Void) {
            next += 1
            cases.append(Case(description: name, bytes: frame(type, next, build), requestID: next, expect: expect,
                              beforeHello: beforeHello))
        }
        // The frame header: the length and the request id.
        for length in values32 + [4, 5] {
            var bytes = WireWriter()
            bytes.u32(length)
            bytes.u8(Message.Kind.ping.rawValue)
            bytes.u32(7)
            bytes.u64(1)
            cases.append(Case(description: "frame length \(length)", bytes: bytes.bytes, requestID: 7))
        }
        for requestID in values32 {
            cases.append(Case(description: "ping with request id \(requestID)",
                              bytes: frame(.ping, requestID) { $0.u64(9) }, requestID: requestID))
        }
        // Requests.
        for low in values16 {
            for high in values16 {
                add("hello \(low)...\(high)", .hello, beforeHello: true) { $0.u16(low); $0.u16(high); $0.string("x") }
                add("second hello \(low)...\(high)", .hello) { $0.u16(low); $0.u16(high); $0.string("x") }
            }
        }
        for flags in values8 + [0b011, 0b111] {
            add("create flags \(flags)", .create) { w in
                w.u8(flags)
                if flags & 1 != 0 { w.uuid(UUID()) }
                if flags & 2 != 0 { w.i64(1_000_000) }
                if flags & 4 != 0 { w.i64(2_000_000) }
                w.string("flags")
            }
        }
        for insert in values64 {
            add("create insert \(Int64(bitPattern: insert))", .create) { $0.u8(0b010); $0.u64(insert); $0.string("i") }
            add("create update \(Int64(bitPattern: insert))", .create) { $0.u8(0b100); $0.u64(insert); $0.string("u") }
            for update in values64 {
                add("create insert \(Int64(bitPattern: insert)) update \(Int64(bitPattern: update))", .create) {
                    $0.u8(0b110); $0.u64(insert); $0.u64(update); $0.string("both")
                }
            }
            // The same dates twice, then without a date: the insert clock.
            add("create insert \(Int64(bitPattern: insert)) again", .create) {
                $0.u8(0b010); $0.u64(insert); $0.string("i")
            }
            add("create without a date after \(Int64(bitPattern: insert))", .create) { $0.u8(0); $0.string("now") }
        }
        for length in values32 {
            add("create content length \(length)", .create) { $0.u8(0); $0.u32(length); $0.bytes += Array("abc".utf8) }
            add("update content length \(length)", .update) {
                $0.uuid(id); $0.u8(0); $0.u32(length); $0.bytes += Array("abc".utf8)
            }
        }
        for has in values8 {
            add("update hasExpected \(has)", .update) {
                $0.uuid(id); $0.u8(has); if has == 1 { $0.u64(1) }; $0.string("e")
            }
            add("delete hasExpected \(has) of a missing memo", .delete) {
                $0.uuid(UUID()); $0.u8(has); if has == 1 { $0.u64(1) }
            }
        }
        for revision in values64 {
            add("update expected \(revision)", .update) { $0.uuid(id); $0.u8(1); $0.u64(revision); $0.string("r") }
            add("delete expected \(revision)", .delete) { $0.uuid(id); $0.u8(1); $0.u64(revision) }
            add("subscribe after \(revision)", .subscribe) { $0.u8(1); $0.u64(revision) }
            add("ping nonce \(revision)", .ping) { $0.u64(revision) }
        }
        for mode in values8 {
            add("subscribe mode \(mode)", .subscribe) { $0.u8(mode); if mode == 1 { $0.u64(0) } }
        }
        for subscription in values32 {
            add("unsubscribe \(subscription)", .unsubscribe) { $0.u32(subscription) }
        }
        // Frames only a server sends, with their numeric fields at the extremes: each is 203 (or 100).
        for value in values64 {
            let memo = Memo(id: UUID(), content: "m", insertMicros: Int64(bitPattern: value),
                            updateMicros: Int64(bitPattern: value), revision: value)
            add("welcome revision \(value)", .welcome) { welcome(&$0, revision: value) }
            add("memo \(value)", .memo) { $0.memo(memo) }
            add("memos revision \(value)", .memos) { $0.u64(value); $0.u8(1); $0.u32(1); $0.memo(memo) }
            add("snapshot revision \(value)", .snapshot) { $0.u64(value); $0.u8(1); $0.u32(0) }
            add("subscribed \(value)", .subscribed) { $0.u64(value) }
            add("change \(value)", .change) { $0.u64(value); $0.u8(1); $0.memo(memo) }
            add("history-gone \(value)", .historyGone) { $0.u64(value); $0.u64(value) }
            add("pong \(value)", .pong, expect: .nothing) { $0.u64(value) }
        }
        for count in values32 {
            add("memos count \(count)", .memos) { $0.u64(1); $0.u8(1); $0.u32(count) }
            add("snapshot count \(count)", .snapshot) { $0.u64(1); $0.u8(1); $0.u32(count) }
            add("welcome frame size \(count)", .welcome) { welcome(&$0, frameSize: count) }
        }
        for small in values8 {
            add("welcome role \(small)", .welcome) { welcome(&$0, role: small) }
            add("memos flags \(small)", .memos) { $0.u64(1); $0.u8(small); $0.u32(0) }
            add("change kind \(small)", .change) {
                $0.u64(1); $0.u8(small)
                $0.memo(Memo(id: UUID(), content: "k", insertMicros: 1, updateMicros: 1, revision: 1))
            }
        }
        for code in values16 {
            add("welcome version \(code)", .welcome) { welcome(&$0, version: code) }
            add("error code \(code)", .error, expect: .nothing) { $0.u16(code); $0.string("e") }
            add("going-away code \(code)", .goingAway, expect: .close) { $0.u16(code); $0.string("g") }
        }
        return cases
    }

    /// Whether `frame` answers the case: its request id, or an error or going-away for the whole connection.
    static func answers(_ frame: Frame, _ requestID: UInt32) -> Bool {
        frame.requestID == requestID
            || (frame.requestID == 0
                && (frame.type == Message.Kind.error.rawValue || frame.type == Message.Kind.goingAway.rawValue))
    }

    @Test(arguments: ["sqlite", "postgres"])
    func everyNumericFieldAtEveryExtremeIsAnsweredAndTheServerKeepsServing(storeKind: String) throws {
        let folder = try TemporaryDirectory()
        let store: any ServingStore
        if storeKind == "sqlite" {
            store = try SQLiteStore(path: folder.path + "/memos.sqlite")
        } else {
            guard postgresTestsEnabled else { return }
            store = try PostgresStore(uri: try TestPostgres.shared().makeDatabase())
        }
        let server = try TestServer(store: store)
        defer { server.stop() }
        var connection = try server.connect()
        guard case .memo(let existing) = try connection.request(.create(id: nil, insertMicros: nil, content: "target"))
        else {
            Issue.record("the first create failed")
            return
        }
        let cases = Self.cases(existing: existing.id)
        var nonce: UInt64 = 0
        var closes = 0
        for item in cases {
            if item.beforeHello { connection = try server.connect(hello: false) }
            try connection.sendRaw(item.bytes)
            switch item.expect {
            case .answer:
                do {
                    _ = try connection.receive { Self.answers($0, item.requestID) }
                } catch {
                    Issue.record("\(item): no answer (\(error))")
                }
            case .nothing:
                break
            case .close:
                _ = try? connection.readUntilClosed()
            }
            // The server goes on: a ping on this connection, or on a new one when the case closed this one.
            nonce += 1
            let pong: Message
            do {
                pong = try connection.request(.ping(nonce: nonce))
            } catch {
                closes += 1
                connection = try server.connect()
                pong = try connection.request(.ping(nonce: nonce))
            }
            #expect(pong == .pong(nonce: nonce), "after \(item)")
        }
        // A normal request after them all, on a new connection.
        let last = try server.connect()
        guard case .memo(let made) = try last.request(.create(id: nil, insertMicros: nil, content: "after all"))
        else {
            Issue.record("a create after the extreme values failed")
            return
        }
        #expect(abs(made.insertMicros - Date().unixMicros) < 60_000_000)
        #expect(try last.request(.get(id: made.id)) == .memo(made))
        #expect(cases.count > 200 && closes > 10, "\(cases.count) cases, \(closes) closed their connection")
    }
}
