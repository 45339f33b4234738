#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MemoSystem
import MemoTLS

/// File-system helpers for certificate and key files: create-only writes with a fixed mode.
enum CertificateFiles {
    /// Mode for private keys: readable by the owner only.
    static let keyMode: mode_t = 0o600
    /// Mode for certificates, which are public.
    static let certificateMode: mode_t = 0o644

    /// Whether anything (file, link, directory) exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0
    }

    /// Throws `.fileExists` naming the first of `paths` that exists, unless `force` is set.
    static func refuseOverwrite(_ paths: [String], force: Bool) throws(TLSError) {
        guard !force else { return }
        for path in paths where exists(path) {
            throw TLSError(
                kind: .fileExists, operation: "writing \(path)",
                detail: "not overwritten without --force")
        }
    }

    /// Creates `directory` with mode 0700 if it does not exist (parents included).
    static func ensureDirectory(_ directory: String) throws(TLSError) {
        var info = stat()
        if stat(directory, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFDIR else {
                throw TLSError(kind: .fileSystem, operation: "creating \(directory)", detail: "not a directory")
            }
            return
        }
        let parent = parentDirectory(of: directory)
        if !parent.isEmpty, parent != directory { try ensureDirectory(parent) }
        if mkdir(directory, 0o700) != 0, errno != EEXIST {
            throw systemError("creating directory \(directory)")
        }
    }

    /// Writes `bytes` to a new file at `path` created with `mode`; with `force` an existing file is removed
    /// first, so the new file never inherits a wider mode from the old one.
    static func write(_ bytes: [UInt8], to path: String, mode: mode_t, force: Bool) throws(TLSError) {
        if force, unlink(path) != 0, errno != ENOENT {
            throw systemError("removing \(path)")
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        if fd < 0 {
            if errno == EEXIST {
                throw TLSError(
                    kind: .fileExists, operation: "writing \(path)",
                    detail: "not overwritten without --force")
            }
            throw systemError("creating \(path)")
        }
        defer { close(fd) }
        do {
            try FileDescriptor.writeAll(fd, bytes)
        } catch {
            throw TLSError(kind: .fileSystem, operation: "writing \(path)", detail: error.reason)
        }
        if fsync(fd) != 0 { throw systemError("writing \(path)") }
    }

    /// Replaces the file at `path` with `bytes` in one rename: a reader (a server reloading) sees the old file
    /// or the new one, never a half-written one.
    static func replace(_ bytes: [UInt8], at path: String, mode: mode_t) throws(TLSError) {
        let temporary = path + ".new"
        try write(bytes, to: temporary, mode: mode, force: true)
        if rename(temporary, path) != 0 {
            let error = systemError("replacing \(path)")
            unlink(temporary)
            throw error
        }
    }

    /// The whole file at `path`.
    static func read(_ path: String) throws(TLSError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw systemError("reading \(path)") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw systemError("reading \(path)")
            }
            if count == 0 { return bytes }
            bytes.append(contentsOf: chunk[..<count])
        }
    }

    /// The names of the entries of `directory`, sorted; empty when it cannot be read.
    static func names(in directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Removes `path` if it exists.
    static func remove(_ path: String) throws(TLSError) {
        if unlink(path) != 0, errno != ENOENT { throw systemError("removing \(path)") }
    }

    /// `directory/name`, without doubling a trailing slash.
    static func join(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    private static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    private static func systemError(_ operation: String) -> TLSError {
        TLSError(kind: .fileSystem, operation: operation, detail: String(cString: strerror(errno)))
    }
}
