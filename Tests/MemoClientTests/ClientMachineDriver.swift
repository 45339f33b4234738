import Foundation
import MemoModel
import MemoTLS
import MemoWire
import Testing

@testable import MemoClient

/// Drives the client's two machines, `ClientConnectionMachine` and `RequestTable`, composed as `ConnectionOwner`
/// composes them (`ConnectionOwner.route`), event by event with a clock of its own, and reads their actions the way
/// `ConnectionOwner` runs them (no sockets, no timers: each test runs in microseconds).
struct ClientMachineDriver {
    typealias Action = ConnectionOwner.Action
    typealias Deadline = ClientConnectionMachine.Deadline

    var machine: ClientConnectionMachine
    var table: RequestTable
    var now = ContinuousClock.now
    /// Where each subscription starts when a `subscribe` action runs (the owner's last applied revision).
    var starts: [Int: UInt64?] = [:]

    static func configuration(
        servers: String = "alpha:7420", policy: ReconnectPolicy = ReconnectPolicy(),
        keepalive: Duration? = ClientConfiguration.defaultKeepalive
    ) -> ClientConfiguration {
        var configuration = ClientConfiguration(
            server: servers, caPath: "/nonexistent/ca.crt", certificatePath: "/nonexistent/client.crt",
            keyPath: "/nonexistent/client.key", requestTimeout: .seconds(10), connectTimeout: .seconds(4),
            reconnect: policy)
        configuration.keepalive = keepalive
        return configuration
    }

    init(
        servers: String = "alpha:7420", policy: ReconnectPolicy = ReconnectPolicy(),
        keepalive: Duration? = ClientConfiguration.defaultKeepalive
    ) {
        // A jitter factor of 1: delays are the policy's own, so growth can be checked exactly.
        let configuration = Self.configuration(servers: servers, policy: policy, keepalive: keepalive)
        machine = ClientConnectionMachine(configuration: configuration) { 1 }
        table = RequestTable(configuration: configuration)
    }

    /// The connection machine's actions, with the table's part routed as `ConnectionOwner` does.
    mutating func route(_ actions: [ClientConnectionMachine.Action]) -> [Action] {
        ConnectionOwner.route(actions, machine: &machine, table: &table, now: now)
    }

    /// The table's actions, with its `closeConnection` routed as `ConnectionOwner` does.
    mutating func route(table actions: [RequestTable.Action]) -> [Action] {
        ConnectionOwner.route(table: actions, machine: &machine, table: &table, now: now)
    }

    mutating func advance(_ duration: Duration) {
        now += duration
    }

    // MARK: - Events

    mutating func start(waitingFor wait: Duration? = nil) -> [Action] {
        route(machine.start(firstDeadline: wait.map { now + $0 }, now: now))
    }

    /// TCP, TLS and the welcome in one read.
    mutating func goLive(revision: UInt64 = 0, maxFrameSize: UInt32 = 1 << 20) -> [Action] {
        var actions = connected()
        actions += handshakeDone()
        actions += receive([Self.welcome(revision: revision, maxFrameSize: maxFrameSize)])
        return actions
    }

    // The current connection's events (the machine's latest attempt).

    mutating func connected(attempt: Int? = nil) -> [Action] {
        route(machine.connected(attempt: attempt ?? machine.attempt))
    }

    mutating func handshakeDone(attempt: Int? = nil) -> [Action] {
        route(machine.handshakeDone(attempt: attempt ?? machine.attempt))
    }

    mutating func receive(_ frames: [Frame], attempt: Int? = nil) -> [Action] {
        route(machine.received(frames, attempt: attempt ?? machine.attempt, now: now))
    }

    mutating func receive(_ message: Message, id: UInt32) -> [Action] {
        receive([Self.frame(message, id: id)])
    }

    mutating func end(_ end: TransportEnd, attempt: Int? = nil) -> [Action] {
        route(machine.transportEnded(end, attempt: attempt ?? machine.attempt, now: now))
    }

    mutating func fire(_ deadline: Deadline) -> [Action] {
        ConnectionOwner.deadlinePassed(deadline, machine: &machine, table: &table, now: now)
    }

    mutating func submit(_ message: Message, timeout: Duration? = nil, behindHello: Bool = false)
        -> (id: UInt32, actions: [Action])
    {
        ConnectionOwner.submit(
            message, timeout: timeout, behindHello: behindHello, machine: &machine, table: &table, now: now)
    }

