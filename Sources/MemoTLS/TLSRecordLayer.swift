internal import COpenSSL

// TLS 1.3 record protection (RFC 8446 §5, §7) for a session whose handshake OpenSSL has finished.
//
// Why: an OpenSSL `SSL` keeps about 25 KB per connection after a mutual TLS 1.3 handshake (the session, the
// peer's parsed certificate, the handshake state machine), and every record goes through two memory BIOs and
// the state machine. Once the handshake is over, a TLS 1.3 session needs only two traffic secrets, two
// sequence numbers and an AEAD: this file is that, on OpenSSL's EVP primitives. The engine hands a session
// over when TLS 1.3 and one of the three standard suites were agreed, and keeps OpenSSL otherwise.

/// The AEAD and hash of a TLS 1.3 cipher suite (RFC 8446 §B.4).
struct TLS13Suite: Sendable {
    enum AEAD: Sendable { case aes128GCM, aes256GCM, chacha20Poly1305 }

    let aead: AEAD
    /// SHA-256 or SHA-384: the suite's hash, whose output length is the traffic secrets' length.
    let usesSHA384: Bool

    init?(protocolID: UInt16) {
        switch protocolID {
        case 0x1301: (aead, usesSHA384) = (.aes128GCM, false)
        case 0x1302: (aead, usesSHA384) = (.aes256GCM, true)
        case 0x1303: (aead, usesSHA384) = (.chacha20Poly1305, false)
        default: return nil
        }
    }

    var keyLength: Int { aead == .aes128GCM ? 16 : 32 }
    var hashLength: Int { usesSHA384 ? 48 : 32 }
    static let ivLength = 12
    static let tagLength = 16

    var cipher: OpaquePointer? {
        switch aead {
        case .aes128GCM: return EVP_aes_128_gcm()
        case .aes256GCM: return EVP_aes_256_gcm()
        case .chacha20Poly1305: return EVP_chacha20_poly1305()
        }
    }

    var digest: OpaquePointer? { usesSHA384 ? EVP_sha384() : EVP_sha256() }

    /// HKDF-Expand-Label(secret, label, "", length) (RFC 8446 §7.1). Every length used here fits one HMAC
    /// block, so the expansion is the single block T(1).
    func expandLabel(_ secret: [UInt8], _ label: String, length: Int) -> [UInt8] {
        precondition(length <= hashLength)
        let fullLabel = Array("tls13 \(label)".utf8)
        var info: [UInt8] = [UInt8(length >> 8), UInt8(length & 0xFF), UInt8(fullLabel.count)]
        info += fullLabel
        info += [0, 1]  // an empty context, then the block counter
        var output = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var outputLength: UInt32 = 0
        _ = HMAC(digest, secret, Int32(secret.count), info, info.count, &output, &outputLength)
        let result = Array(output.prefix(length))
        OPENSSL_cleanse(&output, output.count)
        return result
    }
}

/// One direction of a TLS 1.3 session: its traffic secret, key, IV and sequence number.
final class RecordProtection {
    let suite: TLS13Suite
    let encrypting: Bool
    private var secret: [UInt8]
    private var key: [UInt8]
    private var iv: [UInt8]
    private(set) var sequence: UInt64 = 0
    /// The keyed EVP context: made on first use and dropped by `release` when the connection goes idle, when
    /// the key and IV (76 bytes at most) are all that is kept.
    private var context: OpaquePointer?

    /// - Parameter sequence: the first record's sequence number: 0, or after the records OpenSSL sealed under
    ///   this key before the hand-off (a server's session tickets).
    init(suite: TLS13Suite, secret: [UInt8], encrypting: Bool, sequence: UInt64 = 0) {
        self.suite = suite
        self.sequence = sequence
        self.encrypting = encrypting
        self.secret = secret
        noncesThroughParameters = suite.aead != .chacha20Poly1305
        key = suite.expandLabel(secret, "key", length: suite.keyLength)
        iv = suite.expandLabel(secret, "iv", length: TLS13Suite.ivLength)
    }

    deinit {
        release()
        OPENSSL_cleanse(&secret, secret.count)
        OPENSSL_cleanse(&key, key.count)
        OPENSSL_cleanse(&iv, iv.count)
    }

