import Foundation
import MemoClient
import MemoNet
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

/// The client side of close_notify: a server that ends the session with close_notify gets one back (RFC 8446
/// §6.1) before the client closes its socket.
@Suite("Client: close_notify answered")
struct ClientCloseNotifyTests {
    /// A one-connection TLS server on a plain socket: welcomes the client, sends close_notify, then reports how
    /// the client's side ended.
    static func serveOnce(_ listener: ListeningSocket, _ context: TLSContext) throws -> String {
        var pollEntry = pollfd(fd: listener.fileDescriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&pollEntry, 1, 10_000) == 1, let accepted = try listener.accept() else { return "no client" }
        let socket = accepted.socket
        defer { socket.close() }
        let engine = try TLSEngine(context: context)
        let deadline = ContinuousClock.now + .seconds(10)
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        var decoder = FrameDecoder()
        var plaintext: [UInt8] = []

        /// Reads once; returns false at end of stream.
        func readOnce() throws -> Bool {
            guard try socket.wait(for: .readable, timeout: deadline - ContinuousClock.now) else {
                throw ClientTestTimeout(what: "the client")
            }
            let result = try buffer.withUnsafeMutableBytes { try socket.read(into: $0) }
            guard case .bytes(let count) = result else { return result != .eof }
            engine.feed(buffer[..<count])
            return true
        }
        func flush() throws {
            var out: [UInt8] = []
            engine.takeOutbound(into: &out)
            var offset = 0
            while offset < out.count {
                let result = try out[offset...].withUnsafeBytes { try socket.write($0) }
                if case .wrote(let count) = result { offset += count } else {
                    _ = try socket.wait(for: .writable, timeout: .seconds(5))
                }
            }
        }

        while try engine.handshake() != .done {
            try flush()
            guard try readOnce() else { return "closed during the handshake" }
        }
        try flush()
        var hello: Frame?
        while hello == nil {
            _ = try engine.readPlaintext(into: &plaintext)
            decoder.append(plaintext)
            plaintext.removeAll()
            if let frame = try decoder.next() {
                hello = frame
                break
            }
            guard try readOnce() else { return "closed before hello" }
        }
        let welcome = Message.welcome(
            version: WireProtocol.version, revision: 0, maxFrameSize: UInt32(WireProtocol.defaultMaxFrameSize),
            role: .readWrite, server: "close-notify-test")
        try engine.writePlaintext(welcome.frame(requestID: hello!.requestID))
        engine.shutdown()
        try flush()
        while true {
            if try engine.readPlaintext(into: &plaintext) == .closed { return "close_notify" }
            guard try readOnce() else { return "end of stream without close_notify" }
        }
    }

    @Test func theClientAnswersTheServersCloseNotify() async throws {
        let certificates = try TestCertificates()
        let path = certificates.path
        let context = try TLSContext(.server(
            certificateChainPath: path + "/server.crt", privateKeyPath: path + "/server.key",
            trustedCAPath: path + "/ca.crt"))
        let listener = try ListeningSocket.bind(try SocketAddress(parsing: "127.0.0.1:0"))
        defer { listener.close() }
        let address = try listener.localAddress()
        let outcome = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let result: String
            do { result = try Self.serveOnce(listener, context) } catch { result = "server failed: \(error)" }
            outcome.withLock { $0 = result }
            done.signal()
        }
        let configuration = ClientConfiguration(
            server: address.description, caPath: path + "/ca.crt", certificatePath: path + "/client.crt",
            keyPath: path + "/client.key", requestTimeout: .seconds(10))
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        #expect(done.wait(timeout: .now() + 15) == .success)
        #expect(outcome.withLock { $0 } == "close_notify")
    }
}
