import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoWire
import Synchronization

/// A write whose answer arrived: what it did and the revision the server gave it.
struct AckedWrite: Sendable {
    var kind: ChangeKind
    var id: UUID
    /// The content written (for a delete: the content the memo had).
    var content: String
    /// nil for a delete answered not-found on a retry: the earlier, unanswered try did it.
    var revision: UInt64?
}

/// What every writer shares with the harness: when to stop, and the highest revision each server acknowledged.
///
/// Per server, because a server over a shared PostgreSQL may lag another one by the feed delay: what it must never
/// fall behind is what it acknowledged itself.
final class CrashShared: Sendable {
    private let stopFlag = Atomic<Bool>(false)
    private let highest: Mutex<[UInt64]>

    init(servers: Int = 1) {
        highest = Mutex(Array(repeating: 0, count: servers))
    }

    var stopping: Bool { stopFlag.load(ordering: .acquiring) }
    func stop() { stopFlag.store(true, ordering: .releasing) }

    func maxAcknowledged(server: Int = 0) -> UInt64 { highest.withLock { $0[server] } }
    func acknowledged(_ revision: UInt64, server: Int = 0) {
        highest.withLock { $0[server] = max($0[server], revision) }
    }
}

/// Small, fast, seedable randomness so that a failing run can be repeated with `--seed`.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// One writer connection: creates (with ids it chooses), updates and deletes its own memos, a few requests in
/// flight at once. When the connection is lost, the writes in flight are unknown: after reconnecting it sends
/// them again (a create with the same id and content is idempotent), so each memo's state is known again.
///
/// Each writer touches only its own memos, so its model of them is exact without coordination.
// @unchecked Sendable: after `run` starts, only the writer's own thread touches it until the harness joins it.
final class CrashWriter: @unchecked Sendable {
    private struct Op {
        var kind: ChangeKind
        var id: UUID
        var content: String
        var retried = false
    }

    let number: Int
    private let address: SocketAddress
    /// Which server `address` is, for the revision it must never go back behind.
    private let server: Int
    private let identity: ProbeConnection.Identity
    private let pipeline: Int
    private let shared: CrashShared
    private var random: SplitMix64
    private var counter = 0
    private var nextRequestID: UInt32 = 0
    private var inFlight: [UInt32: Op] = [:]
    private var retry: [Op] = []
    private var busy = Set<UUID>()

    private(set) var acknowledged: [AckedWrite] = []
    /// Writes in flight when a connection was lost (their fate unknown until retried).
    private(set) var unknown = 0
    private(set) var reconnects = 0
    /// Answers that a correct server never gives, and welcomes behind an acknowledged revision.
    private(set) var violations: [String] = []
    /// This writer's memos as the answers say they are: present with this content, or deleted.
    private(set) var live: [UUID: String] = [:]
    private(set) var deleted = Set<UUID>()
    private var liveIDs: [UUID] = []

    init(
        number: Int, address: SocketAddress, identity: ProbeConnection.Identity, pipeline: Int, seed: UInt64,
        shared: CrashShared, server: Int = 0
    ) {
        self.number = number
        self.server = server
        self.address = address
        self.identity = identity
        self.pipeline = pipeline
        self.shared = shared
        random = SplitMix64(seed: seed)
    }

    /// Writes until the harness says stop, then finishes every write it started. Call on a thread of its own.
    func run() {
        var connection: ProbeConnection?
        while true {
            let stopping = shared.stopping
            if stopping, inFlight.isEmpty, retry.isEmpty { break }
            if connection == nil {
                connection = connect()
                guard connection != nil else { return }
            }
            do {
                while let op = retry.popLast() { try send(op, on: connection!) }
                while !stopping, inFlight.count < pipeline { try send(nextOp(), on: connection!) }
                guard !inFlight.isEmpty else { continue }
                let (frame, message) = try connection!.receive()
                try handle(frame.requestID, message)
            } catch {
                // The server died (or said goodbye): what was in flight may or may not have been done.
                unknown += inFlight.count
                for var op in inFlight.values {
                    op.retried = true
                    retry.append(op)
                }
                inFlight.removeAll()
                connection = nil
            }
        }
    }

    /// Connects and says hello, retrying while the server is down (at most 60 s).
    private func connect() -> ProbeConnection? {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let floor = shared.maxAcknowledged(server: server)
            if let connection = try? ProbeConnection(address: address, identity: identity, timeout: .seconds(5)),
                let welcome = try? connection.hello()
            {
                reconnects += 1
                if case .welcome(_, let revision, _, _, _) = welcome, revision < floor {
                    violations.append("writer \(number): welcome at revision \(revision) after \(floor) was "
                        + "acknowledged (the revision went backwards)")
                }
                return connection
            }
            pause(0.02)
        }
        violations.append("writer \(number): could not reconnect within 60 s")
        return nil
    }

    private func nextOp() -> Op {
        counter += 1
        let content = "w\(number)-\(counter)"
        let roll = Double.random(in: 0..<1, using: &random)
        if liveIDs.count >= 8, roll >= 0.5 {
            for _ in 0..<4 {
                let id = liveIDs.randomElement(using: &random)!
                guard !busy.contains(id) else { continue }
                if roll < 0.8 { return Op(kind: .updated, id: id, content: content) }
                return Op(kind: .deleted, id: id, content: live[id] ?? "")
            }
        }
        return Op(kind: .created, id: UUID(), content: content)
    }

    private func send(_ op: Op, on connection: ProbeConnection) throws {
        let message: Message
        switch op.kind {
        case .created: message = .create(id: op.id, insertMicros: nil, content: op.content)
        case .updated: message = .update(id: op.id, expectedRevision: nil, content: op.content)
        case .deleted: message = .delete(id: op.id, expectedRevision: nil)
        }
        // Recorded before sending, so that a send that fails half-way counts as in flight.
        nextRequestID += 1
        let requestID = nextRequestID
        inFlight[requestID] = op
        busy.insert(op.id)
        try connection.send(message, id: requestID)
    }

    private func handle(_ requestID: UInt32, _ message: Message) throws {
        if case .goingAway = message { throw ProbeConnection.Failure.closed }
        guard let op = inFlight.removeValue(forKey: requestID) else {
            violations.append("writer \(number): an answer to request \(requestID), which is not in flight: \(message)")
            return
        }
        busy.remove(op.id)
        switch message {
        case .memo(let memo):
            guard memo.id == op.id, op.kind == .deleted || memo.content == op.content else {
                violations.append("writer \(number): \(op.kind.name) of \(op.id) '\(op.content)' answered \(memo)")
                return
            }
            record(AckedWrite(kind: op.kind, id: op.id, content: op.kind == .deleted ? memo.content : op.content,
                              revision: memo.revision))
        case .error(.notFound, _) where op.kind == .deleted && op.retried:
            record(AckedWrite(kind: .deleted, id: op.id, content: op.content, revision: nil))
        default:
            violations.append("writer \(number): \(op.kind.name) of \(op.id) '\(op.content)'"
                + "\(op.retried ? " (retried)" : "") answered \(message)")
        }
    }

    private func record(_ write: AckedWrite) {
        acknowledged.append(write)
        if let revision = write.revision { shared.acknowledged(revision, server: server) }
        switch write.kind {
        case .created, .updated:
            if live.updateValue(write.content, forKey: write.id) == nil { liveIDs.append(write.id) }
        case .deleted:
            live[write.id] = nil
            deleted.insert(write.id)
            if let index = liveIDs.firstIndex(of: write.id) {
                liveIDs.swapAt(index, liveIDs.count - 1)
                liveIDs.removeLast()
            }
        }
    }
}