    mutating func close() -> [Action] {
        route(machine.close())
    }

    mutating func subscribe(token: Int) -> [Action] {
        route(table: table.subscribe(token: token, link: machine.link))
    }

    mutating func unsubscribe(_ token: Int) -> [Action] {
        route(table: table.unsubscribe(token, link: machine.link))
    }

    mutating func restart(_ token: Int) -> [Action] {
        route(table: table.restart(token, link: machine.link))
    }

    // MARK: - Frames

    /// The frame as the server writes it on a connection that agreed `version` (the welcome's, by default).
    static func frame(_ message: Message, id: UInt32, version: UInt16 = WireProtocol.version) -> Frame {
        var decoder = FrameDecoder()
        decoder.append(message.frame(requestID: id, version: version))
        return try! decoder.next()!
    }

    static func welcome(revision: UInt64 = 0, maxFrameSize: UInt32 = 1 << 20) -> Frame {
        frame(.welcome(version: WireProtocol.version, revision: revision, maxFrameSize: maxFrameSize,
                       role: .readWrite, server: "test"), id: ClientConnectionMachine.helloRequestID)
    }

    static func memo(_ n: Int, revision: UInt64) -> Memo {
        Memo(id: UUID(uuidString: String(format: "00000000-0000-0000-0000-%012d", n))!, content: "memo \(n)",
             insertMicros: Int64(n), updateMicros: Int64(n), revision: revision)
    }

    // MARK: - Reading actions

    /// The messages the actions write, in order, with their request ids (`subscribe` resolved from `starts`).
    func sent(_ actions: [Action]) -> [(id: UInt32, message: Message)] {
        actions.compactMap { action in
            switch action {
            case .send(let bytes):
                var decoder = FrameDecoder()
                decoder.append(bytes)
                let frame = try! decoder.next()!
                return (frame.requestID, try! Message(frame: frame))
            case .subscribe(let token, let id):
                return (id, .subscribe(after: starts[token] ?? nil))
            default: return nil
            }
        }
    }

    func sentIDs(_ actions: [Action]) -> [UInt32] {
        sent(actions).map(\.id)
    }

    func completions(_ actions: [Action]) -> [(id: UInt32, result: Result<Reply, any Error>, attempts: Int)] {
        actions.compactMap { action in
            guard case .complete(let id, let result, let attempts) = action else { return nil }
            return (id, result, attempts)
        }
    }

    func connects(_ actions: [Action]) -> [String] {
        actions.compactMap { action in
            guard case .connect(let server, _) = action else { return nil }
            return server
        }
    }

    func scheduled(_ deadline: Deadline, in actions: [Action]) -> Duration? {
        for case .schedule(let scheduled, let delay) in actions where scheduled == deadline { return delay }
        return nil
    }

    func states(_ actions: [Action]) -> [ConnectionState] {
        actions.compactMap { action in
            guard case .reportState(let state) = action else { return nil }
            return state
        }
    }

    func deliveries(_ actions: [Action]) -> [(token: Int, events: [SubscriptionEvent])] {
        actions.compactMap { action in
            guard case .deliver(let token, let events) = action else { return nil }
            return (token, events)
        }
    }

    func failures(_ actions: [Action]) -> [ConnectionEnd?] {
        actions.compactMap { action in
            guard case .reportFailure(let end) = action else { return nil }
            return .some(end)
        }
    }

    func firstOutcomes(_ actions: [Action]) -> [ConnectionEnd?] {
        actions.compactMap { action in
            guard case .firstOutcome(let end) = action else { return nil }
            return .some(end)
        }
    }

    func closesConnection(_ actions: [Action]) -> Bool? {
        for case .closeConnection(let polite) in actions { return polite }
        return nil
    }
}

extension ConnectionEnd {
    /// A short name for expectations.
    var name: String {
        switch self {
        case .unreachable: return "unreachable"
        case .unresolved: return "unresolved"
        case .timedOut: return "timedOut"
        case .tlsRefused: return "tlsRefused"
        case .rejected: return "rejected"
        case .lost: return "lost"
        case .notAnswering: return "notAnswering"
        case .closedByClient: return "closedByClient"
        }
    }
}
