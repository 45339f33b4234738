import Foundation
import MemoNet
import MemoProbe
import MemoServer
import MemoTLS
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

/// The record layer against TLS stacks that share none of its code, with both record layers (`own`, `openssl`):
/// the server against `openssl s_client` and `gnutls-cli`, the client engine against `openssl s_server` and
/// `gnutls-serv`. KeyUpdates both ways, one-byte and maximum records, padded records, tickets sent to the client,
/// tampering, close_notify both ways.
@Suite("TLS interop with OpenSSL and GnuTLS programs", .serialized, .timeLimit(.minutes(2)))
struct TLSInteropTests {
    static let layers: [TLSRecordLayerChoice] = [.handOff, .openSSL]

    // Every frame sent through a command-line client ends in "\n": gnutls-cli reads its input in lines (its
    // inline commands, such as ^rekey^, must start one), and s_client takes a line starting with K as a command.
    static let hello = Message.hello(minVersion: 1, maxVersion: 1, client: "interop\n").frame(requestID: 1)
    static let ping = Message.ping(nonce: 10).frame(requestID: 2)
    static let pong = Message.pong(nonce: 10).frame(requestID: 2)
    static let bigContent = String(repeating: "m", count: 40_000) + "\n"
    static let create = Message.create(id: nil, insertMicros: nil, content: bigContent).frame(requestID: 3)
    static let goingAway = Message.goingAway(code: .shuttingDown, message: "bye\n").frame(requestID: 0)
    /// The end of the welcome frame: the server's name with its length.
    static let welcomeTail: [UInt8] = [0, 0, 0, 11] + Array("memo-server".utf8)

    /// A server whose log lines are kept.
    static func server(_ records: TLSRecordLayerChoice) throws -> (TestServer, LogLines) {
        let lines = LogLines()
        let log = ServerLog { line in lines.lines.withLock { $0.append(line) } }
        return (try TestServer(log: log, records: records), lines)
    }

    static func clientArguments(_ tool: String, _ server: TestServer, messages: String) -> [String] {
        let certs = server.certificates.path
        let port = "\(server.address.port)"
        if tool == "gnutls-cli" {
            return ["--x509cafile", certs + "/ca.crt", "--x509certfile", certs + "/client.crt",
                    "--x509keyfile", certs + "/client.key", "-p", port, "127.0.0.1", "--inline-commands"]
        }
        // -record_padding: every record s_client sends is padded to a multiple of 512 bytes.
        return ["s_client", "-connect", "127.0.0.1:" + port, "-CAfile", certs + "/ca.crt",
                "-cert", certs + "/client.crt", "-key", certs + "/client.key", "-quiet", "-no_ign_eof",
                "-msg", "-msgfile", messages, "-record_padding", "512"]
    }

    @Test(.enabled(if: InteropTools.runnable("openssl")), arguments: layers)
    func theServerAgainstOpenSSLSClient(records: TLSRecordLayerChoice) throws {
        try serverSession(tool: "openssl", records: records)
    }

    @Test(.enabled(if: InteropTools.runnable("gnutls-cli"), "gnutls-bin is not installed"), arguments: layers)
    func theServerAgainstGnuTLSCli(records: TLSRecordLayerChoice) throws {
        try serverSession(tool: "gnutls-cli", records: records)
    }

