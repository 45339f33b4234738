import Foundation
import MemoNet
import MemoTLS
import MemoWire

/// A peer that sends without reading, then reads everything: how the server's backpressure is checked. The
/// ciphertext the socket does not take is kept (never half a record lost), so every request sent is a whole one.
public final class Flood {
    public let connection: ProbeConnection
    private var unsent: [UInt8] = []
    private var unsentOffset = 0
    /// Requests whose bytes are all in TLS (sent, or waiting in `unsent`).
    public private(set) var requests = 0

    public init(_ connection: ProbeConnection) {
        self.connection = connection
    }

    /// Seals `plaintext` (`count` requests) and writes what the socket takes now, without waiting.
    /// - Returns: false once the socket took nothing and more is waiting (the peer has stopped reading).
    @discardableResult
    public func send(_ plaintext: [UInt8], requests count: Int) throws -> Bool {
        try connection.tls.writePlaintext(plaintext)
        requests += count
        connection.tls.takeOutbound(into: &unsent)
        return try writeSome()
    }

    /// Sends `count` KeyUpdate(update_requested) records, each under the key the one before it announced.
    public func requestKeyUpdates(_ count: Int) throws {
        for _ in 0..<count { try connection.tls.requestKeyUpdate() }
        connection.tls.takeOutbound(into: &unsent)
        try writeSome()
    }

    /// Sends `chunk(i)` (each `perChunk` requests) until `chunks` are sent or the socket has taken nothing for
    /// `stallAfter`. `sample` runs after each chunk and while waiting. - Returns: whether the sending stalled.
    public func sendUntilStalled(
        chunks: Int, perChunk: Int, stallAfter: Duration, chunk: (Int) -> [UInt8], sample: () -> Void
    ) throws -> Bool {
        for index in 0..<chunks {
            if unsentOffset < unsent.count {
                // The socket is full: wait for room, up to the stall limit.
                let deadline = ContinuousClock.now + stallAfter
                while unsentOffset < unsent.count {
                    sample()
                    let left = deadline - ContinuousClock.now
                    guard left > .zero else { return true }
                    if try connection.socket.wait(for: .writable, timeout: min(left, .milliseconds(50))) {
                        try writeSome()
                    }
                }
            }
            try send(chunk(index), requests: perChunk)
            sample()
        }
        return false
    }

    /// Sends what is left while reading, until `expected` frames passing `filter` arrived or `within` passes.
    /// - Returns: how many frames passed `filter`, and whether the server closed the connection.
    public func drain(expecting expected: Int, within: Duration, filter: (Frame) -> Bool) -> (Int, closed: Bool) {
        let deadline = ContinuousClock.now + within
        var count = 0
        while count < expected, ContinuousClock.now < deadline {
            do {
                if unsentOffset < unsent.count { try writeSome() }
                for frame in try connection.readAvailable() where filter(frame) { count += 1 }
                if connection.peerClosed { return (count, true) }
                let interest: Interest = unsentOffset < unsent.count ? .all : .readable
                _ = try connection.socket.wait(for: interest, timeout: .milliseconds(50))
            } catch {
                return (count, true)
            }
        }
        return (count, false)
    }

    @discardableResult
    private func writeSome() throws -> Bool {
        var wrote = false
        while unsentOffset < unsent.count {
            let offset = unsentOffset
            let result = try unsent.withUnsafeBytes { raw in
                try connection.socket.write(UnsafeRawBufferPointer(rebasing: raw[offset...]))
            }
            guard case .wrote(let count) = result else { return wrote }
            unsentOffset += count
            wrote = true
        }
        unsent.removeAll(keepingCapacity: true)
        unsentOffset = 0
        return true
    }
}
