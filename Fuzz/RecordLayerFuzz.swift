// libFuzzer target for the TLS 1.3 record layer that takes over after the handshake (TLSRecordLayer): it must
// turn any bytes into plaintext or a typed failure, never trap. Compiled into one module with the MemoTLS
// sources (it uses their internal types); build and run with `Fuzz/run.sh SECONDS record`.
//
// Random bytes almost never pass the AEAD tag, so the input mostly describes records that are sealed with the
// reader's key before it sees them: inner plaintexts of any content type, padding, alerts, KeyUpdates and
// handshake fragments, mixed with raw bytes.
//
// Input: a sequence of chunks `op, length, bytes`:
//   op & 3 == 0  raw bytes, appended as they are;
//   op & 3 == 1  `bytes` sealed as one record's whole inner plaintext (content, type, padding: the fuzzer's choice);
//   op & 3 == 2  the sealer moves to its next key (as after a KeyUpdate it sent in a chunk of kind 1);
//   op & 3 == 3  everything so far is fed to the reader, in a piece of `length` bytes and the rest.
// `length` is one byte, times 64 when op & 4 (for records near the 16 KiB limit).

@_cdecl("LLVMFuzzerTestOneInput")
public func recordLayerFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let suite = TLS13Suite(protocolID: input.first.map { 0x1301 + UInt16($0 % 3) } ?? 0x1301)!
    let secret = [UInt8](repeating: 0x5A, count: suite.hashLength)
    let peer = [UInt8](repeating: 0xA5, count: suite.hashLength)
    let reader = TLSRecordLayer(
        suite: suite, readSecret: secret, writeSecret: peer, isServer: input.count % 2 == 0, outbound: ByteQueue())
    let sealer = RecordProtection(suite: suite, secret: secret, encrypting: true)

    var wire: [UInt8] = []
    var queue = ByteQueue()
    var plaintext: [UInt8] = []
    var failed = false
    func deliver(_ bytes: ArraySlice<UInt8>) {
        guard !failed, !bytes.isEmpty else { return }
        bytes.withUnsafeBytes { queue.append($0) }
        do throws(RecordFailure) {
            if try reader.open(&queue, into: &plaintext) { failed = true }  // close_notify: nothing more is read
        } catch {
            failed = true
        }
    }

    var index = 1
    while index + 1 < input.count {
        let op = input[index]
        let length = min(Int(input[index + 1]) * (op & 4 != 0 ? 64 : 1), input.count - index - 2)
        let chunk = input[(index + 2)..<(index + 2 + length)]
        index += 2 + length
        switch op & 3 {
        case 0:
            wire += chunk
        case 1:
            let inner = Array(chunk)
            let bodyLength = inner.count + TLS13Suite.tagLength
            var record: [UInt8] = [23, 3, 3, UInt8(truncatingIfNeeded: bodyLength >> 8), UInt8(truncatingIfNeeded: bodyLength)]
            record += inner
            record += [UInt8](repeating: 0, count: TLS13Suite.tagLength)
            let sealed = record.withUnsafeMutableBytes { raw in
                sealer.crypt(
                    header: UnsafeRawPointer(raw.baseAddress!),
                    body: UnsafeMutableRawBufferPointer(rebasing: raw[5..<(5 + inner.count)]),
                    tag: raw.baseAddress! + 5 + inner.count)
            }
            precondition(sealed, "sealing failed")
            wire += record
        case 2:
            sealer.update()
        default:
            let cut = min(length, wire.count)
            deliver(wire[..<cut])
            deliver(wire[cut...])
            wire.removeAll()
        }
    }
    deliver(wire[...])
    // Whatever happened, the reader's output is bounded by what was fed, and it can still seal.
    precondition(plaintext.count <= size * 2 + 16)
    if !failed { _ = try? reader.seal(UnsafeRawBufferPointer(start: data, count: min(size, 100))) }
    return 0
}
