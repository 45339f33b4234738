import Foundation
import Glibc
import MemoNet
import Synchronization

/// A loopback TCP proxy that reads the TLS records going by and breaks each connection right after the server's
/// welcome: the handshake and the welcome pass, so the client is live, and then the connection fails.
///
/// The welcome is the first record the server sends after the client's first encrypted record (in TLS 1.3 the
/// server's handshake flight all comes before the client's Finished, and the server sends no tickets).
package final class RecordProxy: Sendable {
    package enum Mode: Sendable {
        /// Close both sides as soon as the welcome has been passed on.
        case cutAfterWelcome
        /// Flip a bit in every server record after the welcome: the client's TLS fails to verify them.
        case corruptAfterWelcome
    }

    /// One proxied connection: whether the client has sent an encrypted record, and how many server records
    /// came after that.
    private final class Link: Sendable {
        let clientEncrypted = Atomic<Bool>(false)
        let serverRecordsAfter = Atomic<Int>(0)
    }

    package let port: UInt16
    package let mode: Mode
    private let listener: ListeningSocket
    private let target: SocketAddress
    private let book = ProxyBook()

    package init(to target: SocketAddress, mode: Mode) throws {
        self.target = target
        self.mode = mode
        listener = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        // accept(2) below blocks on its own thread.
        _ = fcntl(listener.fileDescriptor, F_SETFL, fcntl(listener.fileDescriptor, F_GETFL) & ~O_NONBLOCK)
        port = try listener.localAddress().port
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    package var address: String { "127.0.0.1:\(port)" }
    /// Connections accepted so far.
    package var connections: Int { book.connections }

    package func stop() {
        book.stop(listener: listener.fileDescriptor)
    }

    private func acceptLoop() {
        book.acceptLoop(listener.fileDescriptor, dialing: target) { client, server in
            let link = Link()
            Thread.detachNewThread { [self] in pump(from: client, to: server, towardServer: true, link) }
            Thread.detachNewThread { [self] in pump(from: server, to: client, towardServer: false, link) }
        }
    }

    /// Copies whole TLS records from `source` to `destination`, looking at each.
    private func pump(from source: Int32, to destination: Int32, towardServer: Bool, _ link: Link) {
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        reading: while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            pending += buffer[..<count]
            while pending.count >= 5 {
                let length = 5 + Int(pending[3]) << 8 + Int(pending[4])
                guard pending.count >= length else { break }
                var record = Array(pending[..<length])
                pending.removeFirst(length)
                var cutAfter = false
                if towardServer {
                    if record[0] == 23 { link.clientEncrypted.store(true, ordering: .sequentiallyConsistent) }
                } else if link.clientEncrypted.load(ordering: .sequentiallyConsistent) {
                    let index = link.serverRecordsAfter.add(1, ordering: .sequentiallyConsistent).newValue
                    switch mode {
                    case .cutAfterWelcome: cutAfter = index >= 1
                    case .corruptAfterWelcome: if index >= 2 { record[length - 1] ^= 0x01 }
                    }
                }
                guard write(record, to: destination) else { break reading }
                if cutAfter { break reading }
            }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }

    private func write(_ bytes: [UInt8], to fd: Int32) -> Bool {
        sendAll(bytes[...], to: fd)
    }
}

