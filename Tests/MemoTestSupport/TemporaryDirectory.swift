import Foundation
import Testing

/// A folder removed when the last reference goes away.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init() throws {
        let template = NSTemporaryDirectory() + "memo-test-XXXXXX"
        var bytes = Array(template.utf8CString)
        guard mkdtemp(&bytes) != nil else { throw POSIXError(.EIO) }
        path = String(decoding: bytes.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a fresh temporary directory that is removed afterwards.
package func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let template = NSTemporaryDirectory() + "memo-tls-XXXXXX"
    var bytes = Array(template.utf8CString)
    let created = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    let path = String(cString: try #require(created))
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}
