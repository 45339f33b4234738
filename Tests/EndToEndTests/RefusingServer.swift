import Foundation
import Glibc
import MemoNet
import MemoTLS
import MemoWire
import ServerTestSupport
import Synchronization

/// A TLS server on loopback that welcomes every client with a generous frame limit (16 MiB) and answers the first
/// request of each connection with a closing `error` that carries request id 0, as a server does for a frame that
/// broke the rules without saying which; then it closes. It counts the requests it saw, on every connection.
final class RefusingServer: Sendable {
    let port: UInt16
    let code: ErrorCode
    private let listener: ListeningSocket
    private let context: TLSContext
    private let requests = Atomic<Int>(0)

    init(certificates: TestCertificates, code: ErrorCode) throws {
        self.code = code
        let path = certificates.path
        context = try TLSContext(.server(
            certificateChainPath: path + "/server.crt", privateKeyPath: path + "/server.key",
            trustedCAPath: path + "/ca.crt"))
        listener = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        _ = fcntl(listener.fileDescriptor, F_SETFL, fcntl(listener.fileDescriptor, F_GETFL) & ~O_NONBLOCK)
        port = try listener.localAddress().port
        Thread.detachNewThread { [self] in
            while true {
                let fd = accept(listener.fileDescriptor, nil, nil)
                if fd < 0 {
                    if errno == EINTR { continue }
                    return
                }
                Thread.detachNewThread { [self] in
                    serve(fd)
                    close(fd)
                }
            }
        }
    }

    var address: String { "127.0.0.1:\(port)" }
    /// Requests received (hello not counted), over all connections.
    var requestsSeen: Int { requests.load(ordering: .relaxed) }

    func stop() {
        shutdown(listener.fileDescriptor, Int32(SHUT_RDWR))
    }

    /// One connection, blocking: handshake, welcome, then the refusal of the first request.
    private func serve(_ fd: Int32) {
        guard let engine = try? TLSEngine(context: context) else { return }
        var decoder = FrameDecoder(maxFrameSize: 16 << 20)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        func flush() {
            var out: [UInt8] = []
            engine.takeOutbound(into: &out)
            var offset = 0
            while offset < out.count {
                let written = out.withUnsafeBytes { send(fd, $0.baseAddress! + offset, out.count - offset,
                                                         Int32(MSG_NOSIGNAL)) }
                if written < 0, errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return }
            engine.feed(buffer[..<count])
            do {
                if !engine.isHandshakeComplete {
                    let state = try engine.handshake()
                    flush()
                    guard state == .done else { continue }
                }
                var plaintext: [UInt8] = []
                _ = try engine.readPlaintext(into: &plaintext)
                decoder.append(plaintext)
                while let frame = try decoder.next() {
                    if frame.type == Message.Kind.hello.rawValue {
                        try engine.writePlaintext(Message.welcome(
                            version: WireProtocol.version, revision: 0, maxFrameSize: 16 << 20, role: .readWrite,
                            server: "refusing").frame(requestID: frame.requestID))
                        continue
                    }
                    if frame.type == Message.Kind.ping.rawValue, case .ping(let nonce)? = try? Message(frame: frame) {
                        // The client's keepalive, answered as a server does: it is not a request to refuse.
                        try engine.writePlaintext(Message.pong(nonce: nonce).frame(requestID: frame.requestID))
                        continue
                    }
                    requests.add(1, ordering: .relaxed)
                    try engine.writePlaintext(Message.error(code: code, message: "refused").frame(requestID: 0))
                    engine.shutdown()
                    flush()
                    return
                }
                flush()
            } catch {
                return
            }
        }
    }
}
