import Foundation
import MemoModel
import MemoSystem
import MemoViewModels

#if canImport(Glibc)
import Glibc
#endif

/// Hands the compose text to the user's editor ($VISUAL, $EDITOR, else vi) and takes back what it saved.
///
/// The editor is spawned with `posix_spawn` in the front end's own process group, which is the terminal's
/// foreground group: it may read and write the terminal (and /dev/tty) without being stopped by SIGTTIN or
/// SIGTTOU. (Foundation's `Process` puts the child in a group of its own, which the terminal then stops.) The
/// text goes to `memo.txt` (mode 0600) in a private folder (mode 0700) that is removed on every way out: the
/// editor ending either way, or a thrown error. (A terminating signal ends the editor first: the front end's loop
/// reads it while the editor runs, and acts on it once the editor has gone and the folder with it.)
enum ExternalEditor {
    /// The editor ran but gave no text back: it was not found, could not run, exited non-zero or was killed.
    struct Failure: Error, Sendable, Hashable {
        /// The shell's exit status, or 128 + the signal that ended it.
        var status: Int32
    }

    /// What the compose scene's message line says about a failed hand-off to `command` (the text stays as it was).
    static func describe(_ error: any Error, command: String, strings: Strings) -> String {
        guard let failure = error as? Failure else { return "\(command): \(error)" }
        switch failure.status {
        // The shell's words for a command it could not find or run (POSIX: 127 and 126).
        case 127: return strings.editorNotFound(command)
        case 126: return strings.editorNotExecutable(command)
        case 129...: return strings.editorKilled(command, failure.status - 128)
        default: return strings.editorExited(command, failure.status)
        }
    }

    /// Writes `text` to a private temporary file, gives the terminal to the editor (cooked mode, main screen) and
    /// reads the file back once the editor exits. The front end's loop goes on meanwhile (its signals are read;
    /// the terminal's input is not): the wait for the editor's exit is a thread of its own.
    /// - Parameter started: told the editor's process id, so that a terminating signal can end it too.
    /// - Returns: the edited text.
    /// - Throws: `Failure` when the editor did not exit 0 (the caller leaves the text alone and says why, with
    ///   `describe`), `TerminalError` when it could not be started.
    @FrontEnd
    static func edit(
        _ text: String, command: String, terminal: Terminal, reader: InputReader, started: (pid_t) -> Void
    ) async throws -> String {
        let directory = try makePrivateFolder()
        defer {
            try? FileManager.default.removeItem(atPath: directory)
        }
        let path = directory + "/memo.txt"
        do {
            try DurableFile.create(path, Array((text + "\n").utf8), mode: 0o600)
        } catch {
            throw MemoError.storage(error.message)
        }

        reader.pause()
        terminal.leave()
        defer {
            try? terminal.enter()
            reader.resume()
        }
        // Through the shell, so that EDITOR may carry arguments ("code --wait").
        let pid = try spawn("/bin/sh", ["sh", "-c", command + " \"$1\"", "memo-editor", path])
        started(pid)
        let status = try await exitStatus(of: pid)
        guard status == 0 else { throw Failure(status: status) }
        var edited = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self)
        // Editors end the file with a newline the memo did not have.
        if edited.hasSuffix("\n") { edited.removeLast() }
        return edited
    }

    /// `$TMPDIR/memo-XXXXXX`, made by mkdtemp (mode 0700, a name no one else can have taken).
    private static func makePrivateFolder() throws -> String {
        var base = ProcessInfo.processInfo.environment["TMPDIR"] ?? "/tmp"
        if base.isEmpty { base = "/tmp" }
        if base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/memo-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw TerminalError.system("mkdtemp", errno) }
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs `path` in this process's group with signals as a fresh process has them (the front end blocks SIGINT
    /// and friends, and a blocked or ignored signal would stay so across exec). - Returns: its process id.
    private static func spawn(_ path: String, _ arguments: [String]) throws -> pid_t {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, nil, &attributes, argv, environ)
        guard spawned == 0 else { throw TerminalError.system("posix_spawn", spawned) }
        return pid
    }

    /// Waits for `pid` to end on a thread of its own (waitpid blocks), so that the caller's loop goes on.
    /// - Returns: its exit status, or 128 + the signal that ended it.
    private static func exitStatus(of pid: pid_t) async throws -> Int32 {
        let result: Result<Int32, TerminalError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 {
                    guard errno == EINTR else {
                        continuation.resume(returning: .failure(.system("waitpid", errno)))
                        return
                    }
                }
                let signal = status & 0x7f
                continuation.resume(returning: .success(signal == 0 ? (status >> 8) & 0xff : 128 + signal))
            }
        }
        return try result.get()
    }
}
