import Dispatch
import Foundation
import MemoDiagnostics
import MemoModel
import MemoNet
import MemoTLS
import MemoWire
import Synchronization

/// The memo server: TLS connections on a few epoll threads, serving one store and fanning its changes out.
public final class MemoServer: Sendable {
    /// The address actually listened on (the real port when 0 was asked for).
    public let boundAddress: SocketAddress
    private let shared: ServerShared
    private let group: EventLoopGroup
    private let contexts: [LoopBound<LoopContext>]
    private let acceptor: LoopBound<Acceptor?>
    private let broadcaster: Broadcaster
    private let stopped = Mutex(false)
    private let metrics: MetricsListener?
    /// Where `/metrics`, `/healthz` and `/readyz` are served (the real port when 0 was asked for); nil without
    /// `metrics` in the configuration.
    public var metricsAddress: SocketAddress? { metrics?.boundAddress }

    /// Starts serving `store`.
    /// - Throws: `TLSError` when the certificates cannot be loaded, `NetError` when the address cannot be bound.
    public static func start(
        _ configuration: ServerConfiguration, store: any ServingStore, log: ServerLog = .standardError
    ) throws -> MemoServer {
        // Everything but the files, applied again on every reload: the record layer choice survives a SIGHUP.
        var settings = TLSConfiguration(
            role: .server, requireClientCertificate: configuration.requireClientCertificate,
            recordLayer: configuration.tlsRecords)
        settings.sessionTicketLifetime = configuration.sessionTicketLifetime
        let trust = try TrustStore(directory: absolutePath(configuration.certsDirectory), settings: settings)
        let address = try SocketAddress(parsing: configuration.listen)
        let listener = try ListeningSocket.bind(address, backlog: 4096)
        let group = try EventLoopGroup(threads: max(1, configuration.threads), name: "memo-io")
        let shared = ServerShared(
            store: store, limits: configuration.limits, serverName: configuration.serverName, log: log, trust: trust)
        log(.info, "certificates_loaded", [("directory", trust.directory)],
            "loaded certificates from \(trust.directory): \(trust.current.summary)")
        for warning in trust.current.expiryWarnings() { log(.warn, "certificate_expiry", warning) }
        let metrics: MetricsListener?
        do {
            metrics = try configuration.metrics.map { address throws(NetError) in
                try MetricsListener(address: address, shared: shared)
            }
        } catch {
            group.shutdownGracefully()
            listener.close()
            throw error
        }
        do {
            return try MemoServer(listener: listener, group: group, shared: shared, metrics: metrics)
        } catch {
            metrics?.stop()
            group.shutdownGracefully()
            listener.close()
            throw error
        }
    }

    private init(
        listener: ListeningSocket, group: EventLoopGroup, shared: ServerShared, metrics: MetricsListener?
    ) throws {
        self.group = group
        self.shared = shared
        self.metrics = metrics
        boundAddress = try listener.localAddress()
        let subscriberCount = SubscriberCount()
        contexts = group.loops.map { loop in
            loop.runAndWait { LoopBound(
                LoopContext(counter: subscriberCount, batchesSends: shared.limits.batchedSends), eventLoop: loop) }
        }
        broadcaster = Broadcaster(store: shared.store, contexts: contexts, subscribers: subscriberCount)
        let all = contexts
        shared.loopContexts.withLock { $0 = all }
        for context in contexts { scheduleSweep(context) }
        scheduleExpiryCheck(shared, on: group.loops[0])
        let contexts = contexts
        let acceptLoop = group.loops[0]
        let counter = Atomic<UInt64>(0)
        let limits = shared.limits
        acceptor = try acceptLoop.runAndWait { () throws(NetError) -> LoopBound<Acceptor?> in
            let acceptor = try Acceptor(
                listener: listener, eventLoop: acceptLoop,
                onError: { error in
                    shared.log(.error, "accept_failed", [("reason", error.message)], "accept failed: \(error.message)")
                },
                onAccept: { accepted in
                    let number = counter.add(1, ordering: .relaxed).newValue
                    let open = shared.connectionOpened()
                    if open > limits.maxConnections + 1024 {
                        // Far over the limit: not even a TLS handshake.
                        shared.log(
                            .warn, "close",
                            [("conn", "\(number)"), ("peer", "\(accepted.peer)"), ("reason", "too many connections")],
                            "close conn=\(number) peer=\(accepted.peer) reason=\"too many connections\"")
                        accepted.socket.close()
                        shared.connectionClosed()
                        return
                    }
                    let engine: TLSEngine
                    do {
                        // The trust loaded last: a reload applies to every handshake that starts after it.
                        engine = try TLSEngine(context: shared.trust.context)
                    } catch {
                        let reason = "TLS setup failed: \(error)"
                        shared.log(
                            .error, "close", [("conn", "\(number)"), ("peer", "\(accepted.peer)"), ("reason", reason)],
                            "close conn=\(number) peer=\(accepted.peer) reason=\"\(reason)\"")
                        accepted.socket.close()
                        shared.connectionClosed()
                        return
                    }
                    let target = contexts[Int(number % UInt64(contexts.count))]
                    // At the limit, the oldest connection that has not said hello within `evictableAfter` (one
                    // that stalls its handshake to hold a place) is closed to make room; with none, this one is
                    // told the server is full.
                    var overLimit = open > limits.maxConnections
                    if overLimit, let oldest = shared.oldestUnestablished() {
                        oldest.eventLoop.execute { oldest.value.evictToMakeRoom() }
                        overLimit = false
                    }
                    let rejected = overLimit
                    let handoff = Handoff(engine)
                    target.eventLoop.execute {
                        ServerConnection(
                            number: number, socket: accepted.socket, peer: accepted.peer, tls: handoff.engine,
                            server: shared, context: target, rejected: rejected
                        ).start()
                    }
                })
            return LoopBound(acceptor, eventLoop: acceptLoop)
        }
    }