    /// hello, two KeyUpdates requested by the peer (each answered before the next record), a ping, a 40 KB create
    /// whose answer needs maximum-size records, then going-away: the server closes with close_notify. A second
    /// session ends from the peer's side: its close_notify reaches the server.
    func serverSession(tool: String, records: TLSRecordLayerChoice) throws {
        let (server, log) = try Self.server(records)
        defer { server.stop() }
        let messages = server.certificates.path + "/messages.txt"
        let peer = try PeerProcess(tool, Self.clientArguments(tool, server, messages: messages))
        defer { peer.stop() }
        peer.write(Self.hello)
        try #require(peer.waitForOutput(Self.welcomeTail), "no welcome: \(peer.transcript)")

        for round in 1...2 {
            peer.write(Array((tool == "gnutls-cli" ? "^rekey^\n" : "K\n").utf8))
            let updated = peer.waitUntil {
                tool == "gnutls-cli"
                    ? occurrences(of: "- Rekey was completed", in: peer.transcript) >= round
                    : occurrences(of: "KEYUPDATE", in: peer.stderr) >= round
            }
            try #require(updated, "KeyUpdate \(round) not sent: \(peer.transcript)")
            peer.write(Self.ping)
            #expect(peer.waitForOutput(Self.pong, times: round), "no pong after KeyUpdate \(round)")
        }
        peer.write(Self.create)
        let answered = peer.waitUntil {
            occurrences(of: Array(Self.bigContent.utf8), in: peer.stdout) >= 1
        }
        #expect(answered, "the 40 KB memo did not come back")

        peer.write(Self.goingAway)
        #expect(peer.waitForExit(), "the peer did not end after the server closed")
        if tool == "gnutls-cli" {
            #expect(peer.transcript.contains("- Peer has closed the GnuTLS connection"), "\(peer.transcript)")
        } else {
            let text = (try? String(contentsOfFile: messages, encoding: .utf8)) ?? ""
            #expect(text.contains("<<< TLS 1.3, Alert [length 0002], warning close_notify"), "\(text)")
            // Each request was answered by exactly one KeyUpdate of the server's.
            #expect(occurrences(of: ">>> TLS 1.3, Handshake [length 0005], KeyUpdate", in: text) == 2)
            #expect(occurrences(of: "<<< TLS 1.3, Handshake [length 0005], KeyUpdate", in: text) == 2)
        }

        // The peer ends the second session: end of input makes it send close_notify.
        let second = try PeerProcess(tool, Self.clientArguments(tool, server, messages: messages + "2"))
        defer { second.stop() }
        second.write(Self.hello)
        try #require(second.waitForOutput(Self.welcomeTail), "no welcome: \(second.transcript)")
        second.closeInput()
        let closed = second.waitUntil {
            log.lines.withLock { $0.contains { $0.contains("reason=\"peer sent close_notify\"") } }
        }
        #expect(closed, "\(log.lines.withLock { $0 })")
    }

    // MARK: The client engine against OpenSSL and GnuTLS servers

    /// A free loopback port for a server program (bound, then released).
    static func freePort() throws -> Int {
        let listener = try ListeningSocket.bind(try SocketAddress(parsing: "127.0.0.1:0"))
        defer { listener.close() }
        return Int(try listener.localAddress().port)
    }

    static func startServer(_ tool: String, certs: String, port: Int) throws -> PeerProcess {
        if tool == "gnutls-serv" {
            return try PeerProcess(tool, [
                "--echo", "-p", "\(port)", "--x509certfile", certs + "/server.crt", "--x509keyfile",
                certs + "/server.key", "--x509cafile", certs + "/ca.crt", "--require-client-cert", "-q",
            ])
        }
        // -rev answers each line reversed; a line "CLOSE" makes it shut the session down with close_notify.
        return try PeerProcess("openssl", [
            "s_server", "-accept", "127.0.0.1:\(port)", "-cert", certs + "/server.crt", "-key",
            certs + "/server.key", "-CAfile", certs + "/ca.crt", "-Verify", "1", "-rev", "-quiet",
        ])
    }

