import Foundation

/// Bytes as hex in groups of four, as `xxd` shows them, for comparing frames with the specification.
package func hex(_ bytes: [UInt8]) -> String {
    stride(from: 0, to: bytes.count, by: 4).map { start in
        bytes[start..<min(start + 4, bytes.count)].map { String(format: "%02x", $0) }.joined()
    }.joined(separator: " ")
}
