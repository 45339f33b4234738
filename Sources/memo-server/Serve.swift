import Dispatch
import Foundation
import MemoCLI
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoPKI
import MemoPostgres
import MemoSQLite
import MemoServer
import MemoStore
import MemoTLS
import MemoWire
import Synchronization

/// `memo-server serve`.
struct Serve {
    var configuration = ServerConfiguration()
    var store = "sqlite:memo-data/memos.sqlite"
    var historyCapacity = MemoLimits.defaultHistoryCapacity
    /// `--versions` and `--trash-days`.
    var versions = VersionPolicy.standard
    /// `--storage-timeout` and `--max-feed-lag`, in milliseconds (PostgreSQL only).
    var storageTimeoutMillis = PostgresStore.defaultStorageTimeoutMillis
    var maxFeedLagMillis = PostgresStore.defaultMaxFeedLagMillis
    /// Whether OpenSSL's freed memory is wiped (installed by main before any OpenSSL call), for the startup line.
    var freedMemoryWiped = false
    var logFormat = LogFormat.text
    var logLevel = LogLevel.info
    /// Where every line goes: standard error, in the format and from the level the options chose.
    var log: ServerLog { ServerLog.standardError(format: logFormat, level: logLevel) }

    init(_ arguments: inout Arguments) throws(UsageError) {
        if let listen = try arguments.option("--listen") {
            do {
                configuration.listen = try HostPort(parsing: listen, defaultPort: 7420).description
            } catch {
                throw UsageError("--listen: \(error)")
            }
        }
        store = try arguments.option("--store") ?? store
        configuration.certsDirectory = try arguments.option("--certs") ?? configuration.certsDirectory
        configuration.threads = try arguments.integer("--threads", in: 1...256) ?? configuration.threads
        var limits = configuration.limits
        limits.maxConnections = try arguments.integer("--max-connections", in: 1...1_000_000) ?? limits.maxConnections
        limits.maxFrameSize = try arguments.integer("--max-frame", in: 128 * 1024...64 << 20) ?? limits.maxFrameSize
        limits.maxInFlight = try arguments.integer("--max-in-flight", in: 1...1_000_000) ?? limits.maxInFlight
        limits.maxOutboundBytes = try arguments.integer("--max-outbound", in: 64 * 1024...1 << 34)
            ?? limits.maxOutboundBytes
        limits.handshakeTimeout = try arguments.seconds("--handshake-timeout") ?? limits.handshakeTimeout
        limits.frameTimeout = try arguments.seconds("--frame-timeout") ?? limits.frameTimeout
        configuration.limits = limits
        historyCapacity = try arguments.integer("--history", in: 1...100_000_000) ?? historyCapacity
        versions = VersionPolicy(
            keep: try arguments.integer("--versions", in: 0...VersionPolicy.maxKeep) ?? versions.keep,
            trashDays: try arguments.integer("--trash-days", in: 0...VersionPolicy.maxTrashDays) ?? versions.trashDays)
        storageTimeoutMillis = try Self.millis(&arguments, "--storage-timeout", in: 0.1...60) ?? storageTimeoutMillis
        maxFeedLagMillis = try Self.millis(&arguments, "--max-feed-lag", in: 0.1...3600) ?? maxFeedLagMillis
        if let records = try arguments.option("--tls-records") {
            guard let choice = TLSRecordLayerChoice(name: records) else {
                throw UsageError("--tls-records takes own or openssl, not '\(records)'")
            }
            configuration.tlsRecords = choice
        }
        if let sends = try arguments.option("--sends") {
            guard sends == "batched" || sends == "each" else {
                throw UsageError("--sends takes batched or each, not '\(sends)'")
            }
            configuration.limits.batchedSends = sends == "batched"
        }
        if let lifetime = try arguments.integer("--tls-tickets", in: 0...86_400) {
            configuration.sessionTicketLifetime = lifetime == 0 ? nil : lifetime
        }
        if let format = try arguments.option("--log-format") {
            guard let chosen = LogFormat(rawValue: format) else {
                throw UsageError("--log-format takes text or json, not '\(format)'")
            }
            logFormat = chosen
        }
        if let level = try arguments.option("--log-level") {
            guard let chosen = LogLevel(name: level) else {
                throw UsageError("--log-level takes debug, info, warn or error, not '\(level)'")
            }
            logLevel = chosen
        }
        if let metrics = try arguments.option("--metrics") {
            configuration.metrics = try Self.metricsAddress(metrics)
        }
        try arguments.finish()
        guard store == "memory" || (store.hasPrefix("sqlite:") && store.count > 7) || Self.isPostgres(store) else {
            throw UsageError("--store takes sqlite:PATH, postgres://URI or memory, not '\(store)'")
        }
    }

