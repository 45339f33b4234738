import ClientTestSupport
import Foundation
import Glibc
import MemoClient
import MemoClientCLI
import MemoTLS
import MemoTUI
import MemoTestSupport
import MemoText
import MemoViewModels
import ServerTestSupport
import Testing

/// A tmux server of its own (a private socket, no config file) with one 100x30 session running a shell command.
///
/// tmux offers no event for "the screen now shows X", so `waitForScreen` polls `capture-pane` every 50 ms until a
/// deadline: the one place in the tests that polls.
final class TmuxSession {
    /// The tmux executable on PATH, or nil when it is not installed.
    static let executable: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        let candidates = path.split(separator: ":").map { "\($0)/tmux" } + ["/usr/bin/tmux", "/usr/local/bin/tmux"]
        return candidates.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    struct Timeout: Error, CustomStringConvertible {
        let what: String
        let screen: [String]
        var description: String { "timed out waiting for \(what); the screen:\n" + screen.joined(separator: "\n") }
    }

    let socket = "memo-e2e-\(getpid())-\(UUID().uuidString.prefix(8))"
    let width: Int
    let height: Int
    /// Where each tmux command's output lands (one command at a time).
    private let output: TemporaryDirectory
    /// The tmux server's pid and socket, for `kill` to make sure of them.
    private var serverPID: pid_t?
    private var socketPath: String?

    /// Starts the server and the session; the session's shell runs `command`.
    init(command: String, width: Int = 100, height: Int = 30) throws {
        self.width = width
        self.height = height
        output = try TemporaryDirectory()
        let (status, _, error) = try tmux(
            ["new-session", "-d", "-s", "memo", "-x", "\(width)", "-y", "\(height)", command])
        guard status == 0 else { throw Timeout(what: "tmux new-session (\(status)): \(error)", screen: []) }
        serverPID = pid_t(try pane("#{pid}"))
        socketPath = try pane("#{socket_path}")
    }

    /// Runs one tmux command against this server. - Returns: exit status, stdout, stderr.
    @discardableResult
    func tmux(_ arguments: [String]) throws -> (Int32, String, String) {
        var environment = ProcessInfo.processInfo.environment
        environment["TMUX"] = nil  // the tests may themselves run inside tmux
        environment["LANG"] = "C.UTF-8"  // capture-pane prints wide characters as UTF-8 only in a UTF-8 locale
        environment["LC_ALL"] = nil
        let outPath = output.path + "/out", errPath = output.path + "/err"
        let status = try spawnAndWait(
            Self.executable ?? "/usr/bin/tmux", ["-L", socket, "-f", "/dev/null"] + arguments,
            environment: environment, stdout: outPath, stderr: errPath)
        return (status, ServerProcess.read(outPath), ServerProcess.read(errPath))
    }

    /// Key names as tmux spells them: `j`, `Enter`, `Escape`, `C-s`.
    func press(_ keys: String...) throws {
        try tmux(["send-keys", "-t", "memo"] + keys)
    }

    /// Text typed as it is (`send-keys -l`), Hangul included.
    func type(_ text: String) throws {
        try tmux(["send-keys", "-t", "memo", "-l", text])
    }

    /// The pane's lines as they are on screen now.
    func screen() throws -> [String] {
        let (_, out, _) = try tmux(["capture-pane", "-p", "-t", "memo"])
        var lines = out.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        return lines
    }

