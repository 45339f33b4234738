import Foundation
import MemoCLI
import MemoModel
import MemoNet
import MemoPKI
import MemoProbe
import MemoTLS
import MemoWire

/// `memo-torture gray`: gray failures (hangs, partitions, a full disk, a server behind the history) during a
/// write storm with watchers on every server, each party in a network namespace of its own; after each fault
/// the same invariants are checked (GrayCheck) and the time until the watchers caught up is measured.
struct GrayTorture {
    enum Fault: String, CaseIterable {
        case stopServer = "stop-server"
        case stopPostgres = "stop-postgres"
        case stopFeedBackend = "stop-feed-backend"
        case stopWriterBackend = "stop-writer-backend"
        case partitionDatabase = "partition-server-database"
        case partitionClients = "partition-server-clients"
        case diskFull = "disk-full"
        case belowHistory = "below-history"

        var servers: Int { self == .diskFull ? 1 : 2 }
        /// Whether every server stays running and reachable by its clients through the fault: then every write
        /// must be answered (an error is an answer) within the writers' --timeout.
        var serversAnswer: Bool {
            switch self {
            case .stopPostgres, .stopFeedBackend, .stopWriterBackend, .partitionDatabase, .diskFull: return true
            case .stopServer, .partitionClients, .belowHistory: return false
            }
        }
        /// The server that stays healthy through the fault, if any.
        var healthy: Int? {
            switch self {
            case .stopPostgres, .diskFull: return nil
            case .belowHistory: return 0
            default: return 1
            }
        }
    }

    var faults = Fault.allCases
    var runs = 1
    var writers = 4
    var watchers = 2
    var faultSeconds = 20.0
    var warmup = 2.0
    var keepalive: Double?
    /// 3 x the client's default keepalive (3 s).
    var bound = 9.0
    var timeout = 10.0
    var history = 50
    var diskMiB = 16
    var rate = 100
    var serverBinary = siblingExecutable("memo-server")
    var clientBinary = siblingExecutable("memo-client")
    var keep = false
    var listOnly = false
    var checkTheChecks = false
    /// Planted faults the checks did not find (with --check-the-checks).
    private let missedBox = LockedBox(0)
    private var checksMissed: Int {
        get { missedBox.value }
        nonmutating set { missedBox.value = newValue }
    }

    init(_ arguments: inout Arguments) throws(UsageError) {
        if arguments.flag("--short") {
            writers = 3
            watchers = 1
            faultSeconds = 10
            warmup = 1
        }
        listOnly = arguments.flag("--list")
        if let names = try arguments.option("--faults") {
            faults = []
            for name in names.split(separator: ",").map(String.init) {
                guard let fault = Fault(rawValue: name) else { throw UsageError("unknown fault '\(name)'") }
                faults.append(fault)
            }
        }
        runs = try arguments.integer("--runs", in: 1...1000) ?? runs
        writers = try arguments.integer("--writers", in: 1...40) ?? writers
        watchers = try arguments.integer("--watchers", in: 1...10) ?? watchers
        faultSeconds = try arguments.seconds("--fault-seconds") ?? faultSeconds
        warmup = try arguments.seconds("--warmup") ?? warmup
        keepalive = try arguments.seconds("--keepalive")
        bound = try arguments.seconds("--bound") ?? keepalive.map { 3 * $0 } ?? bound
        timeout = try arguments.seconds("--timeout") ?? timeout
        history = try arguments.integer("--history", in: 1...1_000_000) ?? history
        diskMiB = try arguments.integer("--disk-size", in: 1...1024) ?? diskMiB
        rate = try arguments.integer("--rate", in: 1...100_000) ?? rate
        serverBinary = try arguments.option("--server-binary") ?? serverBinary
        clientBinary = try arguments.option("--client-binary") ?? clientBinary
        keep = arguments.flag("--keep")
        checkTheChecks = arguments.flag("--check-the-checks")
        try arguments.finish()
        guard timeout > 0, faultSeconds > 0 else { throw UsageError("--timeout and --fault-seconds must be above 0") }
    }

    /// What one fault's runs add up to.
    struct Tally {
        var runs = 0
        var passed = 0
        var acknowledged = 0
        var failed = 0
        var unknown = 0
        var lost = 0
        var wronglyReported = 0
        var watcherGaps = 0
        var resyncs = 0
        /// Seconds until the watchers caught up; nil for a run where they never did.
        var recoveries: [Double?] = []
        var unanswered = 0
    }

