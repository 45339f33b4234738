import Glibc

/// The outcome of a non-blocking system call that succeeded or would have blocked.
public enum IOResult<Value: Sendable>: Sendable {
    case done(Value)
    case wouldBlock
}

/// Wraps system calls once: retries `EINTR`, maps `EAGAIN`/`EWOULDBLOCK` to `.wouldBlock`, throws `NetError`
/// for every other failure.
enum Syscall {
    /// Calls `body` until it does not fail with `EINTR`.
    /// - Returns: `.done(result)` for a non-negative result, `.wouldBlock` for `EAGAIN`/`EWOULDBLOCK`.
    /// - Throws: `NetError` naming `operation` for every other `errno`.
    @inline(__always)
    static func nonBlocking<R: BinaryInteger & Sendable>(
        _ operation: @autoclosure () -> String,
        _ body: () -> R
    ) throws(NetError) -> IOResult<R> {
        while true {
            let result = body()
            if result >= 0 { return .done(result) }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: throw NetError(errno: code, operation: operation())
            }
        }
    }

    /// Calls `body` until it does not fail with `EINTR`; every other failure, `EAGAIN` included, throws.
    @inline(__always)
    @discardableResult
    static func call<R: BinaryInteger>(_ operation: @autoclosure () -> String, _ body: () -> R) throws(NetError) -> R {
        while true {
            let result = body()
            if result >= 0 { return result }
            let code = errno
            if code == EINTR { continue }
            throw NetError(errno: code, operation: operation())
        }
    }

    /// Closes `fd` once. `EINTR` is not retried: on Linux the descriptor is released even then, and a retry
    /// could close a descriptor that another thread has just been given.
    static func close(_ fd: Int32) {
        _ = Glibc.close(fd)
    }

    /// Sets an integer socket option.
    static func setOption(
        _ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32, _ label: String
    ) throws(NetError) {
        var value = value
        try call("setsockopt(\(label))") {
            setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Reads an integer socket option.
    static func getOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ label: String) throws(NetError) -> Int32 {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        try call("getsockopt(\(label))") { getsockopt(fd, level, name, &value, &length) }
        return value
    }

    /// Ignores SIGPIPE for the whole process, once. Writes use MSG_NOSIGNAL as well; this also covers
    /// descriptors written with plain `write(2)`, such as OpenSSL's socket BIO.
    static func ignoreSIGPIPE() {
        _ = sigpipeIgnored
    }

    private static let sigpipeIgnored: Bool = {
        signal(SIGPIPE, SIG_IGN)
        return true
    }()
}