    /// How many connections are open.
    public var connectionCount: Int { shared.connectionCount }

    /// Runs `work` every `interval` on the loop that accepts connections, for as long as the server runs: a
    /// heartbeat for a supervisor (systemd's watchdog) that stops when that loop stops turning.
    public func repeatOnAcceptLoop(every interval: Duration, _ work: @escaping @Sendable () -> Void) {
        scheduleRepeating(on: group.loops[0], every: interval, work)
    }

    /// Whether the server serves now (`ready`, or why not: the store's reason, or shutting down).
    public var readiness: StoreReadiness { shared.readiness }

    /// The answer a `status` request gets now. Waits for every loop to answer: not for use on a loop's thread.
    public func status() -> StatusReport {
        let result = Mutex<StatusReport?>(nil)
        let done = DispatchSemaphore(value: 0)
        shared.gatherStatus { report in
            result.withLock { $0 = report }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    #if DEBUG
    /// Connection objects not yet freed, closed ones included (debug builds, for tests).
    var connectionObjects: Int { shared.connectionObjects.load(ordering: .relaxed) }
    /// Connections whose TLS session still holds its keys (debug builds, for tests).
    var sessionsHoldingKeys: Int { shared.sessionsHoldingKeys.load(ordering: .relaxed) }
    #endif

    /// Loads the certificate folder again (server.crt, server.key, ca.crt, ca.crl) and logs what it loaded:
    /// new handshakes use it, open connections stay, except those whose certificate the new list revokes,
    /// which get going-away 206. A reload that fails (a missing or bad file) keeps what was loaded before.
    /// - Returns: whether the new certificates were loaded.
    @discardableResult
    public func reloadCertificates() -> Bool {
        let material: TrustMaterial
        do {
            material = try shared.trust.reload()
        } catch {
            shared.log(
                .error, "reload_failed", [("reason", "\(error)")],
                "reload failed, keeping the certificates loaded before: \(error)")
            return false
        }
        shared.log(
            .info, "certificates_reloaded", [("directory", shared.trust.directory)],
            "reloaded certificates from \(shared.trust.directory): \(material.summary)")
        for warning in material.expiryWarnings() { shared.log(.warn, "certificate_expiry", warning) }
        guard !material.revoked.isEmpty else { return true }
        for context in contexts {
            context.eventLoop.execute {
                for connection in context.value.connections.values {
                    connection.closeIfRevoked(material.revoked)
                }
            }
        }
        return true
    }

    /// Stops accepting, sends going-away to every client, answers the writes in flight, closes every connection
    /// (waiting at most `timeout` seconds) and stops the threads. The store stays open: its owner closes it.
    public func shutdown(timeout: Double = 10) {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        shared.shuttingDown.store(true, ordering: .relaxed)
        let acceptor = acceptor
        acceptor.eventLoop.runAndWait {
            acceptor.value?.stop()
            acceptor.value = nil
        }
        for context in contexts {
            context.eventLoop.execute {
                for connection in context.value.connections.values {
                    connection.goAway("the server is shutting down; reconnect and resume from your last revision")
                }
            }
        }
        if !shared.waitForNoConnections(timeout: timeout) {
            shared.log(
                .warn, "shutdown_timeout", [("connections", "\(shared.connectionCount)")],
                "shutdown: \(shared.connectionCount) connections still open after \(timeout) s; closing them")
        }
        broadcaster.stop()
        metrics?.stop()
        group.shutdownGracefully()
    }
}

/// Sweeps a loop's idle connections every second, for as long as the loop runs.
private func scheduleSweep(_ context: LoopBound<LoopContext>) {
    _ = context.eventLoop.schedule(after: .seconds(1)) {
        context.value.sweep()
        scheduleSweep(context)
    }
}

private func scheduleRepeating(on loop: EventLoop, every interval: Duration, _ work: @escaping @Sendable () -> Void) {
    _ = loop.schedule(after: interval) {
        work()
        scheduleRepeating(on: loop, every: interval, work)
    }
}

/// Repeats the expiry warnings every 12 hours, so that a server that runs for months says so before its
/// certificate lapses, not only when it starts or reloads.
private func scheduleExpiryCheck(_ shared: ServerShared, on loop: EventLoop) {
    _ = loop.schedule(after: .seconds(12 * 3600)) {
        for warning in shared.trust.current.expiryWarnings() { shared.log(.warn, "certificate_expiry", warning) }
        scheduleExpiryCheck(shared, on: loop)
    }
}

/// Moves a TLS engine, made on the accepting loop, to the loop that will own it.
// @unchecked Sendable: the engine is handed over once and only the receiving loop touches it afterwards.
private final class Handoff: @unchecked Sendable {
    let engine: TLSEngine
    init(_ engine: TLSEngine) { self.engine = engine }
}