    /// Connects, retrying while the server program starts.
    static func connect(port: Int, context: TLSContext) throws -> TLSStream {
        let address = try SocketAddress(parsing: "127.0.0.1:\(port)")
        let deadline = ContinuousClock.now + .seconds(20)
        while true {
            do {
                return try TLSStream(address: address, context: context, timeout: .seconds(10))
            } catch let error as NetError where ContinuousClock.now < deadline {
                _ = error
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
    }

    /// Reads until `expected` bytes of plaintext came (or the deadline).
    static func read(_ stream: TLSStream, count expected: Int) throws -> [UInt8] {
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(20)
        while received.count < expected, !stream.peerClosed {
            received += try stream.read(until: deadline, what: "the echo")
        }
        return received
    }

    @Test(.enabled(if: InteropTools.runnable("openssl")), arguments: layers)
    func theClientEngineAgainstOpenSSLSServer(records: TLSRecordLayerChoice) throws {
        try clientSession(tool: "openssl", records: records)
    }

    @Test(.enabled(if: InteropTools.runnable("gnutls-serv"), "gnutls-bin is not installed"), arguments: layers)
    func theClientEngineAgainstGnuTLSServ(records: TLSRecordLayerChoice) throws {
        try clientSession(tool: "gnutls-serv", records: records)
    }

    /// One-byte records, a KeyUpdate we request (the server's answer must be followed), maximum-size records both
    /// ways, the server's session tickets (dropped), close_notify, and a tampered record refused by the server.
    func clientSession(tool: String, records: TLSRecordLayerChoice) throws {
        let certificates = try TestCertificates()
        let certs = certificates.path
        let port = try Self.freePort()
        let server = try Self.startServer(tool, certs: certs, port: port)
        defer { server.stop() }
        var configuration = TLSConfiguration.client(
            trustedCAPath: certs + "/ca.crt", certificateChainPath: certs + "/client.crt",
            privateKeyPath: certs + "/client.key")
        configuration.recordLayer = records
        let context = try TLSContext(configuration)
        let echo = { (line: String) -> [UInt8] in
            tool == "gnutls-serv" ? Array(line.utf8) : Array((String(line.dropLast().reversed()) + "\n").utf8)
        }

        let stream = try Self.connect(port: port, context: context)
        #expect(stream.tls.recordsHandedOff == (records == .handOff))
        for byte in Array("one byte at a time\n".utf8) { try stream.write([byte]) }  // a record each
        #expect(try Self.read(stream, count: 19) == echo("one byte at a time\n"), "\(server.transcript)")

        for round in 0..<2 {
            try stream.tls.requestKeyUpdate()
            let line = "after key update \(round)\n"
            try stream.write(Array(line.utf8))
            #expect(try Self.read(stream, count: line.utf8.count) == echo(line))
        }

        // One write of 40 KB goes out as maximum-size records; s_server -rev reverses lines of up to 16 KiB, so
        // the write is four lines.
        let lines = (0..<4).map { String(repeating: Character(UnicodeScalar(UInt8(97 + $0))), count: 9_999) + "\n" }
        try stream.write(Array(lines.joined().utf8))
        #expect(try Self.read(stream, count: 40_000) == lines.flatMap(echo))

        if tool == "openssl" {
            try stream.write(Array("CLOSE\n".utf8))
            let deadline = ContinuousClock.now + .seconds(20)
            while !stream.tls.peerClosed, ContinuousClock.now < deadline {
                _ = try? stream.read(until: deadline, what: "close_notify")
                if stream.peerClosed { break }
            }
            #expect(stream.tls.peerClosed, "s_server closed without close_notify")
            return
        }
        // gnutls-serv serves again: a second session whose record we tamper with.
        stream.tls.shutdown()
        try stream.write([])
        let tampered = try Self.connect(port: port, context: context)
        try tampered.tls.writePlaintext(Array("tampered\n".utf8))
        var wire: [UInt8] = []
        tampered.tls.takeOutbound(into: &wire)
        wire[wire.count - 3] ^= 0x01  // inside the tag
        _ = try wire.withUnsafeBytes { try tampered.socket.write($0) }
        #expect {
            _ = try Self.read(tampered, count: 9)
        } throws: { error in
            // Our layer names the alert as RFC 8446 does; OpenSSL's reason string says "bad record mac".
            let text = (error as? TLSError)?.description ?? ""
            return text.contains("bad_record_mac") || text.contains("bad record mac")
        }
    }
}
