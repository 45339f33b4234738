import Foundation
import MemoWire
import Testing

/// The fuzzers' checks (Fuzz/*.swift), replayed by `swift test` on the seed corpus and on every crash input kept
/// in Fuzz/regressions: decoding gives frames or a typed error, never a trap, and the invariants hold.
enum FuzzReplay {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    /// Every input for `target` in the seed corpus and the regressions, by path.
    static func inputs(_ target: String) throws -> [(String, [UInt8])] {
        var inputs: [(String, [UInt8])] = []
        for folder in ["corpus/\(target)", "regressions/\(target)"] {
            let url = root.appendingPathComponent(folder)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: url.path) else { continue }
            for name in names.sorted() {
                inputs.append(("\(folder)/\(name)", Array(try Data(contentsOf: url.appendingPathComponent(name)))))
            }
        }
        return inputs
    }

    struct Outcome: Equatable {
        var frames: [Frame] = []
        var error: WireError?
        var buffered = 0
    }

    static func decode(_ bytes: [UInt8], pieceSizes: [Int], maxFrameSize: Int) -> Outcome {
        var decoder = FrameDecoder(maxFrameSize: maxFrameSize)
        var outcome = Outcome()
        var offset = 0
        var piece = 0
        while offset < bytes.count {
            let size = min(pieceSizes[piece % pieceSizes.count], bytes.count - offset)
            decoder.append(bytes[offset..<(offset + size)])
            offset += size
            piece += 1
            do throws(WireError) {
                while let frame = try decoder.next() { outcome.frames.append(frame) }
            } catch {
                outcome.error = error
                return outcome
            }
        }
        outcome.buffered = decoder.bufferedByteCount
        return outcome
    }
}

@Suite("Fuzz regressions: the fuzzers' checks on the seeds and on every kept crash input")
struct FuzzRegressionTests {
    @Test(arguments: [WireProtocol.defaultMaxFrameSize, 64])
    func frameInputsDecodeAlikeInPiecesAllAtOnceAndByteByByte(maxFrameSize: Int) throws {
        let inputs = try FuzzReplay.inputs("frame")
        #expect(inputs.count >= Message.Kind.allCases.count)
        for (name, bytes) in inputs {
            let whole = FuzzReplay.decode(bytes, pieceSizes: [max(bytes.count, 1)], maxFrameSize: maxFrameSize)
            let pieces = FuzzReplay.decode(bytes, pieceSizes: [3, 1, 17, 600, 5], maxFrameSize: maxFrameSize)
            let byteByByte = FuzzReplay.decode(bytes, pieceSizes: [1], maxFrameSize: maxFrameSize)
            #expect(pieces == whole, "\(name)")
            #expect(byteByByte == whole, "\(name)")
            let encoded = whole.frames.flatMap(\.bytes)
            #expect(Array(bytes.prefix(encoded.count)) == encoded, "\(name): frames re-encode to their bytes")
            if whole.error == nil { #expect(encoded.count + whole.buffered == bytes.count, "\(name)") }
        }
    }

    @Test func messageInputsDecodeAsEveryTypeToATypedErrorOrACanonicalRoundTrip() throws {
        let inputs = try FuzzReplay.inputs("message")
        #expect(inputs.count >= Message.Kind.allCases.count)
        var decoded = 0
        for (name, payload) in inputs {
            for kind in Message.Kind.allCases {
                let message: Message
                do throws(WireError) {
                    message = try Message(frame: Frame(type: kind.rawValue, requestID: 7, payload: payload))
                } catch {
                    #expect(ErrorCode.known.contains { $0.0 == error.code }, "\(name) as \(kind): \(error)")
                    continue
                }
                decoded += 1
                let frame = try #require(try decodeAll([message.frame(requestID: 7)]).first)
                #expect(frame.payload == payload, "\(name) as \(kind) re-encodes to other bytes")
                #expect(try Message(frame: frame) == message, "\(name) as \(kind)")
            }
        }
        // Each seed decodes at least as its own type.
        #expect(decoded >= inputs.count)
    }
}