    /// - Returns: whether every check passed.
    func run() throws -> Bool {
        if listOnly {
            for fault in Fault.allCases { say(fault.rawValue) }
            return true
        }
        guard getuid() == 0 else {
            throw TortureError("gray needs root: it makes network namespaces (ip netns) and mounts a tmpfs")
        }
        let directory = try makeTemporaryDirectory("memo-gray")
        let certs = directory + "/certs"
        _ = try CertificateAuthority.initialize(
            directory: certs, hosts: [GrayNetwork.serverClientAddress(0), GrayNetwork.serverClientAddress(1)],
            caValidity: .days(1), serverValidity: .days(1), clientValidity: .days(1))
        let disk = directory + "/disk"
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)

        let network = try GrayNetwork()
        let postgresDirectory = directory + "/pg"
        // If the harness dies (even by SIGKILL), a watchdog stops PostgreSQL, unmounts the disk and removes the
        // folder.
        cleanupWhenGone("runuser -u postgres -- /usr/lib/postgresql/*/bin/pg_ctl -D "
            + "\(postgresDirectory)/data -m immediate stop; umount -l \(disk)" + (keep ? "" : "; rm -rf \(directory)"))
        var postgres: GrayPostgres?
        let home = try currentNetworkNamespace()
        defer {
            // Back home first: the teardown kills whatever is left in the namespaces.
            try? enterNetworkNamespace(descriptor: home, name: "the harness's own")
            close(home)
            postgres?.stop()
            network.teardown()
            _ = try? runProgram(["/bin/umount", "-l", disk])
            if keep {
                say("kept \(directory)")
            } else {
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
        let postgresNamespace = try network.addParty("pg", links: [(.db, GrayNetwork.postgresAddress)])
        let serverNamespaces = try (0..<2).map { server in
            try network.addParty("s\(server)", links: [
                (.db, GrayNetwork.serverDatabaseAddress(server)), (.clients, GrayNetwork.serverClientAddress(server)),
            ])
        }
        let watcherNamespaces = try (0..<(2 * watchers)).map { try network.addClient("v\($0)") }
        let writerNamespaces = try (0..<writers).map { try network.addClient("w\($0)") }
        let harnessNamespace = try network.addClient("h")
        say("gray: network \(network.prefix)-*: PostgreSQL, 2 servers, \(2 * watchers) watchers, \(writers) writers, "
            + "the harness, each in a namespace of its own")
        postgres = try GrayPostgres(directory: postgresDirectory, namespace: postgresNamespace)
        say("gray: PostgreSQL on \(GrayNetwork.postgresAddress):5432, data in \(postgresDirectory)/data")
        // From here on the harness's own connections (markers, the final reads) leave from its namespace.
        try enterNetworkNamespace(harnessNamespace)

        let environment = GrayEnvironment(
            directory: directory, certs: certs, disk: disk, network: network, postgres: postgres!,
            serverNamespaces: serverNamespaces, watcherNamespaces: watcherNamespaces,
            writerNamespaces: writerNamespaces)
        var tallies: [(Fault, Tally)] = []
        var allPassed = true
        for fault in faults {
            var tally = Tally()
            for number in 1...runs {
                let (passed, check, recovery, unanswered) = try runOnce(fault, number: number, in: environment)
                tally.unanswered += unanswered
                tally.runs += 1
                tally.passed += passed ? 1 : 0
                tally.acknowledged += check.acknowledged
                tally.failed += check.failed
                tally.unknown += check.unknown
                tally.lost += check.lost
                tally.wronglyReported += check.wronglyReported
                tally.watcherGaps += check.watcherGaps + check.watcherRepeats + check.watcherMismatches
                tally.resyncs += check.resyncs
                tally.recoveries.append(recovery)
                allPassed = allPassed && passed
            }
            tallies.append((fault, tally))
        }
        for (fault, tally) in tallies {
            let times = tally.recoveries.compactMap { $0 }.sorted()
            let never = tally.recoveries.count - times.count
            let median = times.isEmpty ? "-" : format(times[times.count / 2])
            let maximum = never > 0 ? "never (\(never))" : times.last.map(format) ?? "-"
            say("gray fault \(fault.rawValue): \(tally.passed)/\(tally.runs) runs passed; acknowledged "
                + "\(tally.acknowledged), failed \(tally.failed), unknown \(tally.unknown), lost \(tally.lost), "
                + "wrongly reported \(tally.wronglyReported), unanswered \(tally.unanswered), watcher gaps "
                + "\(tally.watcherGaps), resyncs "
                + "\(tally.resyncs); recovered max \(maximum) median \(median) (bound \(format(bound)))")
        }
        let total = tallies.reduce(into: Tally()) { sum, item in
            sum.runs += item.1.runs
            sum.passed += item.1.passed
            sum.acknowledged += item.1.acknowledged
            sum.lost += item.1.lost
            sum.wronglyReported += item.1.wronglyReported
            sum.watcherGaps += item.1.watcherGaps
        }
        say("gray summary: \(allPassed ? "PASS" : "FAIL"); \(total.passed)/\(total.runs) runs passed; acknowledged "
            + "\(total.acknowledged), lost \(total.lost), wrongly reported \(total.wronglyReported), watcher gaps "
            + "\(total.watcherGaps)")
        if checkTheChecks {
            // The run's own result is the server's; this mode asks whether the checks see planted faults.
            say("gray check of the checks: \(checksMissed == 0 ? "PASS" : "FAIL")")
            return checksMissed == 0
        }
        return allPassed
    }

    /// One fault, once: its own database and servers, watchers and writers; the fault, the heal, the checks.
    private func runOnce(_ fault: Fault, number: Int, in environment: GrayEnvironment) throws
        -> (Bool, GrayCheck, Double?, Int)
    {
        let tag = "\(fault.rawValue)-\(number)"
        let identity = ProbeConnection.Identity(
            ca: environment.certs + "/ca.crt", certificate: environment.certs + "/client.crt",
            key: environment.certs + "/client.key")
        let store: String
        if fault == .diskFull {
            try runProgram(["/bin/mount", "-t", "tmpfs", "-o", "size=\(diskMiB)m", "tmpfs", environment.disk])
            store = "sqlite:\(environment.disk)/memos.sqlite"
        } else {
            store = try environment.postgres.makeDatabase()
        }
        defer {
            if fault == .diskFull { _ = try? runProgram(["/bin/umount", "-l", environment.disk]) }
        }
        let listens = (0..<fault.servers).map { "\(GrayNetwork.serverClientAddress($0)):7420" }
        let servers = (0..<fault.servers).map { server in
            ServerRunner(
                binary: serverBinary,
                arguments: ["--listen", listens[server], "--store", store, "--certs", environment.certs]
                    + (fault == .belowHistory ? ["--history", String(history)] : []),
                logPath: environment.directory + "/\(tag)-server-\(server).log",
                launcher: ["/usr/sbin/ip", "netns", "exec", environment.serverNamespaces[server]])
        }
        defer { for server in servers { server.stop() } }
        for server in servers { _ = try server.start() }
        let addresses = try listens.map { try SocketAddress(parsing: $0) }

        // The seed memo: once a watcher has printed it, it is subscribed and must print every later change.
        let seed = try write(.create(id: UUID(), insertMicros: nil, content: "seed \(tag)"), through: addresses,
                             identity: identity, within: 30)
        var watches: [WatchProcess] = []
        defer { for watch in watches { watch.stop() } }
        try FileManager.default.createDirectory(atPath: environment.directory + "/\(tag)",
                                                withIntermediateDirectories: true)
        for server in 0..<fault.servers {
            let order = [listens[server]] + listens.filter { $0 != listens[server] }
            for index in 0..<watchers {
                let number = server * watchers + index
                let watch = try WatchProcess(
                    number: number + 1, binary: clientBinary, server: order.joined(separator: ","),
                    certs: environment.certs, directory: environment.directory + "/\(tag)",
                    launcher: ["/usr/sbin/ip", "netns", "exec", environment.watcherNamespaces[number]],
                    extra: keepalive.map { ["--keepalive", String($0)] } ?? [])
                watches.append(watch)
            }
        }
        for watch in watches where !watch.wait(seconds: 30, until: { Self.reached($0, seed) }) {
            throw TortureError("\(tag): watcher \(watch.number) did not print the seed memo in 30 s; its log: "
                + ((try? String(contentsOfFile: watch.stderrPath, encoding: .utf8)) ?? ""))
        }

        let shared = CrashShared()
        var random = SplitMix64(seed: UInt64.random(in: 1...UInt64(UInt32.max)))
        let team = (0..<writers).map { index in
            let first = index % fault.servers
            let order = [addresses[first]] + addresses.indices.filter { $0 != first }.map { addresses[$0] }
            return GrayWriter(number: index + 1, addresses: order, namespace: environment.writerNamespaces[index],
                              identity: identity, timeout: .milliseconds(Int(timeout * 1000)), rate: rate,
                              seed: random.next(), shared: shared)
        }
        let finished = runEachOnItsThread(team.map { writer in { writer.run() } })
        var stopped = false
        defer {
            if !stopped {
                shared.stop()
                _ = finished.wait(timeout: .now() + 60)
            }
        }
        pause(warmup)

        // The fault.
        let injection = try GrayInjection(fault, servers: servers, environment: environment)
        defer { injection.heal() }
        let start = ContinuousClock.now
        try injection.inject()
        var recovery: Double?
        if let healthy = fault.healthy {
            pause(0.5)
            if let marker = try? write(.create(id: UUID(), insertMicros: nil, content: "marker \(tag)"),
                                       through: [addresses[healthy]], identity: identity, within: 5)
            {
                let deadline = start + .milliseconds(Int(faultSeconds * 1000))
                if waitAll(watches, reach: marker, until: deadline) {
                    recovery = seconds(ContinuousClock.now - start)
                }
            }
        }
        let healAt = start + .milliseconds(Int(faultSeconds * 1000))
        if ContinuousClock.now < healAt { pause(seconds(healAt - ContinuousClock.now)) }
        injection.heal()
        let healed = ContinuousClock.now
        let afterHeal = try write(.create(id: UUID(), insertMicros: nil, content: "healed \(tag)"), through: addresses,
                                  identity: identity, within: 60)
        let caughtUp = waitAll(watches, reach: afterHeal, until: .now + .seconds(30))
        if fault.healthy == nil, caughtUp { recovery = seconds(ContinuousClock.now - healed) }
        pause(1.5)
        shared.stop()
        stopped = true
        guard finished.wait(timeout: .now() + .milliseconds(Int((timeout + 60) * 1000))) == .success else {
            throw TortureError("\(tag): the writers did not finish")
        }

        // The truth, from a server after a fence write through it.
        let (head, finalMemos, changes, oldest) = try truth(addresses, identity: identity)
        // One deadline for all: a watcher that is stuck costs the run 30 s, not 30 s each.
        let reachHead = Date().addingTimeInterval(30)
        for watch in watches {
            _ = watch.wait(seconds: max(0, reachHead.timeIntervalSinceNow)) { Self.lastRevision($0) >= head }
        }
        pause(0.2)  // anything after the head would be a repeat
        var check = GrayCheck(history: changes, oldest: oldest, finalMemos: finalMemos, head: head)
        for writer in team { check.checkWriter(writer.record) }
        for watch in watches {
            check.checkWatcher(number: watch.number, lines: watch.output, seedRevision: seed.revision)
            if !watch.isRunning {
                let log = (try? String(contentsOfFile: watch.stderrPath, encoding: .utf8)) ?? ""
                check.watcherExited(number: watch.number, lastWords: String(log.split(separator: "\n").last ?? ""))
            }
        }
        let late = recovery.map { $0 > bound } ?? true
        let unanswered = fault.serversAnswer ? check.timedOut : 0
        if unanswered > 0 {
            say("gray: \(tag): problem: \(unanswered) writes got no answer within \(format(timeout)) although their "
                + "server was running and reachable")
        }
        let passed = check.passed && !late && unanswered == 0
        if fault == .diskFull {
            // Issue 24 asks that deletes go through on a full disk; reported, not checked.
            let during = { (write: GrayWrite) in write.kind == .deleted && write.at > start && write.at < healAt }
            let records = team.map(\.record)
            say("gray: \(tag): deletes while the disk was full: "
                + "\(records.reduce(0) { $0 + $1.acknowledged.filter(during).count }) acknowledged, "
                + "\(records.reduce(0) { $0 + $1.failed.filter(during).count }) refused")
        }
        for problem in check.problems.prefix(10) { say("gray: \(tag): problem: \(problem)") }
        say("gray: \(tag): \(passed ? "PASS" : "FAIL"); acknowledged \(check.acknowledged), failed \(check.failed), "
            + "unknown \(check.unknown) (timed out \(check.timedOut), done \(check.unknownApplied)), slowest answer "
            + "\(format(Double(check.slowestMilliseconds) / 1000)), lost \(check.lost), wrongly reported "
            + "\(check.wronglyReported), watcher gaps \(check.watcherGaps), repeats \(check.watcherRepeats), "
            + "mismatches \(check.watcherMismatches), resyncs \(check.resyncs), other \(check.otherViolations); "
            + "recovered \(recovery.map(format) ?? "never") (bound \(format(bound))); head \(head)")
        if checkTheChecks {
            let missed = GrayCheck.plantedFaultsMissed(
                history: changes, oldest: oldest, finalMemos: finalMemos, head: head, records: team.map(\.record),
                watchers: watches.map { ($0.number, $0.output) }, seedRevision: seed.revision)
            say("gray: \(tag): check of the checks: "
                + (missed.isEmpty ? "PASS; every planted fault was found" : "FAIL; not found: \(missed)"))
            checksMissed += missed.count
        }
        return (passed, check, recovery, unanswered)
    }

    /// Writes through the first server that answers, retrying for up to `within` seconds. - Returns: the memo.
    private func write(_ message: Message, through addresses: [SocketAddress], identity: ProbeConnection.Identity,
                       within: Double) throws -> Memo {
        let deadline = ContinuousClock.now + .milliseconds(Int(within * 1000))
        var last = ""
        repeat {
            for address in addresses {
                do {
                    let connection = try ProbeConnection(address: address, identity: identity, timeout: .seconds(5))
                    try connection.hello()
                    let answer = try connection.request(message)
                    if case .memo(let memo) = answer { return memo }
                    last = "\(answer)"
                } catch {
                    last = "\(error)"
                }
            }
            pause(0.2)
        } while ContinuousClock.now < deadline
        throw TortureError("no server took a write within \(format(within)) s: \(last)")
    }

    /// The final list and the history still kept, read from the first server that takes a fence write.
    private func truth(_ addresses: [SocketAddress], identity: ProbeConnection.Identity) throws
        -> (UInt64, [Memo], [Change], UInt64)
    {
        let deadline = ContinuousClock.now + .seconds(120)
        var last = ""
        var found: (UInt64, [Memo], SocketAddress)?
        var changes: [Change] = []
        var oldest: UInt64 = 1
        repeat {
            for address in addresses {
                do {
                    let reader = try ProbeConnection(address: address, identity: identity, timeout: .seconds(30))
                    try reader.hello()
                    if found == nil {
                        guard case .memo = try reader.request(.create(id: UUID(), insertMicros: nil, content: "fence"))
                        else { continue }
                        let (head, memos) = try listAll(reader)
                        found = (head, memos, address)
                    }
                    guard let (head, memos, source) = found, source == address else { continue }
                    // A long history can outrun this reader (a slow consumer is let go): it goes on where it was.
                    try readChanges(reader, upTo: head, into: &changes, oldest: &oldest)
                    return (head, memos, changes, oldest)
                } catch {
                    last = "\(error)"
                }
            }
            pause(0.5)
        } while ContinuousClock.now < deadline
        throw TortureError("no server gave the final list and history within 120 s: \(last)")
    }

    /// The changes the server still keeps, after those already in `changes`, up to `head`; `oldest` becomes the
    /// first revision kept when older ones are pruned (a small --history).
    private func readChanges(_ connection: ProbeConnection, upTo head: UInt64, into changes: inout [Change],
                             oldest: inout UInt64) throws {
        while (changes.last?.revision ?? oldest - 1) < head {
            let id = try connection.send(.subscribe(after: changes.last?.revision ?? oldest - 1))
            var gone = false
            while !gone && (changes.last?.revision ?? oldest - 1) < head {
                let (_, message) = try connection.receive { $0.requestID == id }
                switch message {
                case .subscribed: continue
                case .change(let change): changes.append(change)
                case .historyGone(_, let oldestAvailable) where changes.isEmpty:
                    oldest = max(oldest + 1, oldestAvailable + 1)
                    gone = true
                case .goingAway: throw ProbeConnection.Failure.closed
                default: throw TortureError("the history subscription answered \(message)")
                }
            }
        }
    }

    /// Whether a watcher's lines have reached `memo`'s revision.
    private static func reached(_ lines: [String], _ memo: Memo) -> Bool {
        lastRevision(lines) >= memo.revision
    }

    /// The revision a watcher's output has reached: its last change or resync (list lines carry the memo's
    /// own revision, which says nothing about where the stream is, except at the very start).
    static func lastRevision(_ lines: [String]) -> UInt64 {
        for line in lines.reversed() {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let revision = (object["revision"] as? NSNumber)?.uint64Value
            else { continue }
            if object["event"] as? String == "resync" || (object["type"] as? String).map({ $0 != "existing" }) == true
                || lines.count == 1
            {
                return revision
            }
        }
        return 0
    }

    private func waitAll(_ watches: [WatchProcess], reach memo: Memo, until deadline: ContinuousClock.Instant)
        -> Bool
    {
        for watch in watches {
            let left = seconds(deadline - ContinuousClock.now)
            guard left > 0, watch.wait(seconds: left, until: { Self.reached($0, memo) }) else { return false }
        }
        return true
    }
}

/// What every run of `gray` shares: folders, the network, PostgreSQL, each party's namespace.
struct GrayEnvironment {
    let directory: String
    let certs: String
    let disk: String
    let network: GrayNetwork
    let postgres: GrayPostgres
    let serverNamespaces: [String]
    let watcherNamespaces: [String]
    let writerNamespaces: [String]
}

/// One fault, put in place and healed (healing twice does nothing more).
final class GrayInjection {
    private let fault: GrayTorture.Fault
    private let servers: [ServerRunner]
    private let environment: GrayEnvironment
    private var stoppedPids: [Int32] = []
    private var linkDown: (String, GrayNetwork.Bridge)?
    private var filler: String?

