// libFuzzer target for `FrameDecoder`: the input is a byte stream, fed in pieces whose sizes come from the input.
// Build and run with `Fuzz/run.sh SECONDS frame`.
import MemoWire

/// What a decoder made of a whole stream: the frames in order, then how it stopped.
private struct Outcome: Equatable {
    var frames: [Frame] = []
    /// The error that ended the stream, nil when the decoder only wanted more bytes.
    var error: WireError?
    /// Bytes held back as a partial frame (only meaningful without an error).
    var buffered = 0
}

/// A small deterministic generator (SplitMix64) seeded from the input, so that a crash input replays exactly.
private struct SplitMix {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Feeds `pieces` of `bytes` one after another, taking every frame ready after each piece.
private func decode(_ bytes: [UInt8], pieces: [Int], maxFrameSize: Int) -> Outcome {
    var decoder = FrameDecoder(maxFrameSize: maxFrameSize)
    var outcome = Outcome()
    var offset = 0
    for size in pieces {
        // Alternate the two `append` overloads so both are exercised.
        if offset % 2 == 0 {
            decoder.append(bytes[offset..<(offset + size)])
        } else {
            bytes.withUnsafeBytes { decoder.append(UnsafeRawBufferPointer(rebasing: $0[offset..<(offset + size)])) }
        }
        offset += size
        do throws(WireError) {
            while let frame = try decoder.next() { outcome.frames.append(frame) }
        } catch {
            outcome.error = error
            return outcome
        }
    }
    precondition(offset == bytes.count, "the pieces must cover the input")
    outcome.buffered = decoder.bufferedByteCount
    return outcome
}

@_cdecl("LLVMFuzzerTestOneInput")
public func frameDecoderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    var seed = UInt64(size)
    for byte in bytes.prefix(64) { seed = seed &* 31 &+ UInt64(byte) }
    var random = SplitMix(state: seed)
    // Mostly the default limit; sometimes a small one so that `frameTooLarge` is reached with short inputs.
    let limit = random.next() % 4 == 0
        ? WireProtocol.headerSize + Int(random.next() % 256) : WireProtocol.defaultMaxFrameSize

    var pieces: [Int] = []
    var left = size
    while left > 0 {
        let piece = min(left, 1 + Int(random.next() % UInt64(random.next() % 2 == 0 ? 8 : 600)))
        pieces.append(piece)
        left -= piece
    }
    let chunked = decode(bytes, pieces: pieces, maxFrameSize: limit)
    let whole = decode(bytes, pieces: size == 0 ? [] : [size], maxFrameSize: limit)
    let byteByByte = decode(bytes, pieces: Array(repeating: 1, count: size), maxFrameSize: limit)
    guard chunked == whole, byteByByte == whole else {
        fatalError("pieces, all at once and one byte at a time disagree: \(chunked) / \(whole) / \(byteByByte)")
    }

    // The frames are the input's bytes, re-encoded exactly, and nothing is lost or invented.
    var consumed = 0
    for frame in whole.frames {
        let encoded = frame.bytes
        guard encoded.count <= limit, Array(bytes[consumed..<(consumed + encoded.count)]) == encoded else {
            fatalError("frame \(frame) does not re-encode to the bytes it came from")
        }
        consumed += encoded.count
    }
    if whole.error == nil, consumed + whole.buffered != size {
        fatalError("\(consumed) bytes in frames and \(whole.buffered) buffered, but \(size) were fed")
    }
    return 0
}
