internal import COpenSSL

/// Owns one `EVP_PKEY`, freed in deinit.
package final class PrivateKey {
    package let pointer: OpaquePointer

    package init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Reads a PEM private key (unencrypted) from `path`.
    package static func load(path: String) throws(TLSError) -> PrivateKey {
        let bio = try MemoryBIO.readingFile(path)
        TLSError.clearQueue()
        guard let key = PEM_read_bio_PrivateKey(bio.pointer, nil, nil, nil) else {
            throw TLSError.openSSL("loading private key \(path)")
        }
        return PrivateKey(owning: key)
    }
}

/// Owns one `X509`, freed in deinit.
package final class Certificate {
    package let pointer: OpaquePointer

    package init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(pointer)
    }

    /// Reads the first PEM certificate from `path`.
    package static func load(path: String) throws(TLSError) -> Certificate {
        let bio = try MemoryBIO.readingFile(path)
        TLSError.clearQueue()
        guard let cert = PEM_read_bio_X509(bio.pointer, nil, nil, nil) else {
            throw TLSError.openSSL("loading certificate \(path)")
        }
        return Certificate(owning: cert)
    }

    /// Whether `issuer`'s key signed this certificate.
    package func isSigned(by issuer: Certificate) -> Bool {
        guard let key = X509_get0_pubkey(issuer.pointer) else { return false }
        defer { TLSError.clearQueue() }
        return X509_verify(pointer, key) == 1
    }
}

/// Owns one memory or file `BIO`, freed in deinit; used for PEM encoding and decoding.
package final class MemoryBIO {
    package let pointer: OpaquePointer

    package init() throws(TLSError) {
        TLSError.clearQueue()
        guard let bio = BIO_new(BIO_s_mem()) else { throw TLSError.openSSL("allocating a memory BIO") }
        pointer = bio
    }

    private init(owning pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        BIO_free(pointer)
    }

    /// A BIO reading the file at `path`.
    package static func readingFile(_ path: String) throws(TLSError) -> MemoryBIO {
        TLSError.clearQueue()
        guard let bio = BIO_new_file(path, "r") else {
            throw TLSError.openSSL("opening \(path)", kind: .fileSystem)
        }
        return MemoryBIO(owning: bio)
    }

    /// Everything written to the BIO so far.
    package func contents() -> [UInt8] {
        let count = Int(CMemoSSL_BIO_pending(pointer))
        var bytes = [UInt8](repeating: 0, count: count)
        var read = 0
        bytes.withUnsafeMutableBytes { buffer in
            _ = BIO_read_ex(pointer, buffer.baseAddress, count, &read)
        }
        return Array(bytes.prefix(read))
    }
}
