internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

extension TLSContext {
    /// Client only: the name under which sessions from `server` are saved, for this context's trust and identity:
    /// SHA-256 (hex) of the address, the CA file's bytes and our certificate. A session is offered only to the
    /// server it came from, under the CA that verified that server, by the certificate the server then verified:
    /// a changed CA or certificate makes another name, and the old session is never offered. nil for a server
    /// context or when the CA file cannot be read.
    public func sessionCacheKey(server: String) -> String? {
        guard !isServer, let caPath = configuration.trustedCAPath, let authority = Self.contents(of: caPath) else {
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

    /// The bytes of the file at `path`, nil when it cannot be read.
    private static func contents(of path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes += chunk[0..<count]
        }
    }
}
