internal import COpenSSL

/// One TLS session driven by hand: ciphertext goes in with `feed`, comes out with `takeOutbound`, and
/// plaintext is read and written in between. No sockets: the caller's event loop moves the bytes.
///
/// Owns one `SSL` (which owns its two memory BIOs). `@unchecked Sendable` so that a connection can be handed
/// to the event-loop thread that will own it; after that only that thread may call it (there are no locks),
/// and OpenSSL's per-thread error queue is cleared and read inside each call, never across one.
public final class TLSEngine: @unchecked Sendable {
    public enum HandshakeState: Sendable, Hashable {
        /// The handshake is complete; application data can flow.
        case done
        /// Send `takeOutbound` bytes (if any) and `feed` the peer's reply, then call again.
        case wantsMore
    }

    public enum ReadResult: Sendable, Hashable {
        /// This many plaintext bytes were appended.
        case bytes(Int)
        /// Nothing to read until more ciphertext is fed.
        case wantsMore
        /// The peer sent close_notify; no more data will come.
        case closed
    }

    public let context: TLSContext
    let ssl: OpaquePointer
    private var inbound: OpaquePointer
    private var outbound: OpaquePointer
    /// Where `SSL_read` decrypts to before the bytes are appended to the caller's array; allocated on first
    /// read and kept until `releaseBuffers`, so steady reading does not allocate.
    private var scratch: UnsafeMutableRawBufferPointer?
    /// The first fatal error; every later call rethrows it (OpenSSL must not be used after a fatal error).
    private var failure: TLSError?
    private var shutdownSent = false
    /// The first byte the peer sent, kept to recognise a peer that is not speaking TLS at all.
    private var firstInboundByte: UInt8?
    public private(set) var peerClosed = false

    /// Largest TLS record plaintext; one `SSL_read` never returns more.
    private static let scratchSize = 16_384
    /// `releaseBuffers` replaces memory BIOs that have grown beyond this.
    private static let retainedBIOLimit = 32_768