    /// Moves to the next traffic secret after a KeyUpdate (RFC 8446 §7.2), restarting the sequence.
    func update() {
        var next = suite.expandLabel(secret, "traffic upd", length: suite.hashLength)
        swap(&secret, &next)
        OPENSSL_cleanse(&next, next.count)
        OPENSSL_cleanse(&key, key.count)
        OPENSSL_cleanse(&iv, iv.count)
        key = suite.expandLabel(secret, "key", length: suite.keyLength)
        iv = suite.expandLabel(secret, "iv", length: TLS13Suite.ivLength)
        sequence = 0
        release()
    }

    /// Frees the EVP context; the next record makes a new one from the key.
    func release() {
        if let context { EVP_CIPHER_CTX_free(context) }
        context = nil
    }

    var holdsContext: Bool { context != nil }

    /// Encrypts or decrypts one record in place and advances the sequence number.
    ///
    /// - Parameters:
    ///   - header: the 5-byte record header, the additional data.
    ///   - body: the inner plaintext (sealing) or the ciphertext without its tag (opening), replaced in place.
    ///   - tag: written when sealing, checked when opening.
    /// - Returns: false if OpenSSL failed or, when opening, the tag did not verify.
    func crypt(header: UnsafeRawPointer, body: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawPointer) -> Bool {
        guard let context = keyedContext() else { return false }
        let recordSequence = sequence
        sequence += 1
        let tagBytes = tag.assumingMemoryBound(to: UInt8.self)
        // The nonce, then a block for the AEAD's final step (it writes no bytes, but OpenSSL wants somewhere to
        // put them), on the stack: a nonce array per record was an allocation per record.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: TLS13Suite.ivLength + 16) { scratch in
            let nonce = scratch.baseAddress!
            iv.withUnsafeBufferPointer { nonce.initialize(from: $0.baseAddress!, count: TLS13Suite.ivLength) }
            withUnsafeBytes(of: recordSequence.bigEndian) { sequenceBytes in
                for index in 0..<8 { nonce[4 + index] ^= sequenceBytes[index] }
            }
            guard setNonce(context, nonce, expectedTag: encrypting ? nil : tagBytes) else { return false }
            var length: Int32 = 0
            guard EVP_CipherUpdate(context, nil, &length, header.assumingMemoryBound(to: UInt8.self), 5) == 1
            else { return false }
            if let base = body.baseAddress?.assumingMemoryBound(to: UInt8.self), body.count > 0 {
                guard EVP_CipherUpdate(context, base, &length, base, Int32(body.count)) == 1,
                    Int(length) == body.count
                else { return false }
            }
            guard EVP_CipherFinal_ex(context, nonce + TLS13Suite.ivLength, &length) == 1, length == 0 else {
                return false
            }
            return !encrypting || CMemoSSL_AEAD_get_tag(context, tagBytes, TLS13Suite.tagLength) == 1
        }
    }

    /// Whether nonces go in through one parameter round (AES-GCM only: ChaCha20-Poly1305 has no whole-IV
    /// parameter; see `CMemoSSL_AEAD_set_nonce`) rather than a re-initialisation, which costs more per record
    /// (BENCHMARKS.md, "Instruction counts behind the code's shape"). Cleared for good if the provider ever
    /// refuses it; tests clear it to seal the reference records.
    var noncesThroughParameters: Bool

    /// Gives the context this record's nonce and, when opening, the tag to check at the end.
    private func setNonce(_ context: OpaquePointer, _ nonce: UnsafeMutablePointer<UInt8>,
                          expectedTag: UnsafeMutablePointer<UInt8>?) -> Bool {
        if noncesThroughParameters {
            if CMemoSSL_AEAD_set_nonce(context, nonce, expectedTag, TLS13Suite.tagLength) == 1 { return true }
            ERR_clear_error()
            noncesThroughParameters = suite.aead != .chacha20Poly1305
        }
        guard EVP_CipherInit_ex(context, nil, nil, nil, nonce, -1) == 1 else { return false }
        guard let expectedTag else { return true }
        let tagLength = Int32(TLS13Suite.tagLength)
        return EVP_CIPHER_CTX_ctrl(context, CMemoSSL_CTRL_AEAD_SET_TAG(), tagLength, expectedTag) == 1
    }

    private func keyedContext() -> OpaquePointer? {
        if let context { return context }
        guard let made = EVP_CIPHER_CTX_new() else { return nil }
        guard EVP_CipherInit_ex(made, suite.cipher, nil, key, nil, encrypting ? 1 : 0) == 1 else {
            EVP_CIPHER_CTX_free(made)
            return nil
        }
        context = made
        return made
    }
}

