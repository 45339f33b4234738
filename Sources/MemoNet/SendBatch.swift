import Glibc
internal import CMemoLinux

/// Sends to many sockets with one system call: a loop's fan-out of one change, each subscriber's record sealed into
/// the batch's buffer (`room`, `add`) and all of them handed to the kernel by `submit` (io_uring, `IORING_OP_SEND`
/// with `MSG_DONTWAIT`). What a socket refuses comes back as `.wouldBlock` or a short count, as `TCPSocket.write`
/// gives it, and a failed send as its `NetError`, so a caller keeps the rest as after a plain write.
///
/// Where the kernel refuses io_uring (`kernel.io_uring_disabled`, a seccomp profile), `open` fails and the caller
/// writes each socket itself; a ring that fails later sends what it holds one `send(2)` at a time and stays off.
/// Confined to its event loop's thread.
public final class SendBatch {
    private var ring: OpaquePointer?
    /// The records, back to back: `entries` say where each one is. Lives as long as the batch.
    private let buffer: UnsafeMutableRawBufferPointer
    private var used = 0
    /// The queued sends: a descriptor each (no socket object: touching 1,000 of them per change costs cache
    /// misses), valid until `submit` returns since only the loop closes its sockets.
    private var entries: [(descriptor: Int32, offset: Int, length: Int)] = []
    /// Each submitted send's result by index, and the completion ring's tokens and results as reaped.
    private var results: [Int32]
    private let tokens: UnsafeMutablePointer<UInt64>
    private let completions: UnsafeMutablePointer<Int32>
    private let capacity: Int

    /// The outcome of one queued send.
    public typealias Outcome = Result<TCPSocket.WriteResult, NetError>

    /// A batch of at most `sends` sends and `bytes` bytes of records between submissions.
    /// - Throws: `NetError` (operation `io_uring_setup`) when the kernel refuses io_uring.
    public init(sends: Int = 1024, bytes: Int = 256 * 1024) throws(NetError) {
        var error: Int32 = 0
        guard let ring = CMemoLinux_ring_open(UInt32(sends), &error) else {
            throw NetError(errno: error, operation: "io_uring_setup")
        }
        self.ring = ring
        capacity = min(sends, Int(CMemoLinux_ring_capacity(ring)))
        buffer = .allocate(byteCount: bytes, alignment: 16)
        results = [Int32](repeating: 0, count: capacity)
        tokens = .allocate(capacity: capacity)
        completions = .allocate(capacity: capacity)
        entries.reserveCapacity(capacity)
    }

    /// Why this process cannot batch sends (the kernel's refusal of a ring, as text), or nil when it can: opens and
    /// closes one small ring.
    public static var availability: String? {
        do {
            _ = try SendBatch(sends: 1, bytes: 16)
            return nil
        } catch {
            return error.message
        }
    }

    deinit {
        CMemoLinux_ring_close(ring)
        buffer.deallocate()
        tokens.deallocate()
        completions.deallocate()
    }

    /// The ring's descriptor, -1 once it is closed: a test replaces it to make the ring fail.
    var ringDescriptor: Int32 { ring.map { CMemoLinux_ring_descriptor($0) } ?? -1 }

    /// Sends queued and not yet submitted.
    public var count: Int { entries.count }

    /// False once the ring failed: every later batch would go one `send` at a time, so write directly instead.
    public var isWorking: Bool { ring != nil }

    /// Where the next record goes, when at least `bytes` are free and another send fits; nil when the batch must
    /// be submitted first.
    public func room(atLeast bytes: Int) -> UnsafeMutableRawBufferPointer? {
        guard entries.count < capacity, buffer.count - used >= bytes else { return nil }
        return UnsafeMutableRawBufferPointer(rebasing: buffer[used...])
    }

    /// Queues a send of the first `length` bytes of `room`'s buffer to a socket's descriptor
    /// (`TCPSocket.sendDescriptor`), which must stay open until `submit` returns.
    /// - Returns: the send's index in this batch (its `submit` callback's).
    public func add(descriptor: Int32, length: Int) -> Int {
        precondition(entries.count < capacity && used + length <= buffer.count, "SendBatch.add past room")
        precondition(descriptor >= 0, "SendBatch.add of a socket it cannot send to")
        entries.append((descriptor, used, length))
        used += (length + 15) & ~15
        return entries.count - 1
    }

    /// Sends everything queued and calls `completed` once per send, in the order they were added, with its
    /// outcome and its bytes (valid during the call only). The batch is empty again afterwards.
    public func submit(_ completed: (_ index: Int, _ outcome: Outcome, _ bytes: UnsafeRawBufferPointer) -> Void) {
        defer {
            entries.removeAll(keepingCapacity: true)
            used = 0
        }
        guard !entries.isEmpty else { return }
        let sent = ring.map(submitRing) ?? 0
        for index in entries.indices {
            let entry = entries[index]
            let bytes = UnsafeRawBufferPointer(rebasing: buffer[entry.offset..<(entry.offset + entry.length)])
            if index < sent {
                completed(index, Self.outcome(results[index]), bytes)
            } else {
                // Not submitted (no ring, or it failed): one send, as without a batch.
                completed(index, Result { () throws(NetError) in try TCPSocket.send(bytes, on: entry.descriptor) }, bytes)
            }
        }
    }

    /// Queues, submits and reaps the entries into `results`.
    /// - Returns: how many of the first entries were submitted (their results are in `results`); fewer than all
    ///   only when the ring failed, which closes it for good.
    private func submitRing(_ ring: OpaquePointer) -> Int {
        for (index, entry) in entries.enumerated() {
            let queued = CMemoLinux_ring_send(
                ring, entry.descriptor, buffer.baseAddress! + entry.offset, UInt32(entry.length),
                UInt64(index))
            precondition(queued == 0, "SendBatch: the submission ring is full")
        }
        // The kernel takes submissions in ring order: a short count means the first ones went.
        let submitted = max(0, Int(CMemoLinux_ring_submit(ring)))
        for index in 0..<submitted { results[index] = Self.unreaped }
        var reaped = 0
        while reaped < submitted {
            let got = Int(CMemoLinux_ring_reap(ring, tokens, completions, Int32(capacity)))
            for slot in 0..<got { results[Int(tokens[slot])] = completions[slot] }
            reaped += got
            // Sends that cannot block complete promptly; a wait that fails leaves the ring unusable.
            if reaped < submitted, CMemoLinux_ring_wait(ring, UInt32(submitted - reaped)) < 0 { break }
        }
        if submitted < entries.count || reaped < submitted {
            // Unsubmitted entries must not go later from reused records: the ring closes with them.
            CMemoLinux_ring_close(ring)
            self.ring = nil
            // A send not reaped may still read its record: its connection closes (EIO) rather than continue.
            for index in 0..<submitted where results[index] == Self.unreaped { results[index] = -EIO }
        }
        return submitted
    }

    /// No completion yet (no send returns it: results are bytes or -errno).
    private static let unreaped = Int32.min

    private static func outcome(_ result: Int32) -> Outcome {
        if result >= 0 { return .success(.wrote(Int(result))) }
        if -result == EAGAIN || -result == EWOULDBLOCK { return .success(.wouldBlock) }
        return .failure(NetError(errno: -result, operation: "send"))
    }
}