    /// A tmux format about the pane, such as `#{alternate_on}` or `#{pane_pid}`.
    func pane(_ format: String) throws -> String {
        try tmux(["display-message", "-p", "-t", "memo", format]).1.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Polls the screen until `predicate` holds, up to `seconds`. - Returns: the screen that satisfied it.
    @discardableResult
    func waitForScreen(
        _ what: String, seconds: Double = 20, where predicate: ([String]) -> Bool
    ) throws -> [String] {
        let deadline = Date().addingTimeInterval(seconds)
        var lines = try screen()
        while !predicate(lines) {
            guard Date() < deadline else { throw Timeout(what: what, screen: lines) }
            usleep(50_000)
            lines = try screen()
        }
        return lines
    }

    /// Polls the screen until some line contains every one of `texts`.
    @discardableResult
    func waitForScreen(containing texts: String..., seconds: Double = 20) throws -> [String] {
        try waitForScreen(texts.map { "“\($0)”" }.joined(separator: " and "), seconds: seconds) { lines in
            texts.allSatisfy { text in lines.contains { $0.contains(text) } }
        }
    }

    /// Ends the tmux server, which hangs up on the processes in its panes.
    func kill() {
        _ = try? tmux(["kill-server"])
        // kill-server returns once the server has the command, before it has gone; the server is not our child, so
        // there is nothing to wait on but its pid. One that is still there after 5 s goes the hard way.
        if let serverPID {
            let deadline = Date().addingTimeInterval(5)
            while isRunning(serverPID), Date() < deadline { usleep(20_000) }
            if isRunning(serverPID) { Glibc.kill(serverPID, SIGKILL) }
        }
        if let socketPath { try? FileManager.default.removeItem(atPath: socketPath) }
    }
}

/// A `memo-server` process on loopback port 0 with SQLite in a temporary directory, its certificates, and the
/// environment a `memo-client` front end under tmux needs.
final class FrontEndFixture {
    let certificates: TestCertificates
    let data: TemporaryDirectory
    private(set) var server: ServerProcess?
    let address: String

    init() throws {
        certificates = try TestCertificates()
        data = try TemporaryDirectory()
        let server = try ServerProcess(arguments: Self.arguments(data, certificates, "127.0.0.1:0"), directory: data)
        self.server = server
        address = server.address
    }

    private static func arguments(_ data: TemporaryDirectory, _ certificates: TestCertificates, _ listen: String)
        -> [String]
    {
        ["--store", "sqlite:\(data.path)/memos.sqlite", "--certs", certificates.path, "--listen", listen]
    }

    /// Starts the server again after `stopServer()`, on the same address and file.
    func startServer() throws {
        guard server == nil else { return }
        server = try ServerProcess(arguments: Self.arguments(data, certificates, address), directory: data)
    }

    func stopServer() {
        guard let server else { return }
        server.signal(SIGTERM)
        _ = server.waitForExit()
        self.server = nil
    }

    deinit { stopServer() }

    /// The mirror cache the front end uses (its cache folder is the fixture's).
    var cachePath: String {
        MirrorCache.defaultPath(server: address, environment: ["XDG_CACHE_HOME": data.path + "/cache"])
    }

    /// The identity a front end with `certificate` (a name in the certificate folder) binds its queue to.
    func identity(certificate: String = "client") throws -> ClientIdentity {
        let info = try CertificateInfo(path: certificates.path + "/\(certificate).crt")
        return ClientIdentity(server: address, fingerprint: info.fingerprint)
    }

    /// The offline queue of a front end with `certificate`.
    func queuePath(certificate: String = "client") throws -> String {
        WriteQueueFile.path(besideCache: cachePath, fingerprint: try identity(certificate: certificate).fingerprint)
    }

    /// `memo-client` with the arguments, as a second client. - Returns: exit status, stdout, stderr.
    func client(_ arguments: String...) throws -> (status: Int32, out: String, err: String) {
        try runClient(arguments, server: address, certs: certificates.path)
    }

    /// Adds a memo with the command line. - Returns: its id and insert date.
    func add(_ content: String) throws -> (id: String, insertDate: Date) {
        let (status, out, err) = try client("add", content)
        #expect(status == 0, "\(err)")
        let fields = out.split(separator: "\t")
        let micros = try #require(fields.count == 4 ? Timestamp.parse(String(fields[2])) : nil, "\(out)")
        return (String(fields[0]), Date(timeIntervalSince1970: Double(micros) / 1_000_000))
    }

