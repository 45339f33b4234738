import Foundation

/// A process's resident memory in KiB (VmRSS, from /proc; `"self"` for this process), nil when it cannot be read:
/// memo-bench and memo-torture watch a server's, and memo-bench its own.
public func residentKiB(of process: String) -> Int? {
    guard let status = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else { return nil }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    }
    return nil
}
