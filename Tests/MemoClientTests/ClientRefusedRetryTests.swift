import ClientTestSupport
import Foundation
import MemoClient
import MemoModel
import MemoWire
import ServerTestSupport
import Testing

@Suite("MemoConnection: a refused certificate is not retried in a tight loop, and the reason and role are published")
struct ClientRefusedRetryTests {
    @Test func aTLSRefusalIsTriedAgainOnlyAfterTheRefusedDelayNotTheShortBackoff() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let other = try TestCertificates()
        var configuration = server.clientConfiguration()
        configuration.caPath = other.path + "/ca.crt"  // we do not trust the server's certificate
        // With a backoff of 1 ms the second try would follow the first at once; a refusal waits the refused delay.
        configuration.reconnect = ReconnectPolicy(
            initialDelay: .milliseconds(1), maximumDelay: .milliseconds(1), refusedDelay: .milliseconds(600))
        // Timed from before the first attempt: when the test sees the failure may be later than when it happened.
        let started = ContinuousClock.now
        let client = try MemoConnection.start(configuration)
        defer { client.close() }
        let failure = try await firstValue(of: client.connectionFailure, "the first failure") { $0 != nil }
        guard case .tlsRefused? = failure else {
            Issue.record("expected a TLS refusal, got \(String(describing: failure))")
            return
        }
        _ = try await firstValue(of: client.connectionAttempts, "the second attempt") { $0 >= 2 }
        #expect(ContinuousClock.now - started >= .milliseconds(600))
    }

    @Test func theWelcomeSaysWhetherTheCertificateIsReadOnly() async throws {
        let server = try TestServer()
        defer { server.stop() }
        let reader = try MemoConnection.start(server.clientConfiguration("reader"))
        defer { reader.close() }
        #expect(try await firstValue(of: reader.role, "the reader's role") { $0 != nil } == .readOnly)
        let writer = try MemoConnection.start(server.clientConfiguration())
        defer { writer.close() }
        #expect(try await firstValue(of: writer.role, "the writer's role") { $0 != nil } == .readWrite)
        #expect((writer.connectionFailure.value ?? nil) == nil)
    }
}
