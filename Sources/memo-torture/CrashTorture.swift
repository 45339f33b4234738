import Foundation
import MemoCLI
import MemoModel
import MemoNet
import MemoPKI
import MemoProbe
import MemoTLS
import MemoWire

/// `memo-torture crash`: writers and watchers against a SQLite-backed server that is killed with SIGKILL at
/// random moments and restarted on the same port; afterwards every acknowledged write and every watcher's
/// stream is checked against the server's final list and history.
struct CrashTorture {
    var cycles = 5
    var writers = 4
    var watchers = 2
    var pipeline = 4
    var minUptime = 0.3
    var maxUptime = 1.5
    var seed = UInt64.random(in: 1...UInt64(UInt32.max))
    var serverBinary = siblingExecutable("memo-server")
    var clientBinary = siblingExecutable("memo-client")
    var keep = false
    var memoryStore = false
    /// A PostgreSQL URI: two servers share it, and only the first is killed.
    var postgres: String?

    init(_ arguments: inout Arguments) throws(UsageError) {
        cycles = try arguments.integer("--cycles", in: 1...10_000) ?? cycles
        writers = try arguments.integer("--writers", in: 1...256) ?? writers
        watchers = try arguments.integer("--watchers", in: 0...64) ?? watchers
        pipeline = try arguments.integer("--pipeline", in: 1...64) ?? pipeline
        minUptime = try arguments.seconds("--min-uptime") ?? minUptime
        maxUptime = try arguments.seconds("--max-uptime") ?? maxUptime
        seed = try arguments.integer("--seed", in: 1...Int.max).map { UInt64($0) } ?? seed
        serverBinary = try arguments.option("--server-binary") ?? serverBinary
        clientBinary = try arguments.option("--client-binary") ?? clientBinary
        keep = arguments.flag("--keep")
        let store = try arguments.option("--store") ?? "sqlite"
        let isPostgres = store.hasPrefix("postgres://") || store.hasPrefix("postgresql://")
        guard store == "sqlite" || store == "memory" || isPostgres else {
            throw UsageError("--store takes sqlite, memory or postgres://URI")
        }
        memoryStore = store == "memory"
        postgres = isPostgres ? store : nil
        try arguments.finish()
        guard minUptime <= maxUptime else { throw UsageError("--min-uptime is above --max-uptime") }
    }

