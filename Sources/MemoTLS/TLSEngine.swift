internal import COpenSSL

/// One TLS session driven by hand: ciphertext goes in with `feed`, comes out with `takeOutbound`, and
/// plaintext is read and written in between. No sockets: the caller's event loop moves the bytes.
///
/// OpenSSL does the handshake. When it ends with TLS 1.3 and the context hands records off (the default), the
/// engine keeps only the traffic secrets, frees the `SSL` and protects records itself (`TLSRecordLayer`):
/// an idle connection then holds a few hundred bytes instead of OpenSSL's ~25 KB. Otherwise (TLS 1.2, or
/// `TLSConfiguration.recordLayer == .openSSL`) the `SSL` carries the whole session.
///
/// `@unchecked Sendable` so that a connection can be handed to the event-loop thread that will own it; after
/// that only that thread may call it (there are no locks), and OpenSSL's per-thread error queue is cleared and
/// read inside each call, never across one.
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
    /// The OpenSSL session (which owns the two memory BIOs); nil once the records are handed off.
    private var ssl: OpaquePointer?
    private var inbound: OpaquePointer?
    private var outbound: OpaquePointer?
    /// The session's records after a hand-off; nil before it and when OpenSSL keeps the session.
    private var records: TLSRecordLayer?
    /// Where the key log callback leaves the TLS 1.3 traffic secrets during a handshake that may hand off.
    private var secrets: UnsafeMutablePointer<CMemoSSL_TrafficSecrets>?
    /// Ciphertext not yet given to OpenSSL or the record layer. While a hand-off is possible OpenSSL gets whole
    /// records one at a time, so that when the handshake ends no record after it is stuck inside OpenSSL.
    private var pendingInput = ByteQueue()
    /// Where `SSL_read` decrypts to before the bytes are appended to the caller's array; allocated on first
    /// read and kept until `releaseBuffers`, so steady reading does not allocate.
    private var scratch: UnsafeMutableRawBufferPointer?
    /// The first fatal error; every later call rethrows it (OpenSSL must not be used after a fatal error).
    private var failure: TLSError?
    private var shutdownSent = false
    /// The first byte the peer sent, kept to recognise a peer that is not speaking TLS at all.
    private var firstInboundByte: UInt8?
    public private(set) var peerClosed = false
    public private(set) var isHandshakeComplete = false
    /// What the handshake established, kept when the `SSL` is freed.
    private(set) var established: EstablishedSession?
    public let isServer: Bool

    /// Largest TLS record plaintext; one `SSL_read` never returns more.
    private static let scratchSize = 16_384
    /// `releaseBuffers` replaces memory BIOs that have grown beyond this.
    private static let retainedBIOLimit = 32_768

    /// Makes an engine for one connection.
    /// - Parameter serverName: client only: the host we connect to, sent as SNI and checked against the server
    ///   certificate (as an IP address when it is an IP literal, which is then not sent as SNI). nil skips the
    ///   name check; the chain is still verified.
    /// - Parameter session: client only: a session saved from an earlier connection to the same server
    ///   (`takeNewSession`), offered for TLS 1.3 resumption. One that cannot be read, is not TLS 1.3 or has
    ///   expired is not offered (a full handshake, no error); the server may still refuse it (a full handshake).
    public init(context: TLSContext, serverName: String? = nil, session: [UInt8]? = nil) throws(TLSError) {
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
        isServer = context.isServer
        if context.configuration.recordLayer == .handOff {
            let secrets = UnsafeMutablePointer<CMemoSSL_TrafficSecrets>.allocate(capacity: 1)
            secrets.initialize(to: CMemoSSL_TrafficSecrets())
            self.secrets = secrets
            _ = CMemoSSL_set_traffic_secrets(ssl, secrets)
        }

        if context.isServer {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        if let session, let offered = Self.offer(session, on: ssl) {
            // Held as if taken: a resumed handshake keeps this session, which is not a new one to save.
            offeredSession = true
            lastTakenSession = offered
        }
        guard let serverName else { return }
        TLSError.clearQueue()
        if ServerName.isIPAddress(serverName) {
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
        if let ssl { SSL_free(ssl) }
        if let lastTakenSession { SSL_SESSION_free(lastTakenSession) }
        forgetSecrets()
        scratch?.deallocate()
    }

    // MARK: - Resumption (client)

    /// Whether a saved session was offered to the server (it was readable, TLS 1.3 and not expired).
    public private(set) var offeredSession = false
    /// The session `takeNewSession` last returned, held so that the same one is not returned twice.
    private var lastTakenSession: OpaquePointer?

    /// Sets the saved `session` (DER, as `takeNewSession` returns it) on `ssl` if it is fit to offer.
    /// - Returns: the session set (the caller owns this reference), nil when none was.
    private static func offer(_ session: [UInt8], on ssl: OpaquePointer) -> OpaquePointer? {
        let parsed = session.withUnsafeBufferPointer { bytes -> OpaquePointer? in
            var cursor: UnsafePointer<UInt8>? = bytes.baseAddress
            return d2i_SSL_SESSION(nil, &cursor, bytes.count)
        }
        defer { TLSError.clearQueue() }
        guard let parsed else { return nil }
        let expires = Int64(SSL_SESSION_get_time(parsed)) + Int64(SSL_SESSION_get_timeout(parsed))
        guard SSL_SESSION_is_resumable(parsed) == 1, SSL_SESSION_get_protocol_version(parsed) == TLS1_3_VERSION,
            expires > Int64(time(nil)), SSL_set_session(ssl, parsed) == 1
        else {
            SSL_SESSION_free(parsed)
            return nil
        }
        return parsed
    }

    /// Client only: the session the server's latest ticket made resumable (DER), once; nil when no new ticket
    /// has come. The server sends its ticket right after the handshake, so it is read with the first answer.
    /// Only an engine whose context keeps OpenSSL's records (`TLSRecordLayerChoice.openSSL`) reads tickets: a
    /// handed-off client drops them.
    public func takeNewSession() -> [UInt8]? {
        guard !isServer, let ssl, isHandshakeComplete, let session = SSL_get_session(ssl),
            session != lastTakenSession, SSL_SESSION_is_resumable(session) == 1
        else { return nil }
        let length = i2d_SSL_SESSION(session, nil)
        guard length > 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            return i2d_SSL_SESSION(session, &cursor)
        }
        guard written == length else { return nil }
        SSL_SESSION_up_ref(session)
        if let lastTakenSession { SSL_SESSION_free(lastTakenSession) }
        lastTakenSession = session
        return bytes
    }

    /// Whether the handshake resumed a session from a ticket (no certificates were exchanged).
    public var resumedSession: Bool { established?.resumed ?? false }

    /// The record layer after a hand-off, for tests.
    var recordLayer: TLSRecordLayer? { records }

    /// True once the session's records are protected by `TLSRecordLayer` rather than OpenSSL.
    public var recordsHandedOff: Bool { records != nil }

    private var side: String { isServer ? "server" : "client" }

    // MARK: - Ciphertext in and out

    /// Hands ciphertext received from the network to the engine. Any amount, any record boundaries.
    public func feed(_ ciphertext: UnsafeRawBufferPointer) {
        guard let base = ciphertext.baseAddress, !ciphertext.isEmpty, failure == nil else { return }
        if firstInboundByte == nil { firstInboundByte = ciphertext[0] }
        if records != nil || secrets != nil {
            pendingInput.append(ciphertext)
            return
        }
        giveToOpenSSL(UnsafeRawBufferPointer(start: base, count: ciphertext.count))
    }

    /// Writes received ciphertext into OpenSSL's inbound memory BIO.
    private func giveToOpenSSL(_ ciphertext: UnsafeRawBufferPointer) {
        guard let inbound, let base = ciphertext.baseAddress, !ciphertext.isEmpty else { return }
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
    public var hasOutbound: Bool { outboundCount > 0 }

    /// How many ciphertext bytes are waiting to be sent.
    public var outboundCount: Int {
        if let records { return records.outbound.count }
        guard let outbound else { return 0 }
        return Int(CMemoSSL_BIO_pending(outbound))
    }

    /// The memory held by ciphertext waiting to be sent (its allocation, not only its bytes); 0 when none waits.
    public var outboundRetainedBytes: Int {
        guard outboundCount > 0 else { return 0 }
        if let records { return records.outbound.capacity }
        guard let outbound else { return 0 }
        return CMemoSSL_BIO_mem_capacity(outbound)
    }

    /// Appends all ciphertext waiting to be sent to `buffer`.
    public func takeOutbound(into buffer: inout [UInt8]) {
        if let records {
            records.outbound.take(into: &buffer)
            return
        }
        let pending = outboundCount
        guard pending > 0, let outbound else { return }
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
        if let records { return records.outbound.take(into: buffer) }
        guard let base = buffer.baseAddress, !buffer.isEmpty, hasOutbound, let outbound else { return 0 }
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
        guard let ssl else { return .wantsMore }
        while true {
            let fedRecord = secrets != nil && moveRecordToOpenSSL()
            TLSError.clearQueue()
            let result = SSL_do_handshake(ssl)
            if result == 1 {
                try completeHandshake(ssl)
                return .done
            }
            let code = SSL_get_error(ssl, result)
            guard code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE else {
                throw fail(sessionError("TLS handshake (\(side))", code: code))
            }
            TLSError.clearQueue()
            if !fedRecord || pendingInput.isEmpty { return .wantsMore }
        }
    }

    /// Gives OpenSSL the next whole record of `pendingInput`, or everything if the bytes are not TLS records
    /// (OpenSSL then reports what they are). - Returns: whether anything was given.
    private func moveRecordToOpenSSL() -> Bool {
        guard !pendingInput.isEmpty else { return false }
        let size = pendingInput.withUnreadBytes { bytes -> Int in
            guard bytes.count >= 5 else { return (20...23).contains(bytes[0]) ? 0 : bytes.count }
            let length = Int(bytes[3]) << 8 | Int(bytes[4])
            guard (20...23).contains(bytes[0]), bytes[1] == 3, length <= TLSRecordLayer.maxCiphertext + 2048 else {
                return bytes.count
            }
            return bytes.count >= 5 + length ? 5 + length : 0
        }
        guard size > 0 else { return false }
        pendingInput.withUnreadBytes { giveToOpenSSL(UnsafeRawBufferPointer(rebasing: $0[..<size])) }
        pendingInput.consume(size)
        return true
    }

    /// Records what the handshake established and, for TLS 1.3 with secrets captured, hands the records to
    /// `TLSRecordLayer` and frees the `SSL`.
    private func completeHandshake(_ ssl: OpaquePointer) throws(TLSError) {
        isHandshakeComplete = true
        established = EstablishedSession(ssl: ssl)
        guard let secrets else { return }
        defer { forgetSecrets() }
        let cipher = SSL_get_current_cipher(ssl)
        guard SSL_version(ssl) == TLS1_3_VERSION, let cipher,
            let suite = TLS13Suite(protocolID: SSL_CIPHER_get_protocol_id(cipher)),
            secrets.pointee.clientLength == suite.hashLength, secrets.pointee.serverLength == suite.hashLength,
            SSL_has_pending(ssl) == 0, let inbound, CMemoSSL_BIO_pending(inbound) == 0,
            // Nothing of OpenSSL's left to send, and no record of its own under the application key but session
            // tickets (after which ours continue the sequence): only then may the records change hands.
            SSL_want(ssl) != SSL_WRITING, secrets.pointee.finishedWritten == 1,
            secrets.pointee.sealedAfterFinished == 0
        else {
            // OpenSSL keeps the session: everything held back goes to it now.
            pendingInput.withUnreadBytes { giveToOpenSSL($0) }
            pendingInput = ByteQueue()
            return
        }
        // Each secret is copied once, into an array of its exact size: a copy made through a growing buffer
        // would leave earlier allocations holding it in freed memory, where no wipe reaches.
        func copySecret(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
            [UInt8](unsafeUninitializedCapacity: suite.hashLength) { buffer, count in
                buffer.baseAddress!.initialize(from: bytes.baseAddress!.assumingMemoryBound(to: UInt8.self),
                                               count: suite.hashLength)
                count = suite.hashLength
            }
        }
        let client = withUnsafeBytes(of: &secrets.pointee.client, copySecret)
        let server = withUnsafeBytes(of: &secrets.pointee.server, copySecret)
        // What OpenSSL wrote last (the client's Finished) goes out ahead of the first sealed record.
        var written = ByteQueue()
        var handshakeTail: [UInt8] = []
        takeOutbound(into: &handshakeTail)
        handshakeTail.withUnsafeBytes { written.append($0) }
        // The two secrets now live only in the record layer's `RecordProtection`s, which wipe them when freed.
        records = TLSRecordLayer(
            suite: suite, readSecret: isServer ? client : server, writeSecret: isServer ? server : client,
            isServer: isServer, outbound: written, writeSequence: secrets.pointee.ticketRecordsAfterFinished)
        SSL_free(ssl)
        self.ssl = nil
        self.inbound = nil
        outbound = nil
    }

    private func forgetSecrets() {
        guard let secrets else { return }
        if let ssl { _ = CMemoSSL_set_traffic_secrets(ssl, nil) }
        OPENSSL_cleanse(secrets, MemoryLayout<CMemoSSL_TrafficSecrets>.size)
        secrets.deallocate()
        self.secrets = nil
    }

    /// Decrypts everything that can be decrypted from the bytes fed so far and appends it to `plaintext`.
    ///
    /// Drives the handshake too if it is not complete. Reads every whole record available, so one call is
    /// enough after each `feed`.
    public func readPlaintext(into plaintext: inout [UInt8]) throws(TLSError) -> ReadResult {
        if let failure { throw failure }
        if peerClosed { return .closed }
        if !isHandshakeComplete, try handshake() == .wantsMore { return .wantsMore }
        if let records { return try readRecords(records, into: &plaintext) }
        guard let ssl else { return .wantsMore }
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

    private func readRecords(_ records: TLSRecordLayer, into plaintext: inout [UInt8]) throws(TLSError)
        -> ReadResult
    {
        let before = plaintext.count
        do throws(RecordFailure) {
            peerClosed = try records.open(&pendingInput, into: &plaintext)
        } catch {
            throw fail(recordError(error, operation: "TLS read (\(side))"))
        }
        let total = plaintext.count - before
        if total > 0 { return .bytes(total) }
        return peerClosed ? .closed : .wantsMore
    }

    /// Encrypts `plaintext` into outbound records. Call only after the handshake is done.
    public func writePlaintext(_ plaintext: UnsafeRawBufferPointer) throws(TLSError) {
        if let failure { throw failure }
        guard let base = plaintext.baseAddress, !plaintext.isEmpty else { return }
        guard isHandshakeComplete else {
            throw TLSError(
                kind: .invalidArgument, operation: "TLS write (\(side))", detail: "the handshake is not complete")
        }
        if let records {
            do throws(RecordFailure) {
                try records.seal(plaintext)
            } catch {
                throw fail(recordError(error, operation: "TLS write (\(side))"))
            }
            return
        }
        guard let ssl else { return }
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

    /// The most `sealDirect` writes for one record (a full record's plaintext, its content type and tag, the
    /// header): a buffer this large takes any record it seals.
    public static let maxRecordLength = ByteQueue.recordLength(TLSRecordLayer.maxPlaintext)

    /// Seals `plaintext` as one record straight into `buffer` when no ciphertext is queued before it, for a caller
    /// that writes `buffer` to the socket itself (a fan-out delivery: one small record, no copy through the
    /// outbound queue). - Returns: the bytes written to `buffer`, or nil when the plaintext must go through
    /// `writePlaintext` (ciphertext queued, a KeyUpdate due, more than one record's worth, OpenSSL's own records).
    /// `adjust` may change the plaintext's copy in the record before it is sealed (a shared frame gets its
    /// subscriber's request id there, with no copy of its own).
    public func sealDirect(
        _ plaintext: [UInt8], into buffer: UnsafeMutableRawBufferPointer,
        adjusting adjust: (UnsafeMutableRawBufferPointer) -> Void = { _ in }
    ) throws(TLSError) -> Int? {
        if let failure { throw failure }
        guard let records, isHandshakeComplete else { return nil }
        let result = plaintext.withUnsafeBytes { raw -> Result<Int?, RecordFailure> in
            do throws(RecordFailure) {
                return .success(try records.sealDirect(raw, into: buffer, adjusting: adjust))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let length): return length
        case .failure(let error): throw fail(recordError(error, operation: "TLS write (\(side))"))
        }
    }

    /// Encrypts `plaintext` into outbound records. Call only after the handshake is done.
    ///
    /// The array form the server and client write from: the generic form below runs unspecialised from other
    /// modules (one call per fan-out delivery).
    public func writePlaintext(_ plaintext: [UInt8]) throws(TLSError) {
        let result = plaintext.withUnsafeBytes { buffer -> Result<Void, TLSError> in
            do throws(TLSError) {
                try self.writePlaintext(buffer)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
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

    /// Moves to the next sending key and asks the peer to do the same (a TLS 1.3 KeyUpdate with
    /// update_requested). The session also does this by itself after 2^24 records under one key.
    public func requestKeyUpdate() throws(TLSError) {
        if let failure { throw failure }
        let operation = "TLS key update (\(side))"
        guard isHandshakeComplete, established?.protocolName == "TLSv1.3" else {
            throw TLSError(kind: .invalidArgument, operation: operation, detail: "needs an established TLS 1.3 session")
        }
        if let records {
            do throws(RecordFailure) {
                try records.updateWriteKey(requested: true)
            } catch {
                throw fail(recordError(error, operation: operation))
            }
            return
        }
        guard let ssl else { return }
        TLSError.clearQueue()
        guard SSL_key_update(ssl, SSL_KEY_UPDATE_REQUESTED) == 1 else { throw fail(TLSError.openSSL(operation)) }
        // OpenSSL sends the KeyUpdate with the next record it writes, or when the handshake function runs.
        _ = SSL_do_handshake(ssl)
        TLSError.clearQueue()
    }

    /// Whether the record layer holds its cipher contexts (false after `releaseBuffers(force: true)` until the
    /// next record). Always false when OpenSSL carries the session.
    public var holdsCipherContexts: Bool { records?.holdsContexts ?? false }

    /// Queues close_notify for the peer (take it with `takeOutbound`). Does nothing after a fatal error or
    /// before the handshake completes, where OpenSSL must not send it.
    public func shutdown() {
        guard failure == nil, !shutdownSent, isHandshakeComplete else { return }
        shutdownSent = true
        if let records {
            records.sealCloseNotify()
            return
        }
        guard let ssl else { return }
        TLSError.clearQueue()
        _ = SSL_shutdown(ssl)
        TLSError.clearQueue()
    }

    /// Whether the engine still holds the session's secrets or keys (an `SSL`, the record layer, captured
    /// secrets); false after `discard`.
    public var holdsKeyMaterial: Bool { ssl != nil || records != nil || secrets != nil }

    /// Forgets the session now: frees the `SSL` or the record layer (whose `RecordProtection`s wipe their
    /// secrets, keys and IVs), and wipes and frees the read scratch buffer. (OpenSSL frees its session without
    /// wiping the traffic secrets held inline in it: that memory holds them until it is reused.) Call when the connection
    /// closes, so that its key material does not live on until the engine's last reference goes (a timer that
    /// still holds the connection, say). Every later call fails with a "session closed" error.
    public func discard() {
        if failure == nil {
            failure = TLSError(kind: .tlsFailure, operation: "TLS (\(side))", detail: "session closed")
        }
        forgetSecrets()
        if let ssl { SSL_free(ssl) }  // with it, the two memory BIOs it owns
        ssl = nil
        inbound = nil
        outbound = nil
        records = nil
        pendingInput = ByteQueue()
        if let scratch {
            OPENSSL_cleanse(scratch.baseAddress, scratch.count)
            scratch.deallocate()
        }
        scratch = nil
    }

    /// Frees memory an idle connection does not need: the read scratch buffer, and the memory BIOs if they
    /// are empty but grew large (a memory BIO never shrinks by itself). Call when the connection goes idle.
    /// - Parameter force: replace the empty BIOs whatever they hold, for connections idle long enough that a
    ///   fresh allocation on their next message costs less than the memory kept meanwhile. After a hand-off
    ///   this also frees the record layer's cipher contexts, which the next record rebuilds from the keys.
    public func releaseBuffers(force: Bool = false) {
        scratch?.deallocate()
        scratch = nil
        if let records {
            pendingInput.releaseIfEmpty()
            records.releaseBuffers()
            if force { records.releaseContexts() }
            return
        }
        guard let ssl, let inbound, let outbound else { return }
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
        self.inbound = newInbound
        self.outbound = newOutbound
    }

    /// Bytes held by this engine's own buffers (memory BIOs, scratch, the record layer's queues), not counting
    /// OpenSSL's internals.
    public var retainedBufferBytes: Int {
        if let records { return pendingInput.capacity + records.retainedBytes }
        var bytes = pendingInput.capacity + (scratch?.count ?? 0)
        if let inbound { bytes += CMemoSSL_BIO_mem_capacity(inbound) }
        if let outbound { bytes += CMemoSSL_BIO_mem_capacity(outbound) }
        return bytes
    }

    /// Classifies the failure of the last call (see `TLSError.session`).
    private func sessionError(_ operation: String, code: Int32) -> TLSError {
        guard let ssl else { return TLSError(kind: .tlsFailure, operation: operation) }
        // A certificate, key or CA loaded only now (TLSConfiguration.deferClientMaterial) that would not load:
        // said as a context loading it at start would say it.
        if !isServer, !isHandshakeComplete, let loading = context.deferredMaterialError() {
            TLSError.clearQueue()
            return loading
        }
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

    /// Describes a record layer failure: the alert we sent and why, or the alert the peer sent (classified as
    /// OpenSSL's reasons are, so that a refused client certificate reads the same either way).
    private func recordError(_ failure: RecordFailure, operation: String) -> TLSError {
        switch failure {
        case .sent(let alert, let reason):
            return TLSError(kind: .tlsFailure, operation: operation, detail: "\(reason); sent \(TLSAlert.name(alert))")
        case .received(let alert):
            return TLSError(
                kind: TLSError.kind(alert: alert), operation: operation,
                detail: TLSError.peerAlertDetail, reasons: ["peer sent \(TLSAlert.name(alert))"])
        }
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
