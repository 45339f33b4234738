import Foundation

/// A throwaway PostgreSQL in a network namespace of its own, listening on 192.0.2.1:5432 (and on a Unix socket
/// in its folder, which the harness's psql uses: a Unix socket is a file, not bound to a network namespace).
/// initdb refuses root, so it runs as the postgres user, with a folder that user can enter.
final class GrayPostgres {
    let directory: String
    let binaries: String
    private let namespace: String
    private var databases = 0

    init(directory: String, namespace: String) throws {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        guard let bin = versions.compactMap(Int.init).sorted().reversed().map({ "\(root)/\($0)/bin" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0 + "/pg_ctl") })
        else { throw TortureError("PostgreSQL is not installed (no /usr/lib/postgresql/*/bin)") }
        binaries = bin
        self.directory = directory
        self.namespace = namespace
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // The postgres user must be able to reach the folder: the run's folder (private from mkdtemp) becomes
        // traversable; the folders above it already are.
        chmod((directory as NSString).deletingLastPathComponent, 0o755)
        chmod(directory, 0o755)
        try runProgram(["/bin/chown", "postgres", directory])
        try asPostgres([binaries + "/initdb", "-D", directory + "/data", "-U", "memo", "--auth=trust", "-E", "UTF8",
                        "--locale=C.UTF-8", "--no-sync"])
        // The servers connect over TEST-NET-1, which initdb's pg_hba.conf does not let in.
        let hba = try FileHandle(forWritingTo: URL(fileURLWithPath: directory + "/data/pg_hba.conf"))
        hba.seekToEndOfFile()
        hba.write(Data("host all all 192.0.2.0/24 trust\n".utf8))
        try hba.close()
        try runProgram(["/usr/sbin/ip", "netns", "exec", namespace, "/usr/sbin/runuser", "-u", "postgres", "--",
                        binaries + "/pg_ctl", "-D", directory + "/data", "-l", directory + "/log", "-w", "-o",
                        "-p 5432 -k \(directory) -c listen_addresses=\(GrayNetwork.postgresAddress) -c fsync=off "
                            + "-c max_connections=100", "start"])
    }

    /// The command that stops it, for the cleanup that runs even when the harness dies.
    var stopCommand: String {
        "runuser -u postgres -- \(binaries)/pg_ctl -D \(directory)/data -m immediate stop"
    }

    func stop() {
        _ = try? runProgram(["/bin/sh", "-c", stopCommand])
    }

    /// A new, empty database. - Returns: the URI the servers use (over the database bridge).
    func makeDatabase() throws -> String {
        databases += 1
        let name = "gray_\(databases)"
        try sql("CREATE DATABASE \(name)", database: "postgres")
        return "postgresql://memo@\(GrayNetwork.postgresAddress):5432/\(name)"
    }

    @discardableResult
    func sql(_ statement: String, database: String = "postgres") throws -> String {
        try runProgram([binaries + "/psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", directory, "-p", "5432",
                        "-U", "memo", "-d", database, "-c", statement])
    }

    /// The pid of a memo-server's backend: `role` is "feed" or "writer" (MemoPostgres names its connections
    /// memo-feed and memo-writer), told apart by the server's address on the database bridge.
    func backend(role: String, clientAddress: String) throws -> Int32? {
        let text = try sql("SELECT pid FROM pg_stat_activity WHERE application_name = 'memo-\(role)' "
            + "AND client_addr = '\(clientAddress)' ORDER BY backend_start DESC LIMIT 1")
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Whether the backend `pid` waits idle for its client (`IdleStop.query`); false when PostgreSQL gives no
    /// answer within 2 s (a stopped backend holding a shared lock hangs the query).
    func isIdle(_ pid: Int32) -> Bool {
        let psql = [binaries + "/psql", "-X", "-A", "-t", "-h", directory, "-p", "5432", "-U", "memo", "-d",
                    "postgres", "-c", IdleStop.query(pid)]
        return (try? runProgram(["/usr/bin/timeout", "-s", "KILL", "2"] + psql)) == "t"
    }

    /// The postmaster and every process it started.
    func processes() -> [Int32] {
        guard let pidFile = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
            let postmaster = pidFile.split(separator: "\n").first.flatMap({ Int32($0) })
        else { return [] }
        var pids = [postmaster]
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry),
                let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                let close = stat.lastIndex(of: ")")
            else { continue }
            // After "pid (comm) state " comes the parent's pid.
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            if fields.count > 1, Int32(fields[1]) == postmaster { pids.append(pid) }
        }
        return pids
    }

    private func asPostgres(_ command: [String]) throws {
        try runProgram(["/usr/sbin/runuser", "-u", "postgres", "--"] + command)
    }
}