    init(_ fault: GrayTorture.Fault, servers: [ServerRunner], environment: GrayEnvironment) throws {
        self.fault = fault
        self.servers = servers
        self.environment = environment
    }

    func inject() throws {
        switch fault {
        case .stopServer:
            try stop([servers[0].pid].compactMap { $0 })
        case .belowHistory:
            try stop([servers[1].pid].compactMap { $0 })
        case .stopPostgres:
            try stop(environment.postgres.processes())
        case .stopFeedBackend, .stopWriterBackend:
            let role = fault == .stopFeedBackend ? "feed" : "writer"
            guard let pid = try environment.postgres.backend(
                role: role, clientAddress: GrayNetwork.serverDatabaseAddress(0))
            else { throw TortureError("server A has no \(role) backend in pg_stat_activity") }
            // Stopped while it waits idle for its client (IdleStop): a hung connection of A's, not a hung
            // PostgreSQL, which B could not serve through either.
            let postgres = environment.postgres
            guard IdleStop.stop(pid, until: .now + .seconds(10), isIdle: { postgres.isIdle($0) }) else {
                throw TortureError("A's \(role) backend (pid \(pid)) was never found idle in 10 s")
            }
            stoppedPids.append(pid)
        case .partitionDatabase:
            try environment.network.setLink("s0", .db, up: false)
            linkDown = ("s0", .db)
        case .partitionClients:
            try environment.network.setLink("s0", .clients, up: false)
            linkDown = ("s0", .clients)
        case .diskFull:
            let path = environment.disk + "/filler"
            filler = path
            try fill(path)
        }
    }