/// Bytes appended at the back and consumed from the front, compacted as it goes.
struct ByteQueue {
    private(set) var storage: [UInt8] = []
    private var start = 0

    var count: Int { storage.count - start }
    var isEmpty: Bool { start == storage.count }
    var capacity: Int { storage.capacity }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0, start >= storage.count - start {
            storage.removeFirst(start)
            start = 0
        }
        storage.append(contentsOf: bytes)
    }

    mutating func consume(_ count: Int) {
        start += count
        if start == storage.count {
            storage.removeAll(keepingCapacity: true)
            start = 0
        }
    }

    func withUnreadBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        // Array.withUnsafeBytes rethrows untyped errors, so the typed one is carried out in a Result.
        let result = storage.withUnsafeBytes { raw -> Result<R, E> in
            do throws(E) {
                return .success(try body(UnsafeRawBufferPointer(rebasing: raw[start...])))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Moves up to `buffer.count` bytes out. - Returns: how many.
    mutating func take(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let moved = min(buffer.count, count)
        guard moved > 0, let base = buffer.baseAddress else { return 0 }
        storage.withUnsafeBytes { raw in base.copyMemory(from: raw.baseAddress! + start, byteCount: moved) }
        consume(moved)
        return moved
    }

    mutating func take(into array: inout [UInt8]) {
        storage.withUnsafeBytes { raw in array.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[start...])) }
        consume(count)
    }

    /// Lets the storage go when nothing is queued.
    mutating func releaseIfEmpty() {
        if isEmpty { storage = [] }
    }

    /// Appends an encrypted record of `content` as `type` (the inner content type); `crypt` seals it in place.
    mutating func appendRecord(
        type: UInt8, content: UnsafeRawBufferPointer,
        seal: (UnsafeRawPointer, UnsafeMutableRawBufferPointer, UnsafeMutableRawPointer) -> Bool
    ) -> Bool {
        // The record is built and sealed in a scratch buffer (on the stack when small) and appended in one copy,
        // not piece by piece through Array's generic append.
        withUnsafeTemporaryAllocation(byteCount: Self.recordLength(content.count), alignment: 1) { record in
            guard Self.buildRecord(type: type, content: content, at: record.baseAddress!, seal: seal) else {
                return false
            }
            storage.append(contentsOf: UnsafeRawBufferPointer(record))
            return true
        }
    }

    /// The length of the record that carries `contentLength` bytes: header, content, content type and tag.
    static func recordLength(_ contentLength: Int) -> Int { 5 + contentLength + 1 + TLS13Suite.tagLength }

    /// Writes the record of `content` at `base` (`recordLength(content.count)` bytes) and seals it in place.
    static func buildRecord(
        type: UInt8, content: UnsafeRawBufferPointer, at base: UnsafeMutableRawPointer,
        seal: (UnsafeRawPointer, UnsafeMutableRawBufferPointer, UnsafeMutableRawPointer) -> Bool
    ) -> Bool {
        let innerLength = content.count + 1
        let recordLength = innerLength + TLS13Suite.tagLength
        base.storeBytes(of: 23, toByteOffset: 0, as: UInt8.self)
        base.storeBytes(of: 3, toByteOffset: 1, as: UInt8.self)
        base.storeBytes(of: 3, toByteOffset: 2, as: UInt8.self)
        base.storeBytes(of: UInt8(recordLength >> 8), toByteOffset: 3, as: UInt8.self)
        base.storeBytes(of: UInt8(recordLength & 0xFF), toByteOffset: 4, as: UInt8.self)
        if let source = content.baseAddress { (base + 5).copyMemory(from: source, byteCount: content.count) }
        base.storeBytes(of: type, toByteOffset: 5 + content.count, as: UInt8.self)
        (base + 5 + innerLength).initializeMemory(as: UInt8.self, repeating: 0, count: TLS13Suite.tagLength)
        return seal(base, UnsafeMutableRawBufferPointer(start: base + 5, count: innerLength), base + 5 + innerLength)
    }
}

