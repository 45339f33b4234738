import Foundation

/// Room kept on the database's disk for deletes: a file of `size` bytes, allocated (`posix_fallocate`, so the
/// blocks are really taken, not a sparse file), beside the database. When a write fails for lack of space the
/// store releases it, so that the deletes that follow have room to be written; it makes it again once the disk
/// has that much free.
// @unchecked Sendable: the store makes it (and holds it once) on the opening thread before it starts its writer
// thread, the only thread that touches it from then on (Thread.start orders the two).
final class DiskReserve: @unchecked Sendable {
    let path: String
    let size: Int
    /// Whether the file holds `size` allocated bytes.
    private(set) var isHeld = false
    /// The disk filled: until the reserve can be made again, the store writes only deletes.
    var short = false
    /// The free space a full disk needs before the reserve is made again and every write goes through.
    var resumeBytes: Int { size + size / 2 }

    init(path: String, size: Int) {
        self.path = path
        self.size = size
    }

    /// Allocates the reserve, or leaves no file when the disk has not that much free (or the size is 0).
    /// - Parameter withRoomToSpare: allocate only when the disk has the reserve and half as much again free, so
    ///   that the writes after it have room too (after a full disk: otherwise the reserve would take back the very
    ///   room it gave).
    /// - Returns: whether the reserve is held.
    @discardableResult
    func hold(withRoomToSpare: Bool = false) -> Bool {
        // No reserve wanted: there is nothing to wait for before writing again.
        if isHeld || size == 0 { return true }
        if withRoomToSpare {
            var stats = statvfs()
            let folder = (path as NSString).deletingLastPathComponent
            guard statvfs(folder.isEmpty ? "." : folder, &stats) == 0,
                  Int(stats.f_bavail) * Int(stats.f_frsize) >= resumeBytes
            else { return false }
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        // posix_fallocate returns the error number itself; on failure the blocks it did allocate are given back.
        if posix_fallocate(descriptor, 0, off_t(size)) == 0, fsync(descriptor) == 0 {
            isHeld = true
        } else {
            _ = ftruncate(descriptor, 0)
            unlink(path)
        }
        return isHeld
    }

    /// Gives the reserve's blocks back to the disk.
    func release() {
        unlink(path)
        isHeld = false
    }
}