    func heal() {
        for pid in stoppedPids { kill(pid, SIGCONT) }
        stoppedPids = []
        if let (party, bridge) = linkDown {
            try? environment.network.setLink(party, bridge, up: true)
            linkDown = nil
        }
        if let filler {
            unlink(filler)
            self.filler = nil
        }
    }

    private func stop(_ pids: [Int32]) throws {
        guard !pids.isEmpty else { throw TortureError("no process to stop for \(fault.rawValue)") }
        for pid in pids where kill(pid, SIGSTOP) == 0 { stoppedPids.append(pid) }
    }

    /// Writes zeros until the file system says it is full.
    private func fill(_ path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw TortureError("cannot create \(path)") }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 65536)
        var size = chunk.count
        while size > 0 {
            let written = chunk.withUnsafeBytes { write(descriptor, $0.baseAddress, size) }
            if written < 0 {
                if errno == EINTR { continue }
                if errno != ENOSPC { throw TortureError("filling \(path): \(String(cString: strerror(errno)))") }
                size /= 2  // fill the last partial block too
            }
        }
    }
}

private func seconds(_ duration: Duration) -> Double {
    Double(milliseconds(duration)) / 1000
}

private func format(_ seconds: Double) -> String {
    String(format: "%.1f s", seconds)
}
