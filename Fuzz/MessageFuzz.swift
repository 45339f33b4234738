// libFuzzer target for `Message(frame:)`: the input is a frame payload, decoded as every message type. A message
// that decodes must encode to the same payload and decode again to the same message.
// Build and run with `Fuzz/run.sh SECONDS message`.
import MemoWire

private func check(type: UInt8, payload: [UInt8]) {
    let message: Message
    do throws(WireError) {
        message = try Message(frame: Frame(type: type, requestID: 7, payload: payload))
    } catch {
        // A typed error is the expected answer to most inputs; its code must be one the protocol defines.
        guard ErrorCode.known.contains(where: { $0.0 == error.code }) else {
            fatalError("\(error) maps to the undefined code \(error.code)")
        }
        _ = error.description
        return
    }
    guard message.kind.rawValue == type else { fatalError("type 0x\(type) decoded as \(message.kind)") }

    let encoded = message.frame(requestID: 7)
    var decoder = FrameDecoder(maxFrameSize: Int(UInt32.max))
    decoder.append(encoded)
    let frame: Frame?
    do throws(WireError) {
        frame = try decoder.next()
    } catch {
        fatalError("the re-encoded \(message) is not a frame: \(error)")
    }
    guard let frame, decoder.bufferedByteCount == 0 else {
        fatalError("the re-encoded \(message) is not exactly one frame")
    }
    // The encoding is canonical: the decoder accepts one spelling of each message.
    guard frame.type == type, frame.requestID == 7, frame.payload == payload else {
        fatalError("\(message) re-encodes to other bytes: \(frame.payload) instead of \(payload)")
    }
    let again: Message
    do throws(WireError) {
        again = try Message(frame: frame)
    } catch {
        fatalError("the re-encoded \(message) does not decode: \(error)")
    }
    guard again == message else { fatalError("\(message) decodes again as \(again)") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func messageFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let payload = Array(UnsafeBufferPointer(start: data, count: size))
    for kind in Message.Kind.allCases { check(type: kind.rawValue, payload: payload) }
    // One type byte the protocol does not define, chosen by the input, must be refused.
    let undefined = payload.first ?? 0
    if Message.Kind(rawValue: undefined) == nil { check(type: undefined, payload: payload) }
    return 0
}
