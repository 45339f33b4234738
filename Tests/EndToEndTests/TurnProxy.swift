import Foundation
import Glibc
import MemoNet
import ServerTestSupport
import Synchronization

/// A loopback TCP proxy that counts the client's turns (a turn: what the client sends before the server answers)
/// and calls `beforeClientTurn` with each turn's number before passing its first bytes on. The client's protocol
/// is strictly turn by turn (TLS 1.3: ClientHello; Finished and hello; then each request after the welcome, which
/// the server's session ticket comes with), so turn 3 is the client's first request: a test can stop the server
/// there, with the request sent by the client and not yet read by the server. `add` sends its create behind hello, in turn 2.
final class TurnProxy: Sendable {
    private struct State {
        var clientSpokeLast = false
        var clientTurns = 0
    }

    let port: UInt16
    private let listener: Int32
    private let target: SocketAddress
    private let state = Mutex(State())
    private let book = ProxyBook()
    private let beforeClientTurn: @Sendable (Int) -> Void

    init(to target: SocketAddress, beforeClientTurn: @escaping @Sendable (Int) -> Void) throws {
        self.target = target
        self.beforeClientTurn = beforeClientTurn
        (listener, port) = try loopbackListener()
        Thread.detachNewThread { [self] in
            book.acceptLoop(listener, dialing: target) { client, server in
                Thread.detachNewThread { [self] in pump(from: client, to: server, fromClient: true) }
                Thread.detachNewThread { [self] in pump(from: server, to: client, fromClient: false) }
            }
        }
    }

    var address: String { "127.0.0.1:\(port)" }

    func stop() {
        book.stop(listener: listener)
        close(listener)
    }

    private func pump(from source: Int32, to destination: Int32, fromClient: Bool) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            let turn = state.withLock { state -> Int? in
                defer { state.clientSpokeLast = fromClient }
                guard fromClient, !state.clientSpokeLast else { return nil }
                state.clientTurns += 1
                return state.clientTurns
            }
            if let turn { beforeClientTurn(turn) }
            guard sendAll(buffer[..<count], to: destination) else { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
    }
}