    /// Makes an engine for one connection.
    /// - Parameter serverName: client only: the host we connect to, sent as SNI and checked against the server
    ///   certificate (as an IP address when it is an IP literal, which is then not sent as SNI). nil skips the
    ///   name check; the chain is still verified.
    public init(context: TLSContext, serverName: String? = nil) throws(TLSError) {
        let operation = "starting a TLS session"
        TLSError.clearQueue()
        guard let ssl = SSL_new(context.pointer) else { throw TLSError.openSSL(operation) }
        guard let inbound = BIO_new(BIO_s_mem()), let outbound = BIO_new(BIO_s_mem()) else {
            let error = TLSError.openSSL(operation)
            SSL_free(ssl)
            throw error
        }
        SSL_set_bio(ssl, inbound, outbound)  // the SSL now owns both BIOs
        self.context = context
        self.ssl = ssl
        self.inbound = inbound
        self.outbound = outbound

        if context.isServer {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        guard let serverName else { return }
        TLSError.clearQueue()
        if CertificateAuthority.isIPAddress(serverName) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) == 1 else {
                throw TLSError.openSSL(operation, kind: .invalidArgument, detail: "server address \(serverName)")
            }
        } else {
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard CMemoSSL_set_tlsext_host_name(ssl, serverName) == 1, SSL_set1_host(ssl, serverName) == 1 else {
                throw TLSError.openSSL(operation, kind: .invalidArgument, detail: "server name \(serverName)")
            }
        }
    }

    deinit {
        SSL_free(ssl)
        scratch?.deallocate()
    }

    public var isServer: Bool { SSL_is_server(ssl) == 1 }
    public var isHandshakeComplete: Bool { SSL_is_init_finished(ssl) == 1 }

    private var side: String { isServer ? "server" : "client" }

    // MARK: - Ciphertext in and out

    /// Hands ciphertext received from the network to the engine. Any amount, any record boundaries.
    public func feed(_ ciphertext: UnsafeRawBufferPointer) {
        guard let base = ciphertext.baseAddress, !ciphertext.isEmpty, failure == nil else { return }
        if firstInboundByte == nil { firstInboundByte = ciphertext[0] }
        var written = 0
        TLSError.clearQueue()
        if BIO_write_ex(inbound, base, ciphertext.count, &written) != 1 || written != ciphertext.count {
            // Only an allocation failure gets here; report it from the next handshake or read.
            failure = TLSError.openSSL("TLS (\(side)): buffering received bytes")
        }
    }

    /// Hands ciphertext received from the network to the engine.
    public func feed(_ ciphertext: some Collection<UInt8>) {
        let done: Void? = ciphertext.withContiguousStorageIfAvailable { feed(UnsafeRawBufferPointer($0)) }
        if done == nil { Array(ciphertext).withUnsafeBytes { feed($0) } }
    }

    /// Whether ciphertext is waiting to be sent to the peer.
    public var hasOutbound: Bool { CMemoSSL_BIO_pending(outbound) > 0 }

    /// How many ciphertext bytes are waiting to be sent.
    public var outboundCount: Int { Int(CMemoSSL_BIO_pending(outbound)) }

    /// Appends all ciphertext waiting to be sent to `buffer`.
    public func takeOutbound(into buffer: inout [UInt8]) {
        let pending = outboundCount
        guard pending > 0 else { return }
        let start = buffer.count
        buffer.append(contentsOf: repeatElement(0, count: pending))
        var read = 0
        buffer.withUnsafeMutableBytes { bytes in
            _ = BIO_read_ex(outbound, bytes.baseAddress! + start, pending, &read)
        }
        if read < pending { buffer.removeLast(pending - read) }
    }

    /// Moves up to `buffer.count` ciphertext bytes into `buffer`, for a caller with its own write buffer.
    /// - Returns: the number of bytes moved.
    public func takeOutbound(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let base = buffer.baseAddress, !buffer.isEmpty, hasOutbound else { return 0 }
        var read = 0
        _ = BIO_read_ex(outbound, base, buffer.count, &read)
        return read
    }

    // MARK: - Session

    /// Advances the handshake with what has been fed so far.
    /// - Throws: `TLSError` classified from the verify result and OpenSSL's reasons. The engine may then hold
    ///   an alert for the peer in its outbound bytes: send them before closing.
    public func handshake() throws(TLSError) -> HandshakeState {
        if let failure { throw failure }
        if isHandshakeComplete { return .done }
        TLSError.clearQueue()
        let result = SSL_do_handshake(ssl)
        if result == 1 { return .done }
        let code = SSL_get_error(ssl, result)
        if code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE {
            TLSError.clearQueue()
            return .wantsMore
        }
        throw fail(sessionError("TLS handshake (\(side))", code: code))
    }

    /// Decrypts everything that can be decrypted from the bytes fed so far and appends it to `plaintext`.
    ///
    /// Drives the handshake too if it is not complete. Reads every whole record available, so one call is
    /// enough after each `feed`.
    public func readPlaintext(into plaintext: inout [UInt8]) throws(TLSError) -> ReadResult {
        if let failure { throw failure }
        if peerClosed { return .closed }
        let buffer = scratchBuffer()
        var total = 0
        while true {
            var count = 0
            TLSError.clearQueue()
            let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
            if result == 1 {
                plaintext.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                total += count
                continue
            }
            let code = SSL_get_error(ssl, result)
            switch code {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                TLSError.clearQueue()
                return total > 0 ? .bytes(total) : .wantsMore
            case SSL_ERROR_ZERO_RETURN:
                TLSError.clearQueue()
                peerClosed = true
                return total > 0 ? .bytes(total) : .closed
            default:
                throw fail(sessionError("TLS read (\(side))", code: code))
            }
        }
    }

    /// Encrypts `plaintext` into outbound records. Call only after the handshake is done.
    public func writePlaintext(_ plaintext: UnsafeRawBufferPointer) throws(TLSError) {
        if let failure { throw failure }
        guard let base = plaintext.baseAddress, !plaintext.isEmpty else { return }
        guard isHandshakeComplete else {
            throw TLSError(
                kind: .invalidArgument, operation: "TLS write (\(side))", detail: "the handshake is not complete")
        }
        var offset = 0
        while offset < plaintext.count {
            var written = 0
            TLSError.clearQueue()
            let result = SSL_write_ex(ssl, base + offset, plaintext.count - offset, &written)
            if result == 1 {
                offset += written
                continue
            }
            let code = SSL_get_error(ssl, result)
            throw fail(sessionError("TLS write (\(side))", code: code))
        }
    }

    /// Encrypts `plaintext` into outbound records. Call only after the handshake is done.
    public func writePlaintext(_ plaintext: some Collection<UInt8>) throws(TLSError) {
        // withContiguousStorageIfAvailable and withUnsafeBytes rethrow untyped errors, so carry a Result out.
        let attempt = { (buffer: UnsafeRawBufferPointer) -> Result<Void, TLSError> in
            do throws(TLSError) {
                try self.writePlaintext(buffer)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        let result =
            plaintext.withContiguousStorageIfAvailable { attempt(UnsafeRawBufferPointer($0)) }
            ?? Array(plaintext).withUnsafeBytes(attempt)
        try result.get()
    }

    /// Queues close_notify for the peer (take it with `takeOutbound`). Does nothing after a fatal error or
    /// before the handshake completes, where OpenSSL must not send it.
    public func shutdown() {
        guard failure == nil, !shutdownSent, isHandshakeComplete else { return }
        shutdownSent = true
        TLSError.clearQueue()
        _ = SSL_shutdown(ssl)
        TLSError.clearQueue()
    }

    /// Frees memory an idle connection does not need: the read scratch buffer, and the memory BIOs if they
    /// are empty but grew large (a memory BIO never shrinks by itself). Call when the connection goes idle.
    /// - Parameter force: replace the empty BIOs whatever they hold, for connections idle long enough that a
    ///   fresh allocation on their next message costs less than the memory kept meanwhile.
    public func releaseBuffers(force: Bool = false) {
        scratch?.deallocate()
        scratch = nil
        if force { _ = SSL_free_buffers(ssl) }  // the record layer's read and write buffers, when empty
        guard CMemoSSL_BIO_pending(inbound) == 0, CMemoSSL_BIO_pending(outbound) == 0,
            force ? retainedBufferBytes > 0 : retainedBufferBytes > Self.retainedBIOLimit,
            let newInbound = BIO_new(BIO_s_mem())
        else { return }
        guard let newOutbound = BIO_new(BIO_s_mem()) else {
            BIO_free(newInbound)
            return
        }
        SSL_set_bio(ssl, newInbound, newOutbound)  // frees the old pair
        inbound = newInbound
        outbound = newOutbound
    }

    /// Bytes held by this engine's own buffers (memory BIOs and scratch), not counting OpenSSL's internals.
    public var retainedBufferBytes: Int {
        CMemoSSL_BIO_mem_capacity(inbound) + CMemoSSL_BIO_mem_capacity(outbound) + (scratch?.count ?? 0)
    }

    /// Classifies the failure of the last call (see `TLSError.session`).
    private func sessionError(_ operation: String, code: Int32) -> TLSError {
        let error = TLSError.session(operation, ssl: ssl, sslError: code)
        // A TLS peer's first record is a handshake (22) or, when it refuses us at once, an alert (21).
        // Anything else means "not TLS" even when OpenSSL's reason is vague (say, a length mismatch in what
        // it took for an SSLv2 hello).
        guard error.kind == .tlsFailure, !isHandshakeComplete, let first = firstInboundByte, first != 22, first != 21
        else { return error }
        return TLSError(
            kind: .notTLS, operation: error.operation, detail: error.detail, verifyResult: error.verifyResult,
            reasons: error.reasons)
    }

    private func fail(_ error: TLSError) -> TLSError {
        failure = error
        return error
    }

    private func scratchBuffer() -> UnsafeMutableRawBufferPointer {
        if let scratch { return scratch }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.scratchSize, alignment: 16)
        scratch = buffer
        return buffer
    }
}
