import Foundation
import MemoCLI
import MemoNet
import MemoPKI
import MemoProbe
import MemoTLS
import MemoWire

/// `memo-torture hostile`: the catalog of hostile peers, one after another against one live server, while a good
/// client keeps pinging and writing on its own connection and the server's memory is sampled.
struct HostileTorture {
    var serverBinary = siblingExecutable("memo-server")
    var only: [String]?
    var listOnly = false
    var latencyBound = 500
    var rssBoundMiB = 256
    var flood = 2000
    var keep = false
    var maxOutbound = 256 * 1024

    init(_ arguments: inout Arguments) throws(UsageError) {
        serverBinary = try arguments.option("--server-binary") ?? serverBinary
        only = try arguments.option("--cases").map { $0.split(separator: ",").map(String.init) }
        listOnly = arguments.flag("--list")
        latencyBound = try arguments.integer("--latency-bound", in: 1...60_000) ?? latencyBound
        rssBoundMiB = try arguments.integer("--rss-bound", in: 1...1_000_000) ?? rssBoundMiB
        flood = try arguments.integer("--flood", in: 1...100_000) ?? flood
        keep = arguments.flag("--keep")
        maxOutbound = try arguments.integer("--max-outbound", in: 64 * 1024...1 << 34) ?? maxOutbound
        try arguments.finish()
        let names = Set(HostileCatalog.cases.map(\.name))
        for name in only ?? [] where !names.contains(name) {
            throw UsageError("no case named '\(name)' (--list shows the catalog)")
        }
    }

