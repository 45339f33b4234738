internal import COpenSSL
import MemoSystem

extension TLSContext {
    /// Client only: the name under which sessions from `server` are saved, for this context's trust and identity:
    /// SHA-256 (hex) of the address, the CA file's bytes and our certificate. A session is offered only to the
    /// server it came from, under the CA that verified that server, by the certificate the server then verified:
    /// a changed CA or certificate makes another name, and the old session is never offered. nil for a server
    /// context or when the CA file cannot be read.
    public func sessionCacheKey(server: String) -> String? {
        guard !isServer, let caPath = configuration.trustedCAPath, let authority = FileDescriptor.readAll(path: caPath) else {
            return nil
        }
        var input = Array("memo TLS session 1".utf8) + [0] + Array(server.utf8) + [0] + authority + [0]
        if let own = SSL_CTX_get0_certificate(pointer) {
            let length = i2d_X509(own, nil)
            if length > 0 {
                var der = [UInt8](repeating: 0, count: Int(length))
                let written = der.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                    return i2d_X509(own, &cursor)
                }
                if written == length { input += der }
            }
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
