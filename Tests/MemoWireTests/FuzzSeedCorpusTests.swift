import Foundation
import MemoWire
import Testing

/// The fuzzers' seed corpus in Fuzz/corpus: valid frames of every message type, made from `sampleMessages`.
/// `MEMO_RECORD_FUZZ_CORPUS=1 swift test --filter FuzzSeedCorpus` rewrites it; otherwise the test checks that the
/// committed files are exactly what the codec makes today.
enum FuzzSeedCorpus {
    static let directory = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz/corpus")

    /// File name to bytes, for each target.
    static var expected: [String: [String: [UInt8]]] {
        var frame: [String: [UInt8]] = [:]
        var message: [String: [UInt8]] = [:]
        for (index, sample) in sampleMessages.enumerated() {
            let name = String(format: "%02d-%@", index, "\(sample.kind)")
            let bytes = sample.frame(requestID: UInt32(index + 1))
            frame[name] = bytes
            message[name] = Array(bytes.dropFirst(WireProtocol.headerSize))
        }
        // A pipelined stream, as a client sends it, and a stream that ends inside a frame.
        let stream = sampleMessages.enumerated().flatMap { $1.frame(requestID: UInt32($0 + 1)) }
        frame["all-pipelined"] = stream
        frame["all-but-last-byte"] = Array(stream.dropLast())
        return ["frame": frame, "message": message]
    }

    static func stored(_ target: String) throws -> [String: [UInt8]] {
        let folder = directory.appendingPathComponent(target)
        var files: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            files[name] = Array(try Data(contentsOf: folder.appendingPathComponent(name)))
        }
        return files
    }

    static func record() throws {
        for (target, files) in expected {
            let folder = directory.appendingPathComponent(target)
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (name, bytes) in files { try Data(bytes).write(to: folder.appendingPathComponent(name)) }
        }
    }
}

@Suite("Fuzz seed corpus")
struct FuzzSeedCorpusTests {
    @Test func theCommittedSeedsAreTheValidFramesOfEveryMessageType() throws {
        if ProcessInfo.processInfo.environment["MEMO_RECORD_FUZZ_CORPUS"] == "1" { try FuzzSeedCorpus.record() }
        let expected = FuzzSeedCorpus.expected
        for (target, files) in expected {
            let stored = try FuzzSeedCorpus.stored(target)
            #expect(stored == files, "Fuzz/corpus/\(target) is stale: MEMO_RECORD_FUZZ_CORPUS=1 rewrites it")
        }
        // Every type is seeded, and each message seed is the payload its type decodes.
        let seeds = try #require(expected["message"])
        for (index, sample) in sampleMessages.enumerated() {
            let name = String(format: "%02d-%@", index, "\(sample.kind)")
            let payload = try #require(seeds[name])
            #expect(try Message(frame: Frame(type: sample.kind.rawValue, requestID: 1, payload: payload)) == sample)
        }
        #expect(Set(sampleMessages.map(\.kind)) == Set(Message.Kind.allCases))
    }
}