    func run() throws -> Bool {
        let cases = HostileCatalog.cases.filter { only?.contains($0.name) ?? true }
        if listOnly {
            for item in cases { say("\(item.name): \(item.expected)") }
            return true
        }
        raiseDescriptorLimit()
        let directory = try makeTemporaryDirectory("memo-hostile")
        defer {
            if keep {
                say("kept \(directory)")
            } else {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        let context = try HostileContext(
            directory: directory, serverBinary: serverBinary, flood: flood, maxOutbound: maxOutbound)
        defer { context.server.stop() }
        let sampler = MemorySampler(server: context.server)
        sampler.start()
        defer { sampler.stop() }
        let good = GoodClient(context: context)
        good.start()
        defer { good.stop() }
        guard good.waitForRound(after: .now, within: 10)?.failure == nil else {
            throw TortureError("the good client is not served even before the first case")
        }
        say("hostile: \(cases.count) cases against \(context.address); latency bound \(latencyBound) ms, "
            + "RSS bound \(rssBoundMiB) MiB; server RSS at start \(sampler.peakKiB / 1024) MiB")

        var passed = 0
        var worstLatency = Duration.zero
        for item in cases {
            let start = ContinuousClock.now
            sampler.resetCasePeak()
            let outcome: CaseOutcome
            do {
                outcome = try item.run(context)
            } catch {
                outcome = CaseOutcome(false, "the case could not run: \(error)")
            }
            let end = ContinuousClock.now
            let after = good.waitForRound(after: end, within: 10)
            let rounds = good.rounds(from: start, to: end) + (after.map { [$0] } ?? [])
            let slowest = rounds.compactMap(\.latency).max() ?? .zero
            worstLatency = max(worstLatency, slowest)
            var goodProblems: [String] = []
            if after == nil { goodProblems.append("no good-client round finished within 10 s after the case") }
            if let failure = rounds.compactMap(\.failure).first {
                goodProblems.append("the good client failed: \(failure)")
            }
            if slowest > .milliseconds(latencyBound) {
                goodProblems.append("the good client waited \(milliseconds(slowest)) ms")
            }
            let casePeak = sampler.casePeakKiB
            let ok = outcome.passed && goodProblems.isEmpty && casePeak <= rssBoundMiB * 1024
            if ok { passed += 1 }
            var got = outcome.got
            if !goodProblems.isEmpty { got += "; " + goodProblems.joined(separator: "; ") }
            say("\(ok ? "PASS" : "FAIL") \(item.name): expected \(item.expected); got \(got) "
                + "[\(milliseconds(end - start)) ms; good client \(rounds.count) rounds, slowest "
                + "\(milliseconds(slowest)) ms; server RSS peak \(casePeak / 1024) MiB]")
        }
        let peak = sampler.peakKiB
        let allPassed = passed == cases.count && peak <= rssBoundMiB * 1024 && context.server.isRunning
        say("hostile summary: \(allPassed ? "PASS" : "FAIL"); \(passed)/\(cases.count) cases passed; good client "
            + "slowest round \(milliseconds(worstLatency)) ms (bound \(latencyBound) ms); server peak RSS "
            + "\(peak / 1024) MiB (bound \(rssBoundMiB) MiB); server \(context.server.isRunning ? "up" : "DOWN")")
        return allPassed
    }
}

/// What a case saw, and whether that is what it expected.
struct CaseOutcome {
    var passed: Bool
    var got: String
    init(_ passed: Bool, _ got: String) {
        self.passed = passed
        self.got = got
    }
}

/// One entry of the catalog.
struct HostileCase: Sendable {
    let name: String
    let expected: String
    let run: @Sendable (HostileContext) throws -> CaseOutcome
}

/// The server under attack and the certificates the cases use.
final class HostileContext: Sendable {
    let server: ServerRunner
    let address: SocketAddress
    let certs: String
    let foreignCerts: String
    let handshakeTimeout = 2.0
    let frameTimeout = 2.0
    let maxInFlight = 64
    let maxOutbound: Int
    let flood: Int

    init(directory: String, serverBinary: String, flood: Int, maxOutbound: Int) throws {
        self.flood = flood
        self.maxOutbound = maxOutbound
        certs = directory + "/certs"
        foreignCerts = directory + "/foreign"
        _ = try CertificateAuthority.initialize(
            directory: certs, caValidity: .days(1), serverValidity: .days(1), clientValidity: .days(1))
        _ = try CertificateAuthority.issueClient(name: "reader", directory: certs, readOnly: true, validity: .days(1))
        _ = try CertificateAuthority.issueClient(name: "expired", directory: certs, validity: .expired)
        _ = try CertificateAuthority.issueClient(name: "future", directory: certs, validity: .notYetValid)
        _ = try CertificateAuthority.initialize(
            directory: foreignCerts, caValidity: .days(1), serverValidity: .days(1), clientValidity: .days(1))
        server = ServerRunner(
            binary: serverBinary,
            arguments: [
                "--listen", "127.0.0.1:0", "--store", "sqlite:\(directory)/memos.sqlite", "--certs", certs,
                "--threads", "2", "--handshake-timeout", "\(handshakeTimeout)",
                "--frame-timeout", "\(frameTimeout)", "--max-in-flight", "\(maxInFlight)",
                "--max-outbound", "\(maxOutbound)",
            ],
            logPath: directory + "/server.log")
        address = try SocketAddress(parsing: try server.start())
    }

    /// A client certificate of ours (`client`, `reader`, `expired`, `future`).
    func identity(_ name: String = "client") -> ProbeConnection.Identity {
        ProbeConnection.Identity(
            ca: certs + "/ca.crt", certificate: certs + "/\(name).crt", key: certs + "/\(name).key")
    }

    /// TLS (and hello unless told not to) with one of our certificates.
    func connect(_ name: String = "client", hello: Bool = true, timeout: Duration = .seconds(5)) throws
        -> ProbeConnection
    {
        let connection = try ProbeConnection(address: address, identity: identity(name), timeout: timeout)
        if hello { try connection.hello() }
        return connection
    }

    /// How many server log lines contain `text` so far.
    func logCount(_ text: String) -> Int {
        server.log.components(separatedBy: "\n").filter { $0.contains(text) }.count
    }
}

/// The well-behaved client: a ping and a create every 50 ms on one long-lived connection, each round timed.
// @unchecked Sendable: `connection` is touched only by the client's own thread; `state` is locked.
final class GoodClient: @unchecked Sendable {
    struct Round {
        var start: ContinuousClock.Instant
        var end: ContinuousClock.Instant
        var latency: Duration?
        var failure: String?
    }

    private let context: HostileContext
    private let state = LockedBox<(rounds: [Round], stopping: Bool)>(([], false))
    private let done = DispatchSemaphore(value: 0)
    private var connection: ProbeConnection?

    init(context: HostileContext) {
        self.context = context
    }

    func start() {
        Thread.detachNewThread { self.loop() }
    }

    func stop() {
        state.update { $0.stopping = true }
        done.wait()
    }

    private func loop() {
        var count: UInt64 = 0
        while !state.value.stopping {
            count += 1
            let start = ContinuousClock.now
            var failure: String?
            do {
                if connection == nil { connection = try context.connect(timeout: .seconds(10)) }
                guard try connection!.request(.ping(nonce: count)) == .pong(nonce: count) else {
                    throw TortureError("wrong pong")
                }
                let reply = try connection!.request(.create(id: UUID(), insertMicros: nil, content: "good \(count)"))
                guard case .memo = reply else { throw TortureError("create answered \(reply)") }
            } catch {
                failure = "\(error)"
                connection = nil
            }
            let end = ContinuousClock.now
            state.update { $0.rounds.append(Round(start: start, end: end, latency: end - start, failure: failure)) }
            pause(0.05)
        }
        connection = nil
        done.signal()
    }

    /// Rounds that started in the window (or were still running when it began).
    func rounds(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> [Round] {
        state.value.rounds.filter { $0.end >= start && $0.start <= end }
    }

    /// The first round that starts after `instant`, once it has finished (nil if none within `seconds`).
    func waitForRound(after instant: ContinuousClock.Instant, within seconds: Double) -> Round? {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            if let round = state.value.rounds.last(where: { $0.start >= instant }) { return round }
            pause(0.01)
        }
        return nil
    }
}

/// Samples the server's VmRSS every 20 ms.
// @unchecked Sendable: the peaks are locked; `server` is only read (its pid) from the sampling thread.
final class MemorySampler: @unchecked Sendable {
    private let server: ServerRunner
    private let peaks = LockedBox<(all: Int, currentCase: Int, stopping: Bool)>((0, 0, false))
    private let done = DispatchSemaphore(value: 0)

    init(server: ServerRunner) {
        self.server = server
        sample()
    }

    private func sample() {
        guard let kib = server.residentKiB else { return }
        peaks.update {
            $0.all = max($0.all, kib)
            $0.currentCase = max($0.currentCase, kib)
        }
    }

    func start() {
        Thread.detachNewThread {
            while !self.peaks.value.stopping {
                self.sample()
                pause(0.02)
            }
            self.done.signal()
        }
    }

    func stop() {
        peaks.update { $0.stopping = true }
        done.wait()
    }

    var peakKiB: Int { peaks.value.all }
    var casePeakKiB: Int { peaks.value.currentCase }
    func resetCasePeak() {
        sample()
        peaks.update { $0.currentCase = 0 }
        sample()
    }
}
