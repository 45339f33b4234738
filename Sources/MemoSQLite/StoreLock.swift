import Foundation
import MemoModel
import Synchronization

/// The exclusive lock that makes one SQLite file one server's: `flock` on `PATH.lock` beside the database, held
/// until the store closes (the kernel drops it when the process dies, so a crash leaves no stale lock).
///
/// Two servers on one file would each keep their own table and revision counter in memory and collide on every
/// write; the second is refused before it opens the database, so it writes nothing. The file holds the holder's
/// pid, which the refusal names.
final class StoreLock: Sendable {
    let path: String
    /// The open lock file; -1 once released.
    private let descriptor: Atomic<Int32>

    /// Takes the lock or says who holds it.
    /// - Throws: `MemoError.storage` naming the holder's pid when another process (or another store in this
    ///   one) holds the lock, or why the lock file cannot be opened.
    init(databasePath: String) throws(MemoError) {
        let path = databasePath + ".lock"
        self.path = path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .storage("cannot open the lock file \(path): \(Self.reason(errno))") }
        let patience = ContinuousClock.now + .seconds(2)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EINTR { continue }
            let holder = Self.holder(fd)
            // A child this process forks keeps a copy of a closed store's lock description (and so the flock)
            // until it execs (O_CLOEXEC acts only then). The file then names our own pid while no store of ours
            // holds the path: wait for that exec, briefly, instead of refusing.
            if code == EWOULDBLOCK, holder == "\(getpid())", !Self.held.withLock({ $0.contains(path) }),
                ContinuousClock.now < patience
            {
                usleep(5_000)
                continue
            }
            close(fd)
            guard code == EWOULDBLOCK else { throw .storage("cannot lock \(path): \(Self.reason(code))") }
            throw .storage(
                "\(databasePath) is in use by another memo-server (pid \(holder ?? "unknown"), lock file \(path)); "
                    + "a SQLite file serves one server: several servers need a shared store "
                    + "(--store postgres://...)")
        }
        // Informational only, so a failure (a full disk) does not stop the server.
        let pid = Array("\(getpid())\n".utf8)
        if ftruncate(fd, 0) == 0 { _ = pid.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) } }
        descriptor = Atomic(fd)
        _ = Self.held.withLock { $0.insert(path) }
    }

    /// Gives the lock up; later calls do nothing.
    func release() {
        let fd = descriptor.exchange(-1, ordering: .acquiringAndReleasing)
        guard fd >= 0 else { return }
        _ = Self.held.withLock { $0.remove(path) }
        close(fd)
    }

    deinit {
        release()
    }

    /// The lock files that stores of this process hold now.
    private static let held = Mutex<Set<String>>([])

    /// The pid written in the lock file by its holder, if it wrote one.
    private static func holder(_ fd: Int32) -> String? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = buffer.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return nil }
        let text = String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty || !text.allSatisfy(\.isNumber) ? nil : text
    }

    private static func reason(_ code: Int32) -> String {
        String(cString: strerror(code))
    }
}
