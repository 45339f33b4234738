import Glibc
import MemoModel
/// Reads a file descriptor line by line with plain `read(2)`, so that anything readable works the same (a regular
/// file, a pipe, `/dev/stdin`, `/dev/null`, a process substitution's `/dev/fd/N`), and only one buffer of input is
/// held at a time, however long the input.
final class LineReader {
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    /// What one read(2) fills, appended to `buffer` by copying.
    private let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    private var start = 0
    private var ended = false
    /// The number of the line `next()` returned last (1 for the first).
    private(set) var lineNumber = 0
    /// How many bytes were read so far.
    private(set) var bytesRead = 0
    /// The size of a regular file (for a progress estimate); nil for a pipe or a device.
    var size: Int? {
        var status = stat()
        guard fstat(fd, &status) == 0, status.st_mode & S_IFMT == S_IFREG else { return nil }
        return Int(status.st_size)
    }

    /// Opens `path` ("-" is standard input).
    /// - Throws: `MemoError.invalidArgument` naming the path and the system's reason.
    init(path: String) throws(MemoError) {
        if path == "-" {
            fd = STDIN_FILENO
            ownsDescriptor = false
            return
        }
        let opened = open(path, O_RDONLY | O_CLOEXEC)
        guard opened >= 0 else { throw .invalidArgument("cannot read \(path): \(String(cString: strerror(errno)))") }
        fd = opened
        ownsDescriptor = true
    }

    deinit {
        chunk.deallocate()
        if ownsDescriptor { close(fd) }
    }

    /// The next line's bytes without its "\n" (a final line without one counts); nil at the end.
    /// - Throws: `MemoError.invalidArgument` when reading fails (a directory, an I/O error).
    func next(name: String) throws(MemoError) -> [UInt8]? {
        while true {
            // memchr and a contiguous copy: the line is then decoded on String's fast path.
            let newline = buffer.withUnsafeBytes { raw -> Int? in
                guard start < raw.count, let found = memchr(raw.baseAddress! + start, 0x0A, raw.count - start)
                else { return nil }
                return UnsafeRawPointer(found) - raw.baseAddress!
            }
            if let newline {
                let line = Array(buffer[start..<newline])
                start = newline + 1
                lineNumber += 1
                return line
            }
            if ended {
                guard start < buffer.count else { return nil }
                let line = Array(buffer[start...])
                start = buffer.count
                lineNumber += 1
                return line
            }
            // Drop what was returned before reading more, so the buffer holds about one line and one read.
            if start > 0 {
                buffer.removeSubrange(0..<start)
                start = 0
            }
            let got = read(fd, chunk.baseAddress, chunk.count)
            if got < 0 {
                let code = errno
                if code == EINTR { continue }
                throw .invalidArgument("cannot read \(name): \(String(cString: strerror(code)))")
            }
            bytesRead += got
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<got]))
            if got == 0 { ended = true }
        }
    }
}