    func run() throws {
        // Before any thread starts, so that every thread inherits the mask and signals reach the watcher.
        // SIGHUP too: its default action would end the server silently (exit 129) when its terminal closes.
        try SignalWatcher.block([SIGTERM, SIGINT, SIGHUP])
        raiseDescriptorLimit()
        let log = log
        let systemd = SystemdNotifier()

        // The store first: a server refused because another one holds the file must leave nothing behind, not
        // even a CA made for it. A server that then cannot listen removes what it made (`leftovers`).
        var leftovers = StartupLeftovers()
        let memoStore: any ServingStore
        let storeName: String
        if store == "memory" {
            memoStore = MemoryStore(historyCapacity: historyCapacity, versions: versions)
            storeName = store
        } else if Self.isPostgres(store) {
            memoStore = try PostgresStore(
                uri: store, historyCapacity: historyCapacity, storageTimeoutMillis: storageTimeoutMillis,
                maxFeedLagMillis: maxFeedLagMillis, versions: versions, log: { log($0) })
            storeName = Self.redacted(store)
        } else {
            let path = absolutePath(String(store.dropFirst("sqlite:".count)))
            for suffix in ["", "-wal", "-shm", "-journal", ".lock", "-reserve"] {
                leftovers.expect(file: path + suffix)
            }
            do {
                memoStore = try SQLiteStore(path: path, historyCapacity: historyCapacity, versions: versions)
            } catch {
                leftovers.remove()
                throw error
            }
            storeName = "sqlite:" + path
        }
        ensureCertificates(&leftovers)
        let server: MemoServer
        do {
            server = try MemoServer.start(configuration, store: memoStore, log: log)
        } catch {
            memoStore.close()
            let removed = leftovers.remove()
            if !removed.isEmpty {
                log(
                    .warn, "not_started_cleanup", [("removed", removed.joined(separator: " "))],
                    "not started: removed what this start made: \(removed.joined(separator: " "))")
            }
            throw error
        }
        let sends = !configuration.limits.batchedSends
            ? "each" : SendBatch.availability.map { "each (io_uring: \($0))" } ?? "batched"
        log(
            .info, "serving",
            [("store", storeName), ("revision", "\(memoStore.revision)"),
             ("listen", "\(server.boundAddress)"), ("tls_records", configuration.tlsRecords.name),
             ("sends", sends)],
            "serving \(storeName) at revision \(memoStore.revision); TLS records: \(configuration.tlsRecords.name); "
                + "freed OpenSSL memory wiped: \(freedMemoryWiped ? "yes" : "no"); sends: \(sends)")
        if let metrics = server.metricsAddress {
            log(.info, "metrics", [("listen", "\(metrics)")], "metrics on http://\(metrics) (/metrics, /healthz, /readyz)")
        }
        // The one line on stdout, written whole and at once so that a parent waiting for it sees it now, after the
        // start's log lines (their writer is a thread of its own: ServerLog.standardError).
        ServerLog.flushStandardError()
        let line = Array("listening on \(server.boundAddress)\n".utf8)
        _ = line.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
        // Listening, with the store loaded: systemd may start what depends on the server.
        systemd.ready()
        if let interval = systemd.watchdogInterval, systemd.isActive {
            server.repeatOnAcceptLoop(every: interval) { systemd.watchdog() }
        }

        let signals = try EventLoop.start(name: "memo-signals")
        let stop = DispatchSemaphore(value: 0)
        let received = Atomic<Int32>(0)
        let watcher = try signals.runAndWait { () throws(NetError) -> SignalWatcher in
            try SignalWatcher(signals: [SIGTERM, SIGINT, SIGHUP], eventLoop: signals) { signal in
                if signal == SIGHUP {
                    systemd.reloading()
                    log(.info, "reload", [("signal", "SIGHUP")], "SIGHUP: reloading certificates")
                    server.reloadCertificates()
                    systemd.ready()
                    return
                }
                if received.exchange(signal, ordering: .relaxed) == 0 { stop.signal() }
            }
        }
        stop.wait()
        let name = received.load(ordering: .relaxed) == SIGTERM ? "SIGTERM" : "SIGINT"
        systemd.stopping()
        log(
            .info, "stopping", [("signal", name), ("connections", "\(server.connectionCount)")],
            "\(name): stopping; going-away sent to \(server.connectionCount) connections")
        server.shutdown()
        memoStore.close()
        StageTrace.write()  // only with MEMO_STAGE_TRACE set (benchmarks)
        var summary = "stopped cleanly at revision \(memoStore.revision)"
        if let sqlite = memoStore as? SQLiteStore {
            summary += "; \(sqlite.transactionCount) transactions committed since start"
        }
        if let postgres = memoStore as? PostgresStore {
            summary += "; \(postgres.batchCount) write batches sent to PostgreSQL since start, "
                + "\(postgres.claimCount) durability claims"
        }
        log(.info, "stopped", [("revision", "\(memoStore.revision)")], summary)
        _ = watcher
        signals.shutdownGracefully()
        // A memory store's memos end with the process: the exit gives their memory back at once, where freeing them
        // one by one cost ~1,000 instructions per memo held (as redis-server, which exits without freeing its keys;
        // BENCHMARKS.md, issue 30, branch `p16own`). The durable stores are freed: theirs close files on the way.
        if let memory = memoStore as? MemoryStore { _ = Unmanaged.passRetained(memory) }
    }

