import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoWire

/// A write and what the server said about it.
struct GrayWrite: Sendable {
    var kind: ChangeKind
    var id: UUID
    /// Unique to this write (for a delete: the content the memo had).
    var content: String
    /// The revision the write was acknowledged at (acknowledged writes only).
    var revision: UInt64?
    /// The answer, for failed and unknown writes (an error code, or the transport's failure).
    var answer: String = ""
    /// When the answer came.
    var at: ContinuousClock.Instant = .now
}

/// What a writer's answers said, for GrayCheck (a value, so that the check of the checks can plant faults in a
/// copy).
struct GrayRecord {
    var number: Int
    var acknowledged: [GrayWrite]
    var failed: [GrayWrite]
    var unknown: [GrayWrite]
    var violations: [String]
    var live: [UUID: (content: String, revision: UInt64)]
    var deleted: Set<UUID>
    var timedOut: Int
    var slowest: Duration
}

/// One writer client of the gray-failure storm, in a network namespace of its own: creates with ids it
/// chooses, updates and deletes with the revision it expects, one request at a time. Each answer sorts the
/// write into acknowledged (the memo came back), failed (an error other than 505: the server says it was not
/// done), or unknown (505 outcome-unknown, a timeout, a lost connection). After any answer but an
/// acknowledgement the writer never touches that memo again, so what the store finally holds of it is exactly
/// what the answers allow. A lost connection moves it to the next server of its list.
// @unchecked Sendable: after `run` starts only the writer's own thread touches it (the clock of the last
// acknowledgement is behind a lock) until the harness joins it.
final class GrayWriter: @unchecked Sendable {
    let number: Int
    private let addresses: [SocketAddress]
    private let namespace: String?
    private let identity: ProbeConnection.Identity
    private let timeout: Duration
    /// At most this many writes a second.
    private let rate: Int
    private let shared: CrashShared
    private var random: SplitMix64
    private var counter = 0
    private var current = 0

    private(set) var acknowledged: [GrayWrite] = []
    private(set) var failed: [GrayWrite] = []
    private(set) var unknown: [GrayWrite] = []
    /// Answers a correct server never gives here (a conflict on a memo only this writer touches).
    private(set) var violations: [String] = []
    /// This writer's memos that it still writes: content and revision as acknowledged.
    private(set) var live: [UUID: (content: String, revision: UInt64)] = [:]
    private(set) var deleted = Set<UUID>()
    /// Writes that got no answer within the timeout (a subset of the unknown ones).
    private(set) var timedOut = 0
    /// The longest a write waited for its answer (or for the timeout).
    private(set) var slowest: Duration = .zero
    private var liveIDs: [UUID] = []
    private let lastAcknowledgement = LockedBox<ContinuousClock.Instant?>(nil)

    init(number: Int, addresses: [SocketAddress], namespace: String?, identity: ProbeConnection.Identity,
         timeout: Duration, rate: Int, seed: UInt64, shared: CrashShared) {
        self.rate = rate
        self.number = number
        self.addresses = addresses
        self.namespace = namespace
        self.identity = identity
        self.timeout = timeout
        self.shared = shared
        random = SplitMix64(seed: seed)
    }

    var record: GrayRecord {
        GrayRecord(number: number, acknowledged: acknowledged, failed: failed, unknown: unknown,
                   violations: violations, live: live, deleted: deleted, timedOut: timedOut, slowest: slowest)
    }

    /// When the last write was acknowledged.
    var lastAcknowledged: ContinuousClock.Instant? { lastAcknowledgement.value }

