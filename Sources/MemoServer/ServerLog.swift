import Foundation
import MemoSystem

/// Where the server's log lines go: one line per event, written whole so lines from threads never interleave.
public struct ServerLog: Sendable {
    private let sink: @Sendable (String) -> Void

    public init(_ sink: @escaping @Sendable (String) -> Void) {
        self.sink = sink
    }

    /// Lines on standard error, each prefixed with the UTC time.
    public static let standardError = ServerLog { line in
        let text = "\(ServerLog.timestamp()) \(line)\n"
        // A log that cannot be written has nowhere to report that either.
        try? FileDescriptor.writeAll(STDERR_FILENO, text)
    }

    /// No lines at all.
    public static let silent = ServerLog { _ in }

    public func callAsFunction(_ line: String) {
        sink(line)
    }

    static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), now.tv_nsec / 1_000_000)
    }
}