/// Why the record layer stopped: the alert it sent, or the alert the peer sent.
enum RecordFailure: Error {
    /// We sent this fatal alert (already queued in the outbound bytes) for the reason given.
    case sent(alert: UInt8, reason: String)
    /// The peer sent this fatal alert.
    case received(alert: UInt8)
}

/// Alert descriptions (RFC 8446 §6) that this layer sends or names.
enum TLSAlert {
    static let closeNotify: UInt8 = 0
    static let unexpectedMessage: UInt8 = 10
    static let badRecordMAC: UInt8 = 20
    static let recordOverflow: UInt8 = 22
    static let illegalParameter: UInt8 = 47
    static let decodeError: UInt8 = 50
    static let internalError: UInt8 = 80
    static let userCanceled: UInt8 = 90

    static func name(_ description: UInt8) -> String {
        switch description {
        case 0: return "close_notify"
        case 10: return "unexpected_message"
        case 20: return "bad_record_mac"
        case 22: return "record_overflow"
        case 40: return "handshake_failure"
        case 42: return "bad_certificate"
        case 43: return "unsupported_certificate"
        case 44: return "certificate_revoked"
        case 45: return "certificate_expired"
        case 46: return "certificate_unknown"
        case 47: return "illegal_parameter"
        case 48: return "unknown_ca"
        case 49: return "access_denied"
        case 50: return "decode_error"
        case 51: return "decrypt_error"
        case 70: return "protocol_version"
        case 80: return "internal_error"
        case 90: return "user_canceled"
        case 116: return "certificate_required"
        default: return "alert \(description)"
        }
    }
}

/// The records of an established TLS 1.3 session, both directions.
final class TLSRecordLayer {
    private let read: RecordProtection
    private let write: RecordProtection
    private let isServer: Bool
    /// Sealed records waiting for the caller to send them.
    var outbound: ByteQueue
    /// Post-handshake handshake bytes (KeyUpdate, NewSessionTicket) not yet a whole message.
    private var handshakeBytes: [UInt8] = []
    private var alertSent = false
    /// The peer asked for our KeyUpdate (update_requested) and we have not sent one since. One update answers
    /// every request received before it (RFC 8446 §4.6.3), and it goes out just before our next record: a peer
    /// that sends a million requests and never reads gets nothing queued for them.
    private(set) var updateOwed = false

    /// Largest plaintext in one record (RFC 8446 §5.1).
    static let maxPlaintext = 16_384
    /// Largest record body accepted: plaintext, content type and padding, and tag (RFC 8446 §5.2).
    static let maxCiphertext = 16_384 + 256
    /// Records sealed under one key before we update it ourselves; RFC 8446 §5.5 puts the AES-GCM limit at
    /// 2^24.5 full-size records. A variable so that tests can reach it.
    var recordsPerKey: UInt64 = 1 << 24
    /// Largest post-handshake message buffered (a NewSessionTicket from a server that sends one).
    static let maxHandshakeMessage = 65_536

    /// - Parameter writeSequence: the sequence number our first record takes (see `RecordProtection.init`).
    init(
        suite: TLS13Suite, readSecret: [UInt8], writeSecret: [UInt8], isServer: Bool, outbound: ByteQueue,
        writeSequence: UInt64 = 0
    ) {
        read = RecordProtection(suite: suite, secret: readSecret, encrypting: false)
        write = RecordProtection(suite: suite, secret: writeSecret, encrypting: true, sequence: writeSequence)
        self.isServer = isServer
        self.outbound = outbound
    }

    // MARK: Sealing

    /// Seals `plaintext` as application data records of at most 16 KiB each.
    func seal(_ plaintext: UnsafeRawBufferPointer) throws(RecordFailure) {
        var offset = 0
        while offset < plaintext.count {
            let end = min(offset + Self.maxPlaintext, plaintext.count)
            try sealRecord(type: 23, UnsafeRawBufferPointer(rebasing: plaintext[offset..<end]))
            offset = end
        }
    }

