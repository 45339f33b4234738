import Glibc
import MemoSystem
import MemoTLS

/// TLS 1.3 sessions saved between memo-client processes, so that the next command to the same server resumes
/// (no certificate signature on either side) instead of doing a full handshake (README.md, "TLS session
/// resumption").
///
/// One file per server address, CA and client certificate (`TLSContext.sessionCacheKey`):
/// `DIRECTORY/tls-session-<sha256 hex>`, holding the session as OpenSSL's DER (`i2d_SSL_SESSION`), mode 0600 in a
/// 0700 folder, written to a temporary file renamed into place so that a reader sees a whole session or none. It is a cache:
/// written without fsync, and a file that is missing, unreadable, corrupt or expired only means a full handshake.
/// Standard library and Glibc only: it is on every command's path.
struct TLSSessionCache: Sendable {
    /// The folder (`$XDG_CACHE_HOME/memo`, or `~/.cache/memo`, for memo-client).
    let directory: String

    /// Largest session file read; a session with the server's certificate is about 1.5 KB.
    static let maxSize = 64 * 1024

    /// The file for sessions with `server` under `context`, nil when no key can be made.
    func path(server: String, context: TLSContext) -> String? {
        guard let key = context.sessionCacheKey(server: server) else { return nil }
        return (directory.hasSuffix("/") ? directory : directory + "/") + "tls-session-" + key
    }

    /// Whether a session file (not empty) is saved for `server` under a client context made from `configuration`.
    /// A cheap look (one `stat`): what is in it is judged when it is offered.
    func hasSession(server: String, configuration: TLSConfiguration) -> Bool {
        guard let key = TLSContext.sessionCacheKey(server: server, configuration: configuration) else { return false }
        var info = stat()
        let path = (directory.hasSuffix("/") ? directory : directory + "/") + "tls-session-" + key
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG && info.st_size > 0
    }

    /// The saved session at `path`, nil when there is none or it cannot be read.
    static func load(_ path: String) -> [UInt8]? {
        guard let bytes = FileDescriptor.readAll(path: path, limit: maxSize, noFollow: true), !bytes.isEmpty else {
            return nil
        }
        return bytes
    }

    /// Replaces the file at `path` with `session`, creating the folder (0700) if needed. Failures are ignored:
    /// the next command then does a full handshake.
    static func save(_ session: [UInt8], to path: String) {
        guard let slash = path.lastIndex(of: "/") else { return }
        let folder = String(path[..<slash])
        if !folder.isEmpty, access(folder, F_OK) != 0 { makeFolders(folder) }
        let temporary = path + ".tmp-\(getpid())"
        unlink(temporary)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        var written = true
        do { try FileDescriptor.writeAll(fd, session) } catch { written = false }
        close(fd)
        // The old file goes first: ext4 flushes a file renamed over another one (auto_da_alloc), 0.4 ms of
        // system time here, which a cache does not need. A command reading in between finds no file: a full
        // handshake, never half a session.
        if written { unlink(path) }
        if !written || rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// Creates `folder` and the folders above it that are missing, each with mode 0700.
    private static func makeFolders(_ folder: String) {
        var prefix = folder.hasPrefix("/") ? "" : "."
        for part in folder.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += "/" + part
            if access(prefix, F_OK) != 0 { _ = mkdir(prefix, 0o700) }
        }
    }
}
