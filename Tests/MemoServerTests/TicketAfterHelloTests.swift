import Foundation
import MemoModel
import MemoNet
import MemoPKI
import MemoTLS
import MemoTestSupport
import MemoWire
import TLSTestSupport
import Testing

@testable import MemoServer

/// When the server's TLS 1.3 session ticket is written: with the answer to hello, never between the handshake and
/// the read of hello. A ticket written as soon as the client's Finished is read reaches a client that may already
/// have sent hello and a request and closed its socket; its kernel then answers with a reset.
@Suite struct TicketAfterHelloTests {
    /// A client that keeps OpenSSL's records, so that it reads the server's ticket (as memo-client does).
    private func ticketReadingClient(_ fixture: TLSFixture) throws -> TLSContext {
        var configuration = TLSConfiguration.client(
            trustedCAPath: fixture.certs.caCertificatePath,
            certificateChainPath: fixture.certs.clientCertificatePath, privateKeyPath: fixture.certs.clientKeyPath)
        configuration.recordLayer = .openSSL
        return try TLSContext(configuration)
    }

    /// Sends the ClientHello, takes the server's flight and sends the client's Finished alone; returns what the
    /// server wrote after reading that Finished.
    private func sendFinishedAlone(_ embedded: EmbeddedConnection) throws -> [UInt8] {
        _ = try embedded.client.handshake()
        var bytes: [UInt8] = []
        embedded.client.takeOutbound(into: &bytes)
        embedded.peer.write(bytes)
        embedded.loop.run()
        embedded.client.feed(embedded.peer.read())
        _ = try embedded.client.handshake()
        try #require(embedded.client.isHandshakeComplete)
        bytes = []
        embedded.client.takeOutbound(into: &bytes)
        try #require(!bytes.isEmpty, "the client's Finished")
        embedded.peer.write(bytes)
        embedded.loop.run()
        try #require(embedded.connection.tls.isHandshakeComplete, "the server read the Finished")
        return embedded.peer.read()
    }

    @Test func theServerWritesNothingAfterTheClientsFinishedUntilItHasReadHello() throws {
        try withTemporaryDirectory { directory in
            let fixture = try TLSFixture(directory: directory)
            let embedded = try EmbeddedConnection(fixture: fixture, clientContext: try ticketReadingClient(fixture))
            #expect(try sendFinishedAlone(embedded).isEmpty, "a ticket written before hello was read")
            #expect(embedded.connection.phase == .handshaking)

            // Hello and a create behind it: both are read and answered, the ticket ahead of the answers.
            let id = UUID()
            try embedded.client.writePlaintext(
                Message.hello(minVersion: 1, maxVersion: WireProtocol.version, client: "ticket").frame(requestID: 1)
                    + Message.create(id: id, insertMicros: nil, content: "behind hello").frame(requestID: 2))
            embedded.exchange()
            let messages = try embedded.received()
            guard messages.count == 2, case .welcome = messages[0], case .memo(let memo) = messages[1] else {
                Issue.record("expected a welcome and the created memo, got \(messages)")
                return
            }
            #expect(memo.id == id)
            #expect(embedded.client.takeNewSession() != nil, "the client got the ticket with the welcome")
        }
    }

    /// A client that sends only hello and waits gets the ticket with its welcome (memo-client saves it).
    @Test func aClientThatSendsOnlyHelloGetsTheTicketWithTheWelcome() throws {
        try withTemporaryDirectory { directory in
            let fixture = try TLSFixture(directory: directory)
            let embedded = try EmbeddedConnection(fixture: fixture, clientContext: try ticketReadingClient(fixture))
            try embedded.handshake()
            #expect(embedded.client.takeNewSession() == nil)
            try embedded.hello()
            #expect(embedded.client.takeNewSession() != nil)
        }
    }

    /// Held writes are not held forever: a client that never sends hello gets the ticket with the error that
    /// closes its connection at the handshake deadline.
    @Test func aClientThatNeverSendsHelloGetsTheHandshakeDeadlinesError() throws {
        try withTemporaryDirectory { directory in
            let fixture = try TLSFixture(directory: directory)
            var limits = ServerLimits()
            limits.handshakeTimeout = 5
            let embedded = try EmbeddedConnection(
                fixture: fixture, limits: limits, clientContext: try ticketReadingClient(fixture))
            #expect(try sendFinishedAlone(embedded).isEmpty)
            embedded.loop.advanceTime(by: .seconds(6))
            embedded.exchange()
            #expect(try embedded.received()
                == [.error(code: .handshakeTimeout, message: "hello was not sent within 5.0 seconds")])
            #expect(embedded.connection.phase == .lingering)
        }
    }
}