    /// The shell command of the tmux pane: the front end with the test's server, certificates, a UTF-8 locale, an
    /// xterm and a private cache directory, then a line saying how it exited, then a pause so the pane stays.
    func frontEndCommand(_ arguments: [String] = [], environment extra: [String: String] = [:]) -> String {
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let environment = extra.sorted { $0.key < $1.key }.map { $0.key + "=" + quoted($0.value) } + [
            "MEMO_SERVER=" + quoted(address), "MEMO_CERTS=" + quoted(certificates.path), "LANG=C.UTF-8", "LC_ALL=",
            "TERM=xterm-256color", "XDG_CACHE_HOME=" + quoted(data.path + "/cache"), "NO_COLOR=",
            "MEMO_EXPIRY_WARNING=0",  // the test's certificates live a day: no expiry warning on the screen
        ]
        let command = ([quoted(builtExecutable("memo-client"))] + arguments.map(quoted)).joined(separator: " ")
        return environment.joined(separator: " ") + " " + command
            + "; echo \"memo-client exited with $?\"; exec sleep 600"
    }
}

/// Runs a program to its end with stdin from /dev/null and stdout and stderr into files. - Returns: its exit status.
///
/// Not `Process`: `new-session` forks the tmux server, which keeps every descriptor the client had, and Foundation
/// learns of a child's exit from a socket the child inherits, so it would wait for the server too (as a pipe for
/// the output would). Here the child gets descriptors 0-2 only, and `waitpid` says when it ended.
private func spawnAndWait(
    _ path: String, _ arguments: [String], environment: [String: String], stdout: String, stderr: String
) throws -> Int32 {
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    closeDescriptorsFromThree(in: &actions)
    let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
    let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { (argv + envp).forEach { free($0) } }
    // Signals as a fresh process has them: the test runner's threads block some and ignore others, and a tmux
    // server that inherited a blocked SIGCHLD or SIGTERM would neither see its panes end nor take kill-server.
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
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ECHILD) }
    }
    let signal = status & 0x7f
    return signal == 0 ? (status >> 8) & 0xff : 128 + signal
}

/// Adds "close every descriptor from 3 up" to `actions`: glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34
/// and later; Swift's Glibc module does not show it, so it is looked up by name), else one close per descriptor
/// open now (glibc ignores a close action whose descriptor is not open).
private func closeDescriptorsFromThree(in actions: inout posix_spawn_file_actions_t) {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        return
    }
    let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
    for fd in open.compactMap({ Int32($0) }) where fd > 2 {
        posix_spawn_file_actions_addclose(&actions, fd)
    }
}

/// Whether `pid` is a process that has not ended (a zombie has: its parent, init here, just has not reaped it).
private func isRunning(_ pid: pid_t) -> Bool {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return false }
    return stat[stat.index(after: close)...].split(separator: " ").first != "Z"
}

/// The pid of a child of `parent`, read from /proc (the front end runs under the pane's shell).
func childProcess(of parent: String) -> pid_t? {
    let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
    for entry in entries where Int32(entry) != nil {
        guard let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { continue }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        if fields.count > 1, fields[1] == parent { return Int32(entry) }
    }
    return nil
}

@Suite(
    "memo-client front end under tmux against a memo-server process", .serialized,
    .enabled(if: TmuxSession.executable != nil, "tmux is not installed (apt-get install tmux); skipping the e2e test"))
struct TUIEndToEndTests {
    @Test func browseOpenEditDeleteAndSeeAnotherClientsChangesWithoutAKeyPress() throws {
        let fixture = try FrontEndFixture()
        let first = try fixture.add("첫 번째 메모: 한글 내용")
        _ = try fixture.add("second memo, in English")
        let long = String(repeating: "가나다라마바사아자차카타파하 ", count: 6)  // 90 characters, 174 columns
        _ = try fixture.add(long)

        let tmux = try TmuxSession(command: fixture.frontEndCommand(["--locale", "ko_KR"]))
        defer { tmux.kill() }

        // The list, newest first, live; the first line selected.
        var screen = try tmux.waitForScreen(containing: "첫 번째 메모: 한글 내용", "연결됨")
        #expect(try tmux.pane("#{alternate_on}") == "1")
        #expect(screen.first?.contains("메모 목록") == true)
        #expect(screen.last?.contains(fixture.address) == true)
        #expect(screen.last?.contains("j/k 이동") == true)
        // Hangul takes two columns: no line is wider than the pane, and the count on the title line ends in the
        // column before the last (capture-pane drops trailing blanks) only if every syllable counted as two.
        for line in screen { #expect(ColumnWidth.width(of: line) <= 100, "\(line)") }
        #expect(ColumnWidth.width(of: screen[0]) == 99, "\(screen[0])")
        #expect(screen[1].hasPrefix("> 가나다라"))
        #expect(screen[1].hasSuffix(String(TextLayout.ellipsis)), "174 columns cut to 100: \(screen[1])")

        // Browse: j j reaches the oldest, k goes back, j again.
        try tmux.press("j", "j")
        try tmux.waitForScreen(containing: "> 첫 번째 메모")
        try tmux.press("k")
        try tmux.waitForScreen(containing: "> second memo")
        try tmux.press("Down")
        try tmux.waitForScreen(containing: "> 첫 번째 메모")

        // Detail: the content and the insert date as ko_KR prints it.
        try tmux.press("Enter")
        let date = MemoDateFormat(locale: Locale(identifier: "ko_KR")).string(from: first.insertDate)
        screen = try tmux.waitForScreen(containing: "메모 보기", date)
        #expect(screen.contains { $0.hasPrefix("첫 번째 메모: 한글 내용") })
        #expect(date.range(of: #"^\d{4}\. \d{1,2}\. \d{1,2}\. (오전|오후) \d{1,2}:\d{2}:\d{2}$"#,
                           options: .regularExpression) != nil, "\(date)")
        #expect(screen.last?.contains("e 편집") == true)
        // The detail shows the revision and the update date too.
        #expect(screen.contains { $0.hasPrefix("리비전 ") && $0.contains(date) }, "\(screen)")

