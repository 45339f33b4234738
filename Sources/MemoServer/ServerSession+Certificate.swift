import MemoModel
import MemoTLS
import MemoWire

extension ServerSession {
    /// The session of a client whose certificate TLS verified: its role and the author of its writes come from
    /// that certificate, never from anything the client says.
    init(limits: ServerLimits, certifiedBy tls: TLSEngine, serverName: String) {
        self.init(
            limits: limits, role: tls.peerRole == .readOnly ? .readOnly : .readWrite, serverName: serverName,
            author: Author(name: tls.peerCommonName ?? "", serial: tls.peerSerialNumber ?? ""))
    }
}