    /// - Returns: whether every check passed.
    func run() throws -> Bool {
        let directory = try makeTemporaryDirectory("memo-crash")
        defer {
            if keep {
                say("kept \(directory)")
            } else {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        let certs = directory + "/certs"
        _ = try CertificateAuthority.initialize(directory: certs, caValidity: .days(1), serverValidity: .days(1),
                                                clientValidity: .days(1))
        let identity = ProbeConnection.Identity(
            ca: certs + "/ca.crt", certificate: certs + "/client.crt", key: certs + "/client.key")
        let port = try freeLoopbackPort()
        let listen = "127.0.0.1:\(port)"
        let storeArgument = postgres ?? (memoryStore ? "memory" : "sqlite:\(directory)/memos.sqlite")
        let server = ServerRunner(
            binary: serverBinary, arguments: ["--listen", listen, "--store", storeArgument, "--certs", certs],
            logPath: directory + "/server.log")
        _ = try server.start()
        defer { server.stop() }
        let address = try SocketAddress(parsing: listen)
        // Over PostgreSQL a second server stays up: it is where the watchers watch and the truth is read.
        var survivor: ServerRunner?
        var survivorListen = listen
        if postgres != nil {
            survivorListen = "127.0.0.1:\(try freeLoopbackPort())"
            let second = ServerRunner(
                binary: serverBinary,
                arguments: ["--listen", survivorListen, "--store", storeArgument, "--certs", certs],
                logPath: directory + "/server-2.log")
            _ = try second.start()
            survivor = second
        }
        defer { survivor?.stop() }
        let survivorAddress = try SocketAddress(parsing: survivorListen)
        var random = SplitMix64(seed: seed)
        say("crash: seed \(seed), \(cycles) cycles, \(writers) writers, \(watchers) watchers, server \(listen)"
            + (survivor == nil ? "" : ", surviving server \(survivorListen)"))

        // The seed memo: once a watcher prints it, it is subscribed, and every later change must reach it.
        let setup = try ProbeConnection(address: survivorAddress, identity: identity)
        try setup.hello()
        guard case .memo(let seedMemo) = try setup.request(.create(id: UUID(), insertMicros: nil, content: "seed"))
        else { throw TortureError("the seed memo was not created") }
        var watches: [WatchProcess] = []
        defer { for watch in watches { watch.stop() } }
        for number in 1...max(1, watchers) where watchers > 0 {
            let watch = try WatchProcess(
                number: number, binary: clientBinary, server: survivorListen, certs: certs, directory: directory)
            watches.append(watch)
            guard watch.wait(seconds: 30, until: { !$0.isEmpty }) else {
                throw TortureError("watcher \(number) printed nothing in 30 s")
            }
        }

        let shared = CrashShared(servers: survivor == nil ? 1 : 2)
        let team = (1...writers).map { number in
            // Over PostgreSQL, every other writer writes through the server that is never killed.
            let server = survivor != nil && number % 2 == 0 ? 1 : 0
            return CrashWriter(number: number, address: server == 1 ? survivorAddress : address, identity: identity,
                               pipeline: pipeline, seed: random.next(), shared: shared, server: server)
        }
        let finished = runEachOnItsThread(team.map { writer in { writer.run() } })

        var regressions: [String] = []
        for cycle in 1...cycles {
            pause(Double.random(in: minUptime...maxUptime, using: &random))
            server.kill9()
            let floor = shared.maxAcknowledged(server: 0)
            _ = try server.start()
            let check = try ProbeConnection(address: address, identity: identity)
            if case .welcome(_, let revision, _, _, _) = try check.hello(), revision < floor {
                regressions.append("cycle \(cycle): restarted at revision \(revision), \(floor) was acknowledged")
            }
            say("crash: cycle \(cycle): killed and restarted; \(floor) acknowledged before the kill")
        }
        // A last stretch of writing against a server that stays up, then every writer finishes its writes.
        pause(minUptime)
        shared.stop()
        guard finished.wait(timeout: .now() + 120) == .success else {
            throw TortureError("the writers did not finish within 120 s")
        }

        // The truth: the final list and the whole history, from the server that survived.
        let reader = try ProbeConnection(address: survivorAddress, identity: identity, timeout: .seconds(30))
        try reader.hello()
        if survivor != nil {
            // A write through the survivor is answered once it has applied its own revision, so every write
            // acknowledged before (through either server) is then in its list and history too.
            guard case .memo = try reader.request(.create(id: UUID(), insertMicros: nil, content: "fence")) else {
                throw TortureError("the fence memo was not created")
            }
        }
        let (head, finalMemos) = try listAll(reader)
        let history = try changes(reader, upTo: head)

        var check = CrashCheck(history: history, finalMemos: finalMemos, head: head, seed: seedMemo)
        check.checkStore()
        for writer in team { check.checkWriter(writer) }
        let expectedLines = 1 + Int(head - seedMemo.revision)
        for watch in watches {
            // Wait for the stream to reach the head; a watcher that never gets there shows as missed events.
            _ = watch.wait(seconds: 30) { lines in
                lines.count >= expectedLines && WatchLine(lines.last!)?.revision ?? 0 >= head
            }
            pause(0.2)  // anything after the head would be a repeat
            check.checkWatcher(number: watch.number, lines: watch.output)
        }

        let violations = team.flatMap(\.violations) + regressions
        let unknown = team.reduce(0) { $0 + $1.unknown }
        let backwards = team.flatMap(\.violations).filter { $0.contains("went backwards") }.count
        let passed = check.passed && violations.isEmpty
        for problem in check.problems + violations.prefix(20) { say("crash: problem: \(problem)") }
        say("crash summary: \(passed ? "PASS" : "FAIL"); cycles \(cycles); writes acknowledged "
            + "\(check.acknowledged) (in flight at a kill \(unknown)), lost \(check.lost), duplicated "
            + "\(check.duplicated), deleted-came-back \(check.cameBack), history-inconsistent \(check.inconsistent), "
            + "revision-regressions \(regressions.count + backwards), other-violations "
            + "\(violations.count - regressions.count - backwards); watchers \(watches.count), "
            + "events checked \(check.eventsChecked), missed \(check.missed), repeated \(check.repeated), "
            + "mismatched \(check.mismatched); head \(head), memos \(finalMemos.count)")
        return passed
    }

    private func changes(_ connection: ProbeConnection, upTo head: UInt64) throws -> [Change] {
        let id = try connection.send(.subscribe(after: 0))
        var changes: [Change] = []
        while changes.last?.revision ?? 0 < head {
            let (_, message) = try connection.receive { $0.requestID == id }
            switch message {
            case .subscribed: continue
            case .change(let change): changes.append(change)
            default: throw TortureError("the history subscription answered \(message)")
            }
        }
        return changes
    }
}

/// Every memo, with the revision of the list (all its chunks).
/// Starts each of `work` on a thread of its own (the crash and gray writers block on their sockets). - Returns: the
/// group to wait on for all of them to end.
func runEachOnItsThread(_ work: [@Sendable () -> Void]) -> DispatchGroup {
    let finished = DispatchGroup()
    for body in work {
        finished.enter()
        Thread.detachNewThread {
            body()
            finished.leave()
        }
    }
    return finished
}

func listAll(_ connection: ProbeConnection) throws -> (UInt64, [Memo]) {
    let id = try connection.send(.list)
    var memos: [Memo] = []
    while true {
        let (_, message) = try connection.receive { $0.requestID == id }
        guard case .memos(let revision, let last, let chunk) = message else {
            throw TortureError("list answered \(message)")
        }
        memos += chunk
        if last { return (revision, memos) }
    }
}
