internal import COpenSSL
import MemoSystem

extension TLSContext {
    /// Client only: the name under which sessions from `server` are saved, for this context's trust and identity:
    /// SHA-256 (hex) of the address, the CA file's bytes and our certificate and key files' bytes. A session is
    /// offered only to the server it came from, under the CA that verified that server, by the certificate the server
    /// then verified: a changed CA, certificate or key file makes another name, and the old session is never
    /// offered. The files are read, not the context's loaded certificate, which a deferred context
    /// (`deferClientMaterial`) does not have. nil for a server context or when a named file cannot be read.
    public func sessionCacheKey(server: String) -> String? {
        isServer ? nil : Self.sessionCacheKey(server: server, configuration: configuration)
    }

    /// The name `sessionCacheKey(server:)` gives for a client context made from `configuration`, without one.
    public static func sessionCacheKey(server: String, configuration: TLSConfiguration) -> String? {
        guard let caPath = configuration.trustedCAPath, let authority = FileDescriptor.readAll(path: caPath) else {
            return nil
        }
        var input = Array("memo TLS session 2".utf8) + [0] + Array(server.utf8) + [0] + authority + [0]
        // Our certificate and key files too: a session is found (and the files' parsing deferred, see
        // `TLSConfiguration.deferClientMaterial`) only while both are the files of the handshake that saved it, so
        // a key replaced by another certificate's, or by one that does not parse, is loaded and refused at start.
        for path in [configuration.certificateChainPath, configuration.privateKeyPath] {
            guard let path else { continue }
            guard let bytes = FileDescriptor.readAll(path: path) else { return nil }
            input += bytes + [0]
        }
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var digestLength: UInt32 = 0
        guard EVP_Digest(input, input.count, &digest, &digestLength, EVP_sha256(), nil) == 1 else {
            TLSError.clearQueue()
            return nil
        }
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var name: [UInt8] = []
        name.reserveCapacity(Int(digestLength) * 2)
        for byte in digest[0..<Int(digestLength)] {
            name.append(hex[Int(byte >> 4)])
            name.append(hex[Int(byte & 15)])
        }
        return String(decoding: name, as: UTF8.self)
    }
}
