import Foundation
import MemoSystem
import MemoViewModels

#if canImport(Glibc)
import Glibc
#endif

/// Why the terminal front end could not start.
public enum TerminalError: Error, Sendable, CustomStringConvertible {
    case notATerminal
    case system(String, Int32)

    public var description: String {
        switch self {
        case .notATerminal: return "standard input and output must be a terminal"
        case .system(let call, let code): return "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
}

/// The controlling terminal: raw mode with termios, the alternate screen, bracketed paste, the cursor, the size.
///
/// `enter()` saves the terminal's settings and `leave()` puts them back. Front-end state: only the front end's
/// loop touches it (signals are read there too, through a signalfd), so a restore never lands in the middle of a
/// frame without any lock.
@FrontEnd
final class Terminal {
    private var saved: termios?
    private(set) var active = false
    let input: Int32 = STDIN_FILENO
    let output: Int32 = STDOUT_FILENO

    init() throws(TerminalError) {
        guard isatty(STDIN_FILENO) == 1, isatty(STDOUT_FILENO) == 1 else { throw .notATerminal }
    }

    /// Raw mode (no echo, no line editing, no signals from keys: Ctrl-C arrives as byte 3, Ctrl-Z as byte 26),
    /// alternate screen, bracketed paste, hidden cursor.
    func enter() throws(TerminalError) {
        guard !active else { return }
        var original = termios()
        guard tcgetattr(input, &original) == 0 else { throw .system("tcgetattr", errno) }
        var raw = original
        raw.c_iflag &= ~tcflag_t(BRKINT | ICRNL | INPCK | ISTRIP | IXON)
        raw.c_oflag &= ~tcflag_t(OPOST)
        raw.c_cflag |= tcflag_t(CS8)
        raw.c_lflag &= ~tcflag_t(ECHO | ICANON | IEXTEN | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(input, TCSAFLUSH, &raw) == 0 else { throw .system("tcsetattr", errno) }
        saved = original
        active = true
        writeAll("\u{1B}[?1049h\u{1B}[?2004h\u{1B}[?25l\u{1B}[2J")
    }

    /// Undoes `enter()`: shows the cursor, ends bracketed paste, leaves the alternate screen, restores termios.
    /// Harmless when not entered.
    func leave() {
        guard active else { return }
        writeAll("\u{1B}[0m\u{1B}[?2004l\u{1B}[?25h\u{1B}[?1049l")
        if var saved { _ = tcsetattr(input, TCSAFLUSH, &saved) }
        active = false
    }

    /// Writes a frame (or an OSC sequence) while the terminal is entered.
    func write(_ text: String) {
        guard !text.isEmpty, active else { return }
        writeAll(text)
    }

    /// ESC ] 52 ; c ; base64 BEL: terminals that allow it put the text on the system clipboard, even over ssh.
    nonisolated static func clipboardSequence(for text: String) -> String {
        "\u{1B}]52;c;" + Data(text.utf8).base64EncodedString() + "\u{07}"
    }

    /// Columns and rows, from TIOCGWINSZ; 80x24 when the terminal does not say.
    func size() -> (width: Int, height: Int) {
        var size = winsize()
        let result = withUnsafeMutablePointer(to: &size) { ioctl(output, UInt(TIOCGWINSZ), $0) }
        guard result == 0, size.ws_col > 0, size.ws_row > 0 else { return (80, 24) }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    /// Everything out; a terminal that went away (EIO, EPIPE) leaves nothing to draw on, so failures are dropped.
    private func writeAll(_ text: String) {
        try? FileDescriptor.writeAll(output, text)
    }
}
