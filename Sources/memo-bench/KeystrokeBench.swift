import Foundation
import MemoCLI
import Synchronization

/// `memo-bench keystroke`: how long a typed key takes to reach the screen of the real front end (`memo-client` in
/// a pseudo-terminal) while a save waits on a server that does not answer (SIGSTOP).
struct KeystrokeBench {
    var keys = 200
    var client: String?
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        keys = try arguments.integer("--keys", in: 1...2000) ?? keys
        client = try arguments.option("--client")
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() throws {
        let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        let folder = NSTemporaryDirectory() + "memo-bench-keystroke-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let server = try StartedServer(
            binary: binaries + "/memo-server", store: "sqlite:" + folder + "/memos.sqlite",
            certs: folder + "/certs")
        let serverPID = server.process.processIdentifier
        defer {
            kill(serverPID, SIGCONT)
            server.stop()
        }
        let terminal = try PseudoTerminal(
            program: client ?? binaries + "/memo-client", arguments: ["--timeout", "60", "--keepalive", "60"],
            environment: [
                "MEMO_SERVER=" + server.address, "MEMO_CERTS=" + folder + "/certs", "XDG_CACHE_HOME=" + folder + "/cache",
                "TERM=xterm-256color", "LANG=C.UTF-8", "MEMO_EXPIRY_WARNING=0", "NO_COLOR=1",
                "PATH=/usr/bin:/bin",
            ])
        defer { terminal.stop() }

        // The renderer draws only the cells that changed: each wait is for text written whole.
        try terminal.waitFor("live", seconds: 30)
        try terminal.send("n")
        try terminal.waitFor("EDITOR", seconds: 30)
        kill(serverPID, SIGSTOP)
        try terminal.send("memo")
        let saved = terminal.length
        try terminal.send("\u{13}")  // Ctrl-S
        // A front end that waits for the save (before issue 26) never says `saving…`: go on after 5 s.
        let said = (try? terminal.waitFor("saving…", seconds: 5, from: saved)) != nil

        var latencies: [Double] = []
        var questions = 0
        for index in 0..<keys {
            if terminal.output(contains: "timed out", from: terminal.questionMark) {
                // Esc: back to editing while the save goes on (keys after it are handled after it, in order).
                questions += 1
                terminal.questionMark = terminal.length
                try terminal.send("\u{1B}")
            }
            let key = String(Character(Unicode.Scalar(0xAC00 + UInt32(index % 11_000))!))
            let mark = terminal.length
            let began = ContinuousClock.now
            try terminal.send(key)
            let seen = (try? terminal.waitFor(key, seconds: 20, from: mark)) != nil
            latencies.append(seen ? (ContinuousClock.now - began).benchMillis : 20_000)
        }
        let sorted = latencies.sorted()
        let median = sorted[sorted.count / 2]
        let p99 = sorted[min(sorted.count - 1, Int((Double(sorted.count) * 0.99).rounded(.up)) - 1)]
        let worst = sorted.last ?? 0
        if json {
            print(String(format: "{\"op\":\"keystroke\",\"keys\":%d,\"median_ms\":%.2f,\"p99_ms\":%.2f,"
                         + "\"max_ms\":%.2f,\"timeout_questions\":%d,", keys, median, p99, worst, questions)
                + "\"saving_shown\":\(said)}")
        } else {
            print("keystroke to screen while a save waits on a stopped server (\(keys) keys, "
                + "\(questions) timeout question\(questions == 1 ? "" : "s") closed with Esc"
                + (said ? ")" : "; `saving…` never shown)"))
            print(String(format: "  median %.2f ms   p99 %.2f ms   worst %.2f ms", median, p99, worst))
        }
    }
}

/// A program in a pseudo-terminal of its own (its controlling terminal), with everything it writes collected.
private final class PseudoTerminal: @unchecked Sendable {
    // @unchecked: `master` and `pid` are set once in init; `buffer` is the only state both threads touch, and it
    // is a Mutex; `questionMark` is used by the bench's thread only.
    private let master: Int32
    private let pid: pid_t
    private let buffer = Mutex<[UInt8]>([])
    var questionMark = 0

    init(program: String, arguments: [String], environment: [String]) throws {
        // posix_openpt, unlockpt and ptsname by hand (Swift's Glibc module leaves them out): /dev/ptmx, then
        // TIOCSPTLCK 0 and TIOCGPTN (Linux's devpts needs no grantpt).
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard master >= 0, ioctl(master, UInt(0x4004_5431), &unlock) == 0, ioctl(master, UInt(0x8004_5430), &number) == 0
        else {
            throw UsageError("cannot open a pseudo-terminal")
        }
        var size = winsize(ws_row: 30, ws_col: 100, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
        let slave = "/dev/pts/\(number)"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // A new session first (POSIX_SPAWN_SETSID), so that opening the slave makes it the controlling terminal.
        for fd: Int32 in 0...2 { posix_spawn_file_actions_addopen(&actions, fd, slave, O_RDWR, 0) }
        posix_spawn_file_actions_addclose(&actions, master)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        let setsid: Int16 = 0x80  // POSIX_SPAWN_SETSID (glibc 2.26)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK) | setsid)
        let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, program, &actions, &attributes, argv, envp)
        guard spawned == 0 else { throw UsageError("cannot start \(program): \(String(cString: strerror(spawned)))") }
        pid = child
        let master = master
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = chunk.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return }
                buffer.withLock { $0.append(contentsOf: chunk[..<count]) }
            }
        }
    }

    var length: Int { buffer.withLock { $0.count } }

    func send(_ text: String) throws {
        var bytes = Array(text.utf8)[...]
        while !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { throw UsageError("cannot write to the pseudo-terminal") }
            bytes = bytes.dropFirst(written)
        }
    }

    func output(contains text: String, from mark: Int) -> Bool {
        let needle = Array(text.utf8)
        return buffer.withLock { all in Self.find(needle, in: all, from: mark) }
    }

    /// Polls (every 0.2 ms) until `text` appears in the output written after `from`.
    func waitFor(_ text: String, seconds: Double, from: Int = 0) throws {
        let needle = Array(text.utf8)
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while !buffer.withLock({ Self.find(needle, in: $0, from: from) }) {
            guard ContinuousClock.now < deadline else {
                let tail = buffer.withLock { String(decoding: $0.suffix(300), as: UTF8.self) }
                throw UsageError("'\(text)' did not appear in \(seconds) s; the last output: \(tail.debugDescription)")
            }
            usleep(200)
        }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from: Int) -> Bool {
        guard haystack.count - from >= needle.count, from >= 0 else { return false }
        var index = from
        let last = haystack.count - needle.count
        while index <= last {
            if haystack[index] == needle[0], Array(haystack[index..<index + needle.count]) == needle { return true }
            index += 1
        }
        return false
    }

    func stop() {
        kill(pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        close(master)
    }
}

extension Duration {
    fileprivate var benchMillis: Double {
        Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15
    }
}