        // Edit: e, type at the end, Ctrl-S; the detail shows the new text and the server has it.
        try tmux.press("e")
        try tmux.waitForScreen(containing: "메모 편집", "Ctrl-S")
        try tmux.type(" 고침")
        try tmux.press("C-s")
        try tmux.waitForScreen(containing: "메모 보기", "첫 번째 메모: 한글 내용 고침")
        let shown = try fixture.client("show", first.id).out
        #expect(shown.trimmingCharacters(in: .newlines) == "첫 번째 메모: 한글 내용 고침")

        // Another client edits the memo on screen: the detail follows at once.
        #expect(try fixture.client("edit", first.id, "다른 클라이언트가 고친 내용").status == 0)
        try tmux.waitForScreen(containing: "다른 클라이언트가 고친 내용")

        // Back to the list, the same memo still selected; another client adds one: it appears, the selection stays.
        try tmux.press("Escape")
        try tmux.waitForScreen(containing: "> 다른 클라이언트가 고친 내용")
        _ = try fixture.add("두 번째 클라이언트의 새 메모")
        screen = try tmux.waitForScreen(containing: "두 번째 클라이언트의 새 메모")
        #expect(screen.contains { $0.hasPrefix("> 다른 클라이언트가 고친 내용") })
        #expect(screen[0].hasSuffix("4"))

        // Delete asks, and No is the default: Enter keeps the memo.
        try tmux.press("d")
        try tmux.waitForScreen(containing: "? y/N")
        try tmux.press("Enter")
        screen = try tmux.waitForScreen("the question gone") { !$0.contains { $0.contains("y/N") } }
        #expect(screen.contains { $0.hasPrefix("> 다른 클라이언트가 고친 내용") })
        // y deletes it, here and on the server.
        try tmux.press("d")
        try tmux.waitForScreen(containing: "? y/N")
        try tmux.press("y")
        screen = try tmux.waitForScreen("the memo gone") { lines in
            !lines.contains { $0.contains("다른 클라이언트가 고친 내용") } && lines.first?.hasSuffix("3") == true
        }
        #expect(try fixture.client("show", first.id).status == ExitCode.notFound.rawValue)
        for line in screen { #expect(ColumnWidth.width(of: line) <= 100, "\(line)") }

        // q: the terminal leaves the alternate screen and the shell sees exit status 0.
        try tmux.press("q")
        screen = try tmux.waitForScreen(containing: "memo-client exited with 0")
        #expect(try tmux.pane("#{alternate_on}") == "0")
        #expect(!screen.contains { $0.contains("메모 목록") })
    }

