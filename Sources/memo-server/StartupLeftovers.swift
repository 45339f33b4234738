import Foundation
import Glibc

/// What `serve` is about to make on its way up (the SQLite file and its companions, a CA with its keys, the folders
/// above them), noted before it is made, so that a server that then cannot listen (a busy port, an address that
/// does not resolve) removes it again and leaves nothing behind. What was there before is never noted.
struct StartupLeftovers {
    private var files: [String] = []
    private var directories: [String] = []

    private static func exists(_ path: String) -> Bool {
        var status = stat()
        return lstat(path, &status) == 0
    }

    /// Notes `path`, a file about to be made, unless it is there, and every missing folder above it.
    mutating func expect(file path: String) {
        if !Self.exists(path) { files.append(path) }
        expect(directory: (path as NSString).deletingLastPathComponent)
    }

    /// Notes `path`, a folder that may be made, and the missing folders above it.
    mutating func expect(directory path: String) {
        var directory = path
        while !directory.isEmpty, directory != "/", directory != ".", !Self.exists(directory) {
            if !directories.contains(directory) { directories.append(directory) }
            directory = (directory as NSString).deletingLastPathComponent
        }
    }

    /// Removes what was noted and made: the files, then the folders, deepest first and only when empty.
    /// - Returns: what it removed.
    @discardableResult
    func remove() -> [String] {
        var removed = files.filter { unlink($0) == 0 }
        for directory in directories.sorted(by: { $0.count > $1.count }) where rmdir(directory) == 0 {
            removed.append(directory)
        }
        return removed
    }
}