    /// `--metrics`'s address: `PORT` and `:PORT` are on loopback, `HOST:PORT` as given.
    static func metricsAddress(_ text: String) throws(UsageError) -> String {
        let port = text.hasPrefix(":") ? String(text.dropFirst()) : text
        if let number = UInt16(port) { return "127.0.0.1:\(number)" }
        do {
            return try HostPort(parsing: text, defaultPort: nil).description
        } catch {
            throw UsageError("--metrics takes PORT, :PORT or HOST:PORT: \(error)")
        }
    }

    /// A number of seconds in `range` (fractions allowed), as milliseconds.
    static func millis(
        _ arguments: inout Arguments, _ name: String, in range: ClosedRange<Double>
    ) throws(UsageError) -> Int? {
        guard let text = try arguments.option(name) else { return nil }
        guard let value = Double(text), range.contains(value) else {
            throw UsageError(
                "\(name) takes a number of seconds from \(String(format: "%g", range.lowerBound)) to "
                    + "\(String(format: "%g", range.upperBound)), not '\(text)'")
        }
        return Int((value * 1000).rounded())
    }

    /// A libpq URI: several servers share the database it names.
    static func isPostgres(_ store: String) -> Bool {
        store.hasPrefix("postgres://") || store.hasPrefix("postgresql://")
    }

    /// The store for log lines: a password in a PostgreSQL URI is not written out.
    static func redacted(_ store: String) -> String {
        guard isPostgres(store), let at = store.firstIndex(of: "@"),
            let scheme = store.range(of: "://"), scheme.upperBound < at,
            let colon = store[scheme.upperBound..<at].firstIndex(of: ":")
        else { return store }
        return String(store[..<colon]) + ":***" + String(store[at...])
    }

    /// Makes a CA and certificates as `certs init` would when the folder holds no CA.
    private func ensureCertificates(_ leftovers: inout StartupLeftovers) {
        let directory = absolutePath(configuration.certsDirectory)
        guard !FileManager.default.fileExists(atPath: directory + "/ca.crt") else { return }
        leftovers.expect(directory: directory)
        let names = ["ca.crt", "ca.key", "server.crt", "server.key", "client.crt", "client.key", CertificateIndex.fileName]
        for name in names {
            leftovers.expect(file: directory + "/" + name)
        }
        do {
            let result = try CertificateAuthority.initialize(directory: directory)
            log(
                .warn, "ca_created", [("directory", directory)],
                "no CA in \(directory): made one; wrote \(result.files.joined(separator: " "))")
        } catch {
            log(
                .error, "ca_create_failed", [("directory", directory), ("reason", "\(error)")],
                "no CA in \(directory) and making one failed: \(error)")
        }
    }
}