    /// Writes until the harness says stop. Call on a thread of its own (it moves that thread into its namespace).
    func run() {
        if let namespace {
            do {
                try enterNetworkNamespace(namespace)
            } catch {
                violations.append("writer \(number): \(error)")
                return
            }
        }
        var connection: ProbeConnection?
        while !shared.stopping {
            if connection == nil {
                connection = connect()
                if connection == nil { continue }
            }
            let op = nextOp()
            let sent = ContinuousClock.now
            defer {
                let next = sent + .milliseconds(1000 / rate)
                if ContinuousClock.now < next { pause(Double(milliseconds(next - ContinuousClock.now)) / 1000) }
            }
            do {
                let id = try connection!.send(message(for: op))
                let (_, answer) = try connection!.receive { $0.requestID == id }
                slowest = max(slowest, .now - sent)
                handle(op, answer)
                if case .goingAway = answer { connection = nil }
            } catch {
                slowest = max(slowest, .now - sent)
                if case ProbeConnection.Failure.timedOut = error { timedOut += 1 }
                settle(op, unknown: true, answer: "\(error)")
                connection = nil
            }
        }
    }

    /// Connects to the next server of the list that answers hello; nil after a round of failures.
    private func connect() -> ProbeConnection? {
        for _ in addresses.indices {
            let address = addresses[current]
            if let connection = try? ProbeConnection(address: address, identity: identity, timeout: timeout),
                (try? connection.hello()) != nil
            {
                return connection
            }
            current = (current + 1) % addresses.count
            if shared.stopping { return nil }
        }
        pause(0.1)
        return nil
    }

    private func nextOp() -> GrayWrite {
        counter += 1
        let content = "g\(number)-\(counter)"
        let roll = Double.random(in: 0..<1, using: &random)
        if liveIDs.count >= 8, roll >= 0.5 {
            let id = liveIDs.randomElement(using: &random)!
            if roll < 0.8 { return GrayWrite(kind: .updated, id: id, content: content) }
            return GrayWrite(kind: .deleted, id: id, content: live[id]?.content ?? "")
        }
        return GrayWrite(kind: .created, id: UUID(), content: content)
    }

    private func message(for op: GrayWrite) -> Message {
        switch op.kind {
        case .created: return .create(id: op.id, insertMicros: nil, content: op.content)
        case .updated: return .update(id: op.id, expectedRevision: live[op.id]?.revision, content: op.content)
        case .deleted: return .delete(id: op.id, expectedRevision: live[op.id]?.revision)
        }
    }

    private func handle(_ op: GrayWrite, _ answer: Message) {
        switch answer {
        case .memo(let memo) where memo.id == op.id && (op.kind == .deleted || memo.content == op.content):
            var write = op
            write.revision = memo.revision
            write.at = .now
            acknowledged.append(write)
            lastAcknowledgement.value = .now
            switch op.kind {
            case .created, .updated:
                if live.updateValue((op.content, memo.revision), forKey: op.id) == nil { liveIDs.append(op.id) }
            case .deleted:
                forget(op.id)
                deleted.insert(op.id)
            }
        case .error(.outcomeUnknown, let text):
            settle(op, unknown: true, answer: "505 \(text)")
        case .error(let code, let text) where code.rawValue >= 500 || code == .tooManyInFlight:
            settle(op, unknown: false, answer: "\(code) \(text)")
            // A server that refuses writes refuses them at once: a client would not retry in a tight loop.
            pause(0.05)
        case .goingAway(let code, let text):
            // Sent instead of an answer: the write may or may not have been done.
            settle(op, unknown: true, answer: "going-away \(code) \(text)")
        default:
            violations.append("writer \(number): \(op.kind.name) of \(op.id) '\(op.content)' answered \(answer)")
            settle(op, unknown: true, answer: "\(answer)")
        }
    }

    /// A write not acknowledged: the writer leaves its memo alone from now on.
    private func settle(_ op: GrayWrite, unknown isUnknown: Bool, answer: String) {
        var write = op
        write.answer = answer
        write.at = .now
        if isUnknown { unknown.append(write) } else { failed.append(write) }
        forget(op.id)
    }

    private func forget(_ id: UUID) {
        live[id] = nil
        if let index = liveIDs.firstIndex(of: id) {
            liveIDs.swapAt(index, liveIDs.count - 1)
            liveIDs.removeLast()
        }
    }
}
