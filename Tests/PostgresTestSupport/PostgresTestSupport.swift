import Foundation
import MemoTestSupport
import Synchronization
import Testing

/// A throwaway PostgreSQL for the tests of one process: `initdb` into a temporary folder, `pg_ctl start` on a free
/// loopback port, stopped when the process exits. Each test takes a database of its own from it.
///
/// Tests skip when PostgreSQL is not installed, unless MEMO_REQUIRE_POSTGRES=1 (set by `.ci/run`), where a
/// missing PostgreSQL fails them instead: CI never passes by skipping.
package final class TestPostgres: Sendable {
    package let directory: String
    package let port: Int
    package let binaries: String
    private let databases = Atomic<Int>(0)

    /// The one cluster of this test process, started on first use.
    package static func shared() throws -> TestPostgres {
        try started.withLock { state throws -> TestPostgres in
            switch state {
            case .some(.success(let cluster)): return cluster
            case .some(.failure(let error)): throw error
            case .none:
                do {
                    guard let binaries = findBinaries() else {
                        throw TestPostgresError(message: "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin)")
                    }
                    let cluster = try TestPostgres(binaries: binaries)
                    state = .success(cluster)
                    return cluster
                } catch {
                    state = .failure(error as? TestPostgresError ?? TestPostgresError(message: "\(error)"))
                    throw error
                }
            }
        }
    }

    private nonisolated(unsafe) static var stopAtExit: String?
    private static let started = Mutex<Result<TestPostgres, TestPostgresError>?>(nil)

    /// The newest installed server's bin folder.
    package static func findBinaries() -> String? {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        let usable = versions.compactMap(Int.init).sorted().reversed().map { "\(root)/\($0)/bin" }
        return usable.first { FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl") }
    }

    /// The command that stops this cluster and removes its folder.
    private let stopCommand: String

    /// A cluster of its own, for a test that freezes or stops PostgreSQL itself and so must not share it with
    /// the tests running beside it; `stop()` it when done (it is stopped when the process exits as well).
    package static func dedicated() throws -> TestPostgres {
        guard let binaries = findBinaries() else {
            throw TestPostgresError(message: "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin)")
        }
        return try TestPostgres(binaries: binaries, shared: false)
    }

    private init(binaries: String, shared: Bool = true) throws {
        self.binaries = binaries
        let template = NSTemporaryDirectory() + "memo-pg-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw TestPostgresError(message: "mkdtemp failed") }
        directory = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        stopCommand = (getuid() == 0 ? "runuser -u postgres -- " : "") + binaries + "/pg_ctl -D "
            + directory + "/data -m immediate stop >/dev/null 2>&1; rm -rf " + directory
        // initdb refuses root: the cluster then belongs to the postgres user, who must be able to enter the folder.
        chmod(directory, 0o755)
        if getuid() == 0 { try Self.run("/bin/chown", ["postgres", directory]) }
        try Self.run(binaries + "/initdb", ["-D", directory + "/data", "-U", "memo", "--auth=trust", "-E", "UTF8",
                                            "--locale=C.UTF-8", "--no-sync"], asPostgres: true)
        var lastError: Error?
        for _ in 0..<5 {
            let candidate = try freeLoopbackPort()
            do {
                try Self.run(binaries + "/pg_ctl", ["-D", directory + "/data", "-l", directory + "/log", "-w",
                    "-o", "-p \(candidate) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off "
                        + "-c max_connections=200", "start"], asPostgres: true)
                port = candidate
                if shared {
                    Self.stopAtExit = stopCommand
                    atexit {
                        if let command = TestPostgres.stopAtExit { TestPostgres.shell(command) }
                    }
                }
                watchParent()
                return
            } catch {
                lastError = error
            }
        }
        throw lastError ?? TestPostgresError(message: "no free port")
    }

    /// Stops a `dedicated()` cluster and removes its folder.
    package func stop() {
        Self.shell(stopCommand)
    }

    /// The postmaster's process id and those of its children (the backends and PostgreSQL's own processes).
    package func processIDs() throws -> [pid_t] {
        let file = try String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8)
        guard let line = file.split(separator: "\n").first, let postmaster = pid_t(line) else {
            throw TestPostgresError(message: "no postmaster pid in \(directory)/data/postmaster.pid")
        }
        let children = try Self.run("/usr/bin/pgrep", ["-P", String(postmaster)])
        return [postmaster] + children.split(separator: "\n").compactMap { pid_t($0) }
    }

    /// The process ids of the backends serving the memo servers' feed connections to `database`, oldest first:
    /// a server's feed connects when its store opens, so servers started one after another come in that order.
    package func feedBackends(database: String) throws -> [pid_t] {
        try sql("SELECT pid FROM pg_stat_activity WHERE application_name = 'memo-feed' AND datname = "
                    + "'\(database)' ORDER BY backend_start", database: "postgres")
            .split(separator: "\n").compactMap { pid_t($0) }
    }

    /// A URI for a new, empty database.
    package func makeDatabase() throws -> String {
        uri(try makeDatabaseName())
    }

    /// The name of a new, empty database.
    package func makeDatabaseName() throws -> String {
        let name = "memo_test_\(databases.add(1, ordering: .relaxed).newValue)"
        try sql("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    package func uri(_ database: String) -> String { "postgresql://memo@127.0.0.1:\(port)/\(database)" }

    /// Runs SQL with psql and returns its unaligned, tuples-only output.
    @discardableResult
    package func sql(_ statement: String, database: String) throws -> String {
        try Self.run(binaries + "/psql", ["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p",
                                          String(port), "-U", "memo", "-d", database, "-c", statement])
    }

    /// Restarts PostgreSQL as a crash would: every connection is cut and no checkpoint is written.
    package func restartImmediately() throws {
        try Self.run(binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "immediate", "-w", "restart"],
                     asPostgres: true)
    }

    /// Restarts PostgreSQL as an administrator would (`pg_ctl restart -m fast`): every backend is terminated, its
    /// client told so, and a checkpoint written before the start.
    package func restartFast() throws {
        try Self.run(binaries + "/pg_ctl", ["-D", directory + "/data", "-m", "fast", "-w", "restart"],
                     asPostgres: true)
    }

    /// Stops PostgreSQL when this test process goes away, even by a signal that skips `atexit`.
    private func watchParent() {
        let command = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; " + stopCommand
        _ = try? Self.run("/bin/sh", ["-c", "(\(command)) >/dev/null 2>&1 &"])
    }

    private static func shell(_ command: String) {
        _ = try? run("/bin/sh", ["-c", command])
    }

    /// Runs a program to completion. - Throws: when it exits non-zero, with its output.
    ///
    /// Spawned by hand rather than with `Process`, and with only stdin, stdout and stderr open, since the
    /// postmaster that `pg_ctl` leaves running would otherwise keep the test process's descriptors (Process's
    /// exit pipe among them, so that waiting for pg_ctl never ended).
    @discardableResult
    package static func run(_ path: String, _ arguments: [String], asPostgres: Bool = false) throws -> String {
        let command = asPostgres && getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments
            : [path] + arguments
        // bash closes every descriptor above stderr, then becomes the program.
        let closing = #"for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$@""#
        let argv = ["/bin/bash", "-c", closing, "bash"] + command
        let outputPath = NSTemporaryDirectory() + "memo-pg-run-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var cArguments = argv.map { strdup($0) } + [nil]
        defer { for argument in cArguments { free(argument) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, &cArguments, environ)
        guard spawned == 0 else { throw TestPostgresError(message: "cannot run \(path): error \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let text = ((try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
        // Exited normally with status 0: the low seven bits hold the signal, the next eight the exit status.
        guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
            throw TestPostgresError(message: "\(path) \(arguments.joined(separator: " ")): \(text)")
        }
        return text
    }
}

package struct TestPostgresError: Error, CustomStringConvertible {
    package let message: String
    package var description: String { message }
}

/// Whether the PostgreSQL tests run: when PostgreSQL is installed, and always under MEMO_REQUIRE_POSTGRES=1 (where
/// a missing PostgreSQL then fails them rather than skipping them).
package let postgresTestsEnabled: Bool = {
    ProcessInfo.processInfo.environment["MEMO_REQUIRE_POSTGRES"] == "1" || TestPostgres.findBinaries() != nil
}()