    /// Seals `plaintext` as one application data record straight into `buffer`, when nothing is queued before it,
    /// no KeyUpdate is due and it fits: the caller writes `buffer` to the socket itself, with no copy through the
    /// outbound queue. - Returns: the record's length, or nil when the caller must use `seal`.
    /// `adjust` may change the plaintext where it lies in the record, before it is sealed.
    func sealDirect(
        _ plaintext: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer,
        adjusting adjust: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(RecordFailure) -> Int? {
        let length = ByteQueue.recordLength(plaintext.count)
        guard outbound.isEmpty, !keyUpdateDue, !plaintext.isEmpty,
              plaintext.count <= Self.maxPlaintext, length <= buffer.count, let base = buffer.baseAddress
        else { return nil }
        let sealed = ByteQueue.buildRecord(type: 23, content: plaintext, at: base) { header, body, tag in
            adjust(UnsafeMutableRawBufferPointer(rebasing: body[..<plaintext.count]))
            return write.crypt(header: header, body: body, tag: tag)
        }
        guard sealed else {
            throw RecordFailure.sent(alert: TLSAlert.internalError, reason: "sealing a record failed")
        }
        return length
    }

    /// Queues close_notify.
    func sealCloseNotify() {
        guard !alertSent else { return }
        sendAlert(TLSAlert.closeNotify)
    }

    /// Frees the buffers that are empty.
    func releaseBuffers() {
        outbound.releaseIfEmpty()
        if handshakeBytes.isEmpty { handshakeBytes = [] }
    }

    /// Frees the EVP contexts (about 1 KB each); the next record rebuilds its context from the key.
    func releaseContexts() {
        read.release()
        write.release()
    }

    var holdsContexts: Bool { read.holdsContext || write.holdsContext }

    var retainedBytes: Int { outbound.capacity + handshakeBytes.capacity }

    /// Whether our next record must be preceded by a KeyUpdate: the peer asked for one, or the key's limit is near.
    private var keyUpdateDue: Bool { updateOwed || write.sequence >= recordsPerKey }

    private func sealRecord(type: UInt8, _ content: UnsafeRawBufferPointer) throws(RecordFailure) {
        if keyUpdateDue { try updateWriteKey() }
        guard outbound.appendRecord(type: type, content: content, seal: write.crypt) else {
            throw RecordFailure.sent(alert: TLSAlert.internalError, reason: "sealing a record failed")
        }
    }

    /// Sends KeyUpdate under the current key, then moves to the next one; with `requested` the peer must
    /// update its sending key too.
    func updateWriteKey(requested: Bool = false) throws(RecordFailure) {
        let message: [UInt8] = [24, 0, 0, 1, requested ? 1 : 0]
        let sealed = message.withUnsafeBytes { self.outbound.appendRecord(type: 22, content: $0, seal: write.crypt) }
        guard sealed else {
            throw RecordFailure.sent(alert: TLSAlert.internalError, reason: "sealing a KeyUpdate failed")
        }
        write.update()
        updateOwed = false
    }

    private func sendAlert(_ description: UInt8) {
        alertSent = true
        let alert: [UInt8] = [description == TLSAlert.closeNotify || description == TLSAlert.userCanceled ? 1 : 2,
                              description]
        _ = alert.withUnsafeBytes { outbound.appendRecord(type: 21, content: $0, seal: write.crypt) }
    }

    /// Queues a fatal alert and returns the failure to throw.
    private func fatal(_ description: UInt8, _ reason: String) -> RecordFailure {
        if !alertSent { sendAlert(description) }
        return .sent(alert: description, reason: reason)
    }

    // MARK: Opening

    /// Opens every whole record in `input`, appending application data to `plaintext`.
    /// - Returns: true once the peer's close_notify has been read (what follows it is ignored).
    func open(_ input: inout ByteQueue, into plaintext: inout [UInt8]) throws(RecordFailure) -> Bool {
        while input.count >= 5 {
            let (type, length) = try input.withUnreadBytes { bytes throws(RecordFailure) in
                (bytes[0], Int(bytes[3]) << 8 | Int(bytes[4]))
            }
            guard type == 23 else {
                throw fatal(TLSAlert.unexpectedMessage, "a record of type \(type) after the handshake")
            }
            guard length <= Self.maxCiphertext else {
                throw fatal(TLSAlert.recordOverflow, "a record of \(length) bytes")
            }
            guard length > TLS13Suite.tagLength else { throw fatal(TLSAlert.badRecordMAC, "a record too short") }
            guard input.count >= 5 + length else { break }
            let closed = try openRecord(input, bodyLength: length, into: &plaintext)
            input.consume(5 + length)
            if closed { return true }
        }
        return false
    }

    private func openRecord(_ input: ByteQueue, bodyLength: Int, into plaintext: inout [UInt8]) throws(RecordFailure)
        -> Bool
    {
        let innerLength = bodyLength - TLS13Suite.tagLength
        let base = plaintext.count
        plaintext.append(contentsOf: repeatElement(0, count: innerLength))
        let opened = try input.withUnreadBytes { record throws(RecordFailure) -> Bool in
            // The tag is copied to the stack: `crypt` takes a mutable pointer, and the input is not ours to write.
            withUnsafeTemporaryAllocation(byteCount: TLS13Suite.tagLength, alignment: 1) { tag in
                tag.copyMemory(from: UnsafeRawBufferPointer(rebasing: record[(5 + innerLength)..<(5 + bodyLength)]))
                return plaintext.withUnsafeMutableBytes { out in
                    let body = UnsafeMutableRawBufferPointer(rebasing: out[base...])
                    body.copyMemory(from: UnsafeRawBufferPointer(rebasing: record[5..<(5 + innerLength)]))
                    return read.crypt(header: record.baseAddress!, body: body, tag: tag.baseAddress!)
                }
            }
        }
        guard opened else {
            plaintext.removeLast(innerLength)
            throw fatal(TLSAlert.badRecordMAC, "a record failed authentication")
        }
        // The inner plaintext is content, then the content type, then zero padding (RFC 8446 §5.4).
        var end = plaintext.count
        while end > base, plaintext[end - 1] == 0 { end -= 1 }
        guard end > base else {
            plaintext.removeLast(innerLength)
            throw fatal(TLSAlert.unexpectedMessage, "a record without a content type")
        }
        let type = plaintext[end - 1]
        let contentLength = end - 1 - base
        guard contentLength <= Self.maxPlaintext else {
            plaintext.removeLast(innerLength)
            throw fatal(TLSAlert.recordOverflow, "a record with \(contentLength) bytes of plaintext")
        }
        plaintext.removeLast(plaintext.count - (end - 1))
        switch type {
        case 23:
            guard handshakeBytes.isEmpty else {
                plaintext.removeLast(contentLength)
                throw fatal(TLSAlert.unexpectedMessage, "application data inside a handshake message")
            }
            return false
        case 21:
            let alert = Array(plaintext[base...])
            plaintext.removeLast(contentLength)
            guard alert.count == 2 else { throw fatal(TLSAlert.decodeError, "an alert of \(alert.count) bytes") }
            if alert[1] == TLSAlert.closeNotify { return true }
            if alert[1] == TLSAlert.userCanceled { return false }
            throw RecordFailure.received(alert: alert[1])
        case 22:
            handshakeBytes.append(contentsOf: plaintext[base...])
            plaintext.removeLast(contentLength)
            try handlePostHandshakeMessages()
            return false
        default:
            plaintext.removeLast(contentLength)
            throw fatal(TLSAlert.unexpectedMessage, "a record of content type \(type) after the handshake")
        }
    }

    private func handlePostHandshakeMessages() throws(RecordFailure) {
        while handshakeBytes.count >= 4 {
            let length = Int(handshakeBytes[1]) << 16 | Int(handshakeBytes[2]) << 8 | Int(handshakeBytes[3])
            guard length <= Self.maxHandshakeMessage else {
                throw fatal(TLSAlert.unexpectedMessage, "a post-handshake message of \(length) bytes")
            }
            guard handshakeBytes.count >= 4 + length else { return }
            let type = handshakeBytes[0]
            let body = Array(handshakeBytes[4..<(4 + length)])
            handshakeBytes.removeFirst(4 + length)
            switch type {
            case 24:  // KeyUpdate: the peer's next record uses its next secret (RFC 8446 §4.6.3).
                guard body.count == 1 else { throw fatal(TLSAlert.decodeError, "a KeyUpdate of \(body.count) bytes") }
                guard body[0] <= 1 else {
                    throw fatal(TLSAlert.illegalParameter, "a KeyUpdate with request_update \(body[0])")
                }
                guard handshakeBytes.isEmpty else {
                    throw fatal(TLSAlert.unexpectedMessage, "a KeyUpdate not at the end of its record")
                }
                read.update()
                if body[0] == 1 { updateOwed = true }
            case 4 where !isServer:
                break  // NewSessionTicket: this client never resumes, so tickets are dropped.
            default:
                throw fatal(TLSAlert.unexpectedMessage, "handshake message \(type) after the handshake")
            }
        }
    }
}
