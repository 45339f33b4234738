import Glibc
import Testing

@testable import MemoNet

@Suite("Net: sends batched into one io_uring submission")
struct SendBatchTests {
    /// `count` loopback connections: each client side (what the batch writes) and its accepted peer.
    private func pairs(_ count: Int) throws -> (listener: ListeningSocket, pairs: [(TCPSocket, TCPSocket)]) {
        let listener = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"), backlog: 64)
        var made: [(TCPSocket, TCPSocket)] = []
        for _ in 0..<count {
            let client = try TCPSocket.connect(to: listener.localAddress(), timeout: .seconds(5))
            var entry = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
            #expect(poll(&entry, 1, 5000) == 1)
            let accepted = try #require(try listener.accept())
            made.append((client, accepted.socket))
        }
        return (listener, made)
    }

    /// Queues `bytes` for `socket` in `batch`. - Returns: its index.
    private func add(_ bytes: [UInt8], to socket: TCPSocket, in batch: SendBatch) throws -> Int {
        let room = try #require(batch.room(atLeast: bytes.count))
        bytes.withUnsafeBytes { room.copyMemory(from: $0) }
        return batch.add(descriptor: socket.sendDescriptor, length: bytes.count)
    }

    /// Reads exactly `count` bytes from `socket`, waiting for them.
    private func read(_ count: Int, from socket: TCPSocket) throws -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while received.count < count {
            #expect(try socket.wait(for: .readable, timeout: .seconds(5)))
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            guard case .bytes(let n) = result else {
                Issue.record("read gave \(result) after \(received.count) of \(count) bytes")
                return received
            }
            received += buffer.prefix(n)
        }
        return received
    }

    @Test("each record reaches its own socket, whole and in order of submission, and the batch empties")
    func recordsReachTheirSockets() throws {
        let (_, pairs) = try pairs(24)
        let batch = try SendBatch(sends: 64, bytes: 64 * 1024)
        #expect(batch.isWorking)
        for round in 0..<3 {
            var records: [[UInt8]] = []
            for (index, (writer, _)) in pairs.enumerated() {
                let record = netPattern(count: 100 + index * 37 + round, seed: index + 100 * round)
                records.append(record)
                #expect(try add(record, to: writer, in: batch) == index)
            }
            #expect(batch.count == pairs.count)
            var seen: [Int] = []
            batch.submit { index, outcome, bytes in
                seen.append(index)
                #expect((try? outcome.get()) == .wrote(records[index].count), "send \(index): \(outcome)")
                #expect(Array(bytes) == records[index])
            }
            #expect(seen == Array(0..<pairs.count))
            #expect(batch.count == 0)
            for (index, (_, reader)) in pairs.enumerated() {
                #expect(try read(records[index].count, from: reader) == records[index], "socket \(index)")
            }
        }
    }

    @Test("a full socket's record comes back refused (or short), a reset one's as its error; the others go")
    func refusedAndFailedSendsComeBackPerSocket() throws {
        let (_, pairs) = try pairs(3)
        let (full, _) = pairs[0], (fine, fineReader) = pairs[1], (reset, resetPeer) = pairs[2]
        // Fill the first socket until the kernel refuses more (its peer never reads).
        let chunk = [UInt8](repeating: 7, count: 64 * 1024)
        var filled = 0
        while case .wrote(let n) = try chunk.withUnsafeBytes({ try full.write($0) }) { filled += n }
        #expect(filled > 0)
        // The third's peer resets the connection (SO_LINGER 0), and the RST has arrived once it is readable.
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        #expect(setsockopt(resetPeer.fileDescriptor, SOL_SOCKET, SO_LINGER, &linger,
                           socklen_t(MemoryLayout<Glibc.linger>.size)) == 0)
        resetPeer.close()
        #expect(try reset.wait(for: .readable, timeout: .seconds(5)))

        let batch = try SendBatch(sends: 8, bytes: 64 * 1024)
        let record = netPattern(count: 4096, seed: 3)
        for socket in [full, fine, reset] { _ = try add(record, to: socket, in: batch) }
        var outcomes: [SendBatch.Outcome] = []
        batch.submit { _, outcome, _ in outcomes.append(outcome) }
        #expect(outcomes.count == 3)
        switch outcomes[0] {
        case .success(.wouldBlock): break
        case .success(.wrote(let n)): #expect(n < record.count, "a full socket took the whole record")
        case .failure(let error): Issue.record("the full socket's send failed: \(error)")
        }
        #expect((try? outcomes[1].get()) == .wrote(record.count))
        guard case .failure(let error) = outcomes[2] else {
            Issue.record("the reset socket's send did not fail: \(outcomes[2])")
            return
        }
        #expect(error.isConnectionLoss, "\(error)")
        #expect(error.operation == "send")
        #expect(try read(record.count, from: fineReader) == record)
    }

    @Test("room runs out with the sends or the bytes; an embedded or closed socket has no descriptor to send to")
    func roomAndSocketsItTakes() throws {
        let (_, pairs) = try pairs(3)
        let batch = try SendBatch(sends: 2, bytes: 1024)
        #expect(batch.room(atLeast: 1025) == nil)
        _ = try add([1, 2, 3], to: pairs[0].0, in: batch)
        _ = try add([4, 5, 6], to: pairs[1].0, in: batch)
        #expect(batch.room(atLeast: 1) == nil, "two sends fill a batch of two")
        batch.submit { _, outcome, _ in #expect((try? outcome.get()) == .wrote(3)) }
        #expect(batch.room(atLeast: 1024) != nil, "a submitted batch has all its room again")

        let (embedded, _) = TCPSocket.embedded()
        #expect(embedded.sendDescriptor == -1)
        #expect(pairs[2].0.sendDescriptor == pairs[2].0.fileDescriptor && pairs[2].0.sendDescriptor >= 0)
        pairs[2].0.close()
        #expect(pairs[2].0.sendDescriptor == -1)
    }

    @Test("a ring that fails sends what it holds one send at a time, and stays off")
    func aFailingRingFallsBackToOneSendEach() throws {
        let (_, pairs) = try pairs(3)
        let batch = try SendBatch(sends: 8, bytes: 64 * 1024)
        // The ring's descriptor now names /dev/null: io_uring_enter fails (EOPNOTSUPP), as for a ring the kernel
        // no longer serves. (Replaced, not closed: another thread may reuse a closed descriptor's number.)
        let ring = batch.ringDescriptor
        let null = open("/dev/null", O_RDWR)
        #expect(ring >= 0 && null >= 0)
        #expect(dup2(null, ring) == ring)
        close(null)
        for round in 0..<2 {
            let records = pairs.indices.map { netPattern(count: 200 + $0, seed: $0 + 10 * round) }
            for (index, (writer, _)) in pairs.enumerated() { _ = try add(records[index], to: writer, in: batch) }
            var outcomes: [SendBatch.Outcome] = []
            batch.submit { _, outcome, _ in outcomes.append(outcome) }
            #expect(outcomes.map { try? $0.get() } == records.map { .wrote($0.count) })
            #expect(!batch.isWorking, "the ring stays off after it failed")
            for (index, (_, reader)) in pairs.enumerated() {
                #expect(try read(records[index].count, from: reader) == records[index])
            }
        }
    }
}
