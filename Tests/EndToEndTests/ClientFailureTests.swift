import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoModel
import MemoNet
import MemoServer
import MemoStore
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Synchronization
import Testing

/// Polls `condition` until it holds; throws after `seconds`.
func waitUntil(_ what: String, seconds: Double = 20, _ condition: () -> Bool) throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while !condition() {
        guard ContinuousClock.now < deadline else { throw ClientTestTimeout(what: what) }
        usleep(10_000)
    }
}

@Suite("memo-client failures: limits, reconnect backoff, TLS after the welcome, a server not up yet", .serialized)
struct ClientFailureTests {
    @Test func contentOverTheLimitIsRefusedBeforeAnythingIsSent() throws {
        let server = try TestServer()
        let proxy = try CuttingProxy(to: server.address)
        defer {
            proxy.stop()
            server.stop()
        }
        for size in [70_000, 2_000_000] {
            let huge = try runClient(["add", "-"], server: proxy.address, certs: server.certificates.path,
                                     stdin: String(repeating: "x", count: size))
            #expect(huge.status == 1)
            #expect(huge.err == "memo-client: content is over the limit of 65536 bytes (standard input holds more "
                + "than 65537; reading stopped there)\n")
        }
        // Words are counted exactly (one argument is at most 128 KiB on Linux).
        let words = try runClient(["add", String(repeating: "y", count: 70_000)], server: proxy.address,
                                  certs: server.certificates.path)
        #expect(words.status == 1)
        #expect(words.err == "memo-client: content is 70000 bytes, over the limit of 65536\n")
        // 65,536 bytes and one final newline are within the limit; one more byte is not.
        let exact = String(repeating: "z", count: 65_537)
        let over = try runClient(["add", "-"], server: proxy.address, certs: server.certificates.path, stdin: exact)
        #expect(over.err == "memo-client: content is 65537 bytes, over the limit of 65536\n")
        #expect(proxy.connections == 0)
    }

    @Test func aRequestOverTheServersFrameLimitFailsWithoutBeingSentOrRetried() async throws {
        var limits = ServerLimits()
        limits.maxFrameSize = 16 * 1024
        let server = try TestServer(limits: limits)
        let proxy = try CuttingProxy(to: server.address)
        defer {
            proxy.stop()
            server.stop()
        }
        var configuration = server.clientConfiguration(timeout: .seconds(10))
        configuration.server = proxy.address
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        // The server's own answer (not the client's 10 s deadline, which would throw `timedOut`) ends the write.
        do {
            _ = try await client.create(content: String(repeating: "x", count: 30_000))
            Issue.record("a frame over the server's limit was accepted")
        } catch ClientError.server(let code, let message) {
            #expect(code == .frameTooLarge)
            #expect(message.contains("over the server's frame limit of 16384"), "\(message)")
        }
        // The connection is still the first one, and still serves.
        let small = try await client.create(content: "small")
        #expect(try await client.get(id: small.id) == small)
        #expect(proxy.connections == 1)
    }

    @Test(arguments: [ErrorCode.malformedFrame, .frameTooLarge, .unknownMessageType, .invalidUTF8])
    func aRequestTheServerRefusedAsAFrameIsNeverSentAgain(code: ErrorCode) async throws {
        let certificates = try TestCertificates()
        let server = try RefusingServer(certificates: certificates, code: code)
        defer { server.stop() }
        let configuration = ClientConfiguration(
            server: server.address, caPath: certificates.path + "/ca.crt",
            certificatePath: certificates.path + "/client.crt", keyPath: certificates.path + "/client.key",
            requestTimeout: .seconds(60))
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        for (index, content) in ["refused as a frame", "the next request"].enumerated() {
            do {
                _ = try await client.create(content: content)
                Issue.record("the refused request succeeded")
            } catch ClientError.server(let refused, let message) {
                #expect(refused == code)
                #expect(message == "refused")
            }
            // The client reconnects for the next request, but the refused one is not sent again with it.
            #expect(server.requestsSeen == index + 1)
        }
        // No clock bound: each answer is the server's refusal (caught above), not a timeout, so neither request
        // waited for its deadline; a bound on the wall time only measured the machine's load.
    }

    @Test func aServerThatFailsRightAfterTheWelcomeIsRetriedWithGrowingDelays() throws {
        let server = try TestServer()
        let proxy = try RecordProxy(to: server.address, mode: .cutAfterWelcome)
        defer {
            proxy.stop()
            server.stop()
        }
        let result = try runClient(["list", "--timeout", "3"], server: proxy.address, certs: server.certificates.path)
        #expect(result.status == 6, "\(result.err)")
        // 0.1, 0.2, 0.4, 0.8, 1.6 s (less jitter) between tries: a handful of connections, not hundreds.
        #expect(proxy.connections >= 2 && proxy.connections <= 12, "\(proxy.connections) connections")
    }

    @Test func aTLSFailureAfterTheWelcomeExitsFiveWithItsReasonWithoutRetryingInALoop() throws {
        let server = try TestServer()
        let proxy = try RecordProxy(to: server.address, mode: .corruptAfterWelcome)
        defer {
            proxy.stop()
            server.stop()
        }
        let result = try runClient(["list", "--timeout", "10"], server: proxy.address, certs: server.certificates.path)
        #expect(result.status == 5, "\(result.err)")
        #expect(result.err.hasPrefix("memo-client: TLS with \(proxy.address) failed: "), "\(result.err)")
        #expect(result.err.split(separator: "\n").count == 1)
        // Retrying until the 10 s deadline would have made several connections (backoff 0.1, 0.2, 0.4, ... s).
        #expect(proxy.connections <= 2, "\(proxy.connections) connections")
    }

    @Test func aRefusedConnectionIsRetriedUntilTheTimeoutAndOnlyThenExitsSix() throws {
        let certs = try TestCertificates()
        let closed = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let port = try closed.localAddress().port
        closed.close()
        let started = ContinuousClock.now
        let refused = try runClient(["list", "--timeout", "1"], server: "127.0.0.1:\(port)", certs: certs.path)
        #expect(refused.status == 6)
        #expect(refused.err == "memo-client: cannot reach 127.0.0.1:\(port): connection refused\n")
        #expect(ContinuousClock.now - started >= .milliseconds(900))
    }

    @Test func aMalformedAddressIsNotRetriedUntilTheTimeout() async throws {
        let certs = try TestCertificates()
        let configuration = ClientConfiguration(
            server: "memo.example:port", caPath: certs.path + "/ca.crt", certificatePath: certs.path + "/client.crt",
            keyPath: certs.path + "/client.key", requestTimeout: .seconds(120))
        let started = ContinuousClock.now
        do {
            _ = try await MemoConnection.connect(configuration)
            Issue.record("connected to a malformed address")
        } catch ClientError.unreachable(let server, let reason) {
            #expect(server == "memo.example:port")
            #expect(reason.contains("is not an address"), "\(reason)")
        }
        // Retried, it would end only at the 120 s deadline; refused at once, it ends in milliseconds. A bound at
        // half the deadline tells the two apart however loaded the machine is.
        #expect(ContinuousClock.now - started < .seconds(60))
    }

    @Test func aCommandRunRightAfterTheServerIsStartedWaitsForIt() throws {
        let certs = try TestCertificates()
        // A port that answers and hangs up at once, as a server still starting would look; it counts the tries.
        let early = try ListeningSocket.bind(SocketAddress(parsing: "127.0.0.1:0"))
        let port = try early.localAddress().port
        _ = fcntl(early.fileDescriptor, F_SETFL, fcntl(early.fileDescriptor, F_GETFL) & ~O_NONBLOCK)
        let tries = Atomic<Int>(0)
        Thread.detachNewThread {
            while true {
                let fd = accept(early.fileDescriptor, nil, nil)
                if fd < 0 { return }
                tries.add(1, ordering: .relaxed)
                close(fd)
            }
        }
        let outcome = Mutex<(status: Int32, out: String, err: String)?>(nil)
        Thread.detachNewThread {
            let result = try? runClient(["add", "quick", "start"], server: "127.0.0.1:\(port)", certs: certs.path)
            outcome.withLock { $0 = result ?? (-1, "", "could not run") }
        }
        try waitUntil("the client to try twice") { tries.load(ordering: .relaxed) >= 2 }
        shutdown(early.fileDescriptor, Int32(SHUT_RDWR))
        early.close()
        // The real server comes up on that port now.
        var configuration = ServerConfiguration(listen: "127.0.0.1:\(port)", certsDirectory: certs.path)
        configuration.threads = 1
        let store = MemoryStore()
        let server = try MemoServer.start(configuration, store: store, log: .silent)
        defer {
            server.shutdown(timeout: 5)
            store.close()
        }
        try waitUntil("the client to finish") { outcome.withLock { $0 != nil } }
        let result = try #require(outcome.withLock { $0 })
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out.hasSuffix("\tquick start\n"))
    }
}