    @Test func opensOfflineFromTheCacheWhenTheServerIsDownAndRestoresTheTerminalOnSIGTERM() throws {
        let fixture = try FrontEndFixture()
        _ = try fixture.add("캐시에 남을 메모")

        // A first run fills the cache (written when it quits).
        let online = try TmuxSession(command: fixture.frontEndCommand())
        defer { online.kill() }
        try online.waitForScreen(containing: "캐시에 남을 메모", "live")
        try online.press("q")
        try online.waitForScreen(containing: "memo-client exited with 0")

        fixture.stopServer()
        let offline = try TmuxSession(command: fixture.frontEndCommand())
        defer { offline.kill() }
        // The status and the list reach the screen in separate redraws (each from its own subject), so the screen
        // waited for is the one with both: the cached memo, selected, under the offline status.
        let screen = try offline.waitForScreen("the cached memo under the offline status") { lines in
            lines.contains { $0.contains("offline (connection refused)") }
                && lines.contains { $0.hasPrefix("> 캐시에 남을 메모") }
        }
        #expect(screen.contains { $0.hasPrefix("> 캐시에 남을 메모") })
        #expect(try offline.pane("#{alternate_on}") == "1")

        let client = try #require(childProcess(of: try offline.pane("#{pane_pid}")))
        kill(client, SIGTERM)
        try offline.waitForScreen(containing: "memo-client exited with 143")
        #expect(try offline.pane("#{alternate_on}") == "0")
    }

    @Test func listOnATerminalKeepsEachMemoOnOneLineAndShowsEscapesInsteadOfObeyingThem() throws {
        let fixture = try FrontEndFixture()
        let long = try fixture.add(String(repeating: "가나다라마바사 ", count: 8))  // 64 characters, 120 columns
        // A memo that would clear the screen and retitle the window if its bytes reached the terminal.
        let hostile = try fixture.add("\u{1B}[2J\u{1B}]0;pwned\u{07}title")
        let short = try fixture.add("short")

        let tmux = try TmuxSession(command: fixture.frontEndCommand(["list"]), width: 50, height: 12)
        defer { tmux.kill() }
        let screen = try tmux.waitForScreen(containing: "memo-client exited with 0")
        // Newest first, one line each, nothing wrapped onto a second line, nothing cleared.
        let shortIDs = [short, hostile, long].map { String($0.id.prefix(8)) }
        #expect(Array(screen.prefix(3)).map { String($0.prefix(8)) } == shortIDs, "\(screen)")
        #expect(screen[3] == "memo-client exited with 0", "\(screen)")
        for line in screen.prefix(3) { #expect(ColumnWidth.width(of: line) <= 50, "\(line)") }
        #expect(screen[2].hasSuffix("…") && screen[2].contains("가나다라"), "\(screen[2])")
        #expect(screen[1].hasSuffix("␛[2J␛]0;pwned␇title"), "\(screen[1])")
        #expect(screen[0].hasSuffix("  short"))

        // Piped, the same command prints the content as stored: scripts get every byte, and no line is cut.
        let (status, out, _) = try fixture.client("list")
        #expect(status == 0)
        #expect(out.contains("\u{1B}[2J\u{1B}]0;pwned\u{07}title"))
        #expect(out.contains(String(repeating: "가나다라마바사 ", count: 8).dropLast()))
    }

    @Test func watchOnATerminalCutsEachLineToTheWidthTheTerminalHasWhenItIsPrinted() throws {
        let fixture = try FrontEndFixture()
        let first = try fixture.add("first")
        let tmux = try TmuxSession(command: fixture.frontEndCommand(["watch"]), width: 50, height: 12)
        defer { tmux.kill() }
        try tmux.waitForScreen(containing: String(first.id.prefix(8)), "first")

        let text = String(repeating: "가나다라마바사 ", count: 8)  // 120 columns
        let narrow = try fixture.add(text)
        var screen = try tmux.waitForScreen(containing: "+ " + narrow.id.prefix(8))
        let narrowLine = try #require(screen.first { $0.hasPrefix("+ " + narrow.id.prefix(8)) })
        // Cut to the width, or one column short when a two-column character would not fit before the "…".
        #expect((49...50).contains(ColumnWidth.width(of: narrowLine)) && narrowLine.hasSuffix("…"), "\(narrowLine)")

        // The terminal grows while watch runs: the next line uses the new width.
        try tmux.tmux(["resize-window", "-t", "memo", "-x", "70", "-y", "12"])
        try tmux.waitForScreen("the pane to be 70 columns wide") { _ in (try? tmux.pane("#{pane_width}")) == "70" }
        let wide = try fixture.add(text)
        screen = try tmux.waitForScreen(containing: "+ " + wide.id.prefix(8))
        let wideLine = try #require(screen.first { $0.hasPrefix("+ " + wide.id.prefix(8)) })
        #expect((69...70).contains(ColumnWidth.width(of: wideLine)) && wideLine.hasSuffix("…"), "\(wideLine)")
    }
}
