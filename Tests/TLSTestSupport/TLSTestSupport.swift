import Foundation
import MemoPKI
import MemoTLS
import Testing

/// A CA, server and first client made in a temporary directory with one-day validity.
package struct TLSFixture {
    package let directory: String
    package let certs: CertInitResult

    package init(directory: String, certs: CertInitResult) {
        self.directory = directory
        self.certs = certs
    }

    package init(directory: String, hosts: [String] = []) throws {
        self.directory = directory
        certs = try CertificateAuthority.initialize(
            directory: directory, hosts: hosts, caValidity: .days(1), serverValidity: .days(1),
            clientValidity: .days(1))
    }

    package func serverContext(requireClientCertificate: Bool = true) throws -> TLSContext {
        try TLSContext(
            .server(
                certificateChainPath: certs.serverCertificatePath, privateKeyPath: certs.serverKeyPath,
                trustedCAPath: certs.caCertificatePath, requireClientCertificate: requireClientCertificate))
    }

    /// A client trusting this fixture's CA (or `trustedCA`) and presenting the first client certificate unless
    /// told otherwise.
    package func clientContext(
        certificate: String?? = nil, key: String?? = nil, trustedCA: String? = nil
    ) throws -> TLSContext {
        try TLSContext(
            .client(
                trustedCAPath: trustedCA ?? certs.caCertificatePath,
                certificateChainPath: certificate ?? certs.clientCertificatePath,
                privateKeyPath: key ?? certs.clientKeyPath))
    }
}

/// What happened to each side of an in-memory handshake.
package struct HandshakeOutcome {
    package var clientDone = false
    package var serverDone = false
    package var clientError: TLSError?
    package var serverError: TLSError?
}

/// Moves bytes between a client and a server engine until both finish or fail.
///
/// In TLS 1.3 the client finishes before the server has checked the client certificate, so a refusal reaches
/// the client as an alert it sees on its next read; the pump does that read when the server failed.
package func pumpHandshake(client: TLSEngine, server: TLSEngine) -> HandshakeOutcome {
    var outcome = HandshakeOutcome()
    var wire: [UInt8] = []
    for _ in 0..<20 {
        if !outcome.clientDone, outcome.clientError == nil {
            do { outcome.clientDone = try client.handshake() == .done } catch { outcome.clientError = error }
        }
        wire.removeAll(keepingCapacity: true)
        client.takeOutbound(into: &wire)
        server.feed(wire)
        if !outcome.serverDone, outcome.serverError == nil {
            do { outcome.serverDone = try server.handshake() == .done } catch { outcome.serverError = error }
        }
        wire.removeAll(keepingCapacity: true)
        server.takeOutbound(into: &wire)
        client.feed(wire)
        let clientSettled = outcome.clientDone || outcome.clientError != nil
        let serverSettled = outcome.serverDone || outcome.serverError != nil
        if clientSettled, serverSettled, !client.hasOutbound, !server.hasOutbound { break }
    }
    if outcome.clientDone, outcome.serverError != nil {
        var sink: [UInt8] = []
        do { _ = try client.readPlaintext(into: &sink) } catch { outcome.clientError = error }
    }
    return outcome
}

/// Moves every outbound byte of `from` into `to`, `chunk` bytes per feed, reading plaintext after each feed.
package func transfer(
    from sender: TLSEngine, to receiver: TLSEngine, chunk: Int, into plaintext: inout [UInt8]
) throws -> TLSEngine.ReadResult {
    var wire: [UInt8] = []
    sender.takeOutbound(into: &wire)
    var last = TLSEngine.ReadResult.wantsMore
    var offset = 0
    while offset < wire.count {
        let end = min(offset + chunk, wire.count)
        wire[offset..<end].withUnsafeBytes { receiver.feed($0) }
        offset = end
        let result = try receiver.readPlaintext(into: &plaintext)
        if result != .wantsMore { last = result }
    }
    return last
}
