import Foundation
import Glibc

/// A folder with little room: a 64 KiB tmpfs when the tests run as root, else (no mount allowed) a folder whose
/// files cannot be created while "full" (its mode is 0500; root ignores modes, hence the tmpfs).
package final class SmallDisk {
    package let path: String
    private let mounted: Bool

    package init(in path: String) throws {
        self.path = path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        mounted = geteuid() == 0 && mount("tmpfs", path, "tmpfs", 0, "size=64k") == 0
    }

    /// Leaves no room for another file.
    package func fill() throws {
        guard mounted else {
            chmod(path, 0o500)
            return
        }
        let filler = open(path + "/filler", O_WRONLY | O_CREAT, 0o600)
        guard filler >= 0 else { throw POSIXError(.EIO) }
        defer { close(filler) }
        let block = [UInt8](repeating: 0x61, count: 4096)
        while write(filler, block, block.count) > 0 {}
    }

    package func free() {
        if mounted { unlink(path + "/filler") } else { chmod(path, 0o700) }
    }

    package func remove() {
        if mounted { umount(path) } else { chmod(path, 0o700) }
    }
}
