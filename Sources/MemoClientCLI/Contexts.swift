import Foundation
import Glibc
import MemoCLI
import MemoClient

/// Named contexts in `$XDG_CONFIG_HOME/memo/config` (`~/.config/memo/config`), as kubeconfig has: per name, the
/// server addresses and the three certificate files, one chosen with `--context`, `MEMO_CONTEXT` or the file's
/// `current` line.
///
/// The file is lines of `KEY VALUE` (the value is the rest of the line, spaces inside kept); blank lines and lines
/// starting with `#` are skipped, and indentation is free:
///
///     current work
///     context work
///       server memo1.example.com,memo2.example.com
///       ca     work/ca.crt
///       cert   work/client.crt
///       key    work/client.key
///
/// `context NAME` starts a context; `server`, `ca`, `cert` and `key` belong to the context above them, each at
/// most once. A relative file is relative to the config file's folder; `~/` is the home folder.
public struct ContextsFile: Sendable, Hashable {
    public struct Context: Sendable, Hashable {
        public var name: String
        public var server: String?
        public var ca: String?
        public var cert: String?
        public var key: String?
        /// The line `context NAME` is on.
        public var line: Int
    }

    /// The file's path, for messages.
    public var path: String
    /// In the file's order.
    public var contexts: [Context] = []
    /// The `current` line's name, if any.
    public var current: String?

    public init(path: String) {
        self.path = path
    }

    public func context(named name: String) -> Context? {
        contexts.first { $0.name == name }
    }

    /// The file `memo-client` reads: `$XDG_CONFIG_HOME/memo/config`, or `~/.config/memo/config`.
    public static func defaultPath(environment: [String: String]) -> String {
        ClientConfiguration.configDirectory(environment: environment) + "/memo/config"
    }

    /// The largest config file read: far more than any list of contexts needs.
    static let maxBytes = 1 << 20

    /// Reads the file at `path`; nil when there is none.
    /// - Throws: `UsageError` naming the file, the line and what is wrong with it, or why it cannot be read.
    public static func load(path: String, home: String?) throws(UsageError) -> ContextsFile? {
        // read(2) rather than Foundation, so that a failure is said in errno's words.
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            if errno == ENOENT { return nil }
            throw UsageError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let got = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw UsageError("cannot read \(path): \(String(cString: strerror(errno)))")
            }
            if got == 0 { break }
            bytes.append(contentsOf: buffer[..<got])
            if bytes.count > Self.maxBytes {
                throw UsageError("\(path) is over \(Self.maxBytes) bytes: not a config file")
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw UsageError("\(path) is not UTF-8 text")
        }
        return try parse(text, path: path, home: home)
    }

    /// Reads the text of a config file.
    /// - Throws: `UsageError` naming `path`, the line and what is wrong with it.
    public static func parse(_ text: String, path: String, home: String?) throws(UsageError) -> ContextsFile {
        var file = ContextsFile(path: path)
        let folder = (path as NSString).deletingLastPathComponent
        func fail(_ number: Int, _ message: String) -> UsageError { UsageError("\(path) line \(number): \(message)") }
        func resolve(_ value: String) -> String {
            if value.hasPrefix("~/"), let home { return home + value.dropFirst(1) }
            if value.hasPrefix("/") || folder.isEmpty { return value }
            return folder + "/" + value
        }
        var currentLine: Int?
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let number = index + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { continue }
            let key = String(line.prefix { !$0.isWhitespace })
            let value = line.dropFirst(key.count).trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty else { throw fail(number, "'\(key)' needs a value") }
            switch key {
            case "current":
                if let first = currentLine { throw fail(number, "'current' is given twice (first on line \(first))") }
                currentLine = number
                file.current = value
            case "context":
                guard !value.contains(where: { $0.isWhitespace }) else {
                    throw fail(number, "a context's name has no spaces: '\(value)'")
                }
                if let other = file.context(named: value) {
                    throw fail(number, "context '\(value)' is defined twice (first on line \(other.line))")
                }
                file.contexts.append(Context(name: value, line: number))
            case "server", "ca", "cert", "key":
                guard var context = file.contexts.popLast() else {
                    throw fail(number, "'\(key)' before any 'context NAME' line")
                }
                let given: String? = switch key {
                case "server": context.server
                case "ca": context.ca
                case "cert": context.cert
                default: context.key
                }
                if given != nil { throw fail(number, "'\(key)' is given twice in context '\(context.name)'") }
                switch key {
                case "server": context.server = value
                case "ca": context.ca = resolve(value)
                case "cert": context.cert = resolve(value)
                default: context.key = resolve(value)
                }
                file.contexts.append(context)
            default:
                throw fail(number, "unknown setting '\(key)' (the settings are current, context, and in a context "
                    + "server, ca, cert and key)")
            }
        }
        return file
    }

    /// The context in effect: `--context`, else `MEMO_CONTEXT`, else the file's `current`; nil when none is named.
    /// - Throws: `UsageError` for a name the file does not define, listing those it does.
    public static func selected(
        option: String?, environment: [String: String], file: ContextsFile?, path: String
    ) throws(UsageError) -> Context? {
        let named: (name: String, by: String)?
        if let option {
            named = (option, "--context")
        } else if let variable = environment["MEMO_CONTEXT"], !variable.isEmpty {
            named = (variable, "MEMO_CONTEXT")
        } else if let current = file?.current {
            named = (current, "the 'current' line of \(path)")
        } else {
            named = nil
        }
        guard let named else { return nil }
        guard let file else {
            throw UsageError("no context '\(named.name)' (\(named.by)): \(path) does not exist")
        }
        guard let context = file.context(named: named.name) else {
            let known = file.contexts.map(\.name)
            throw UsageError("no context '\(named.name)' (\(named.by)) in \(path); "
                + (known.isEmpty ? "it defines none" : "known: " + known.joined(separator: ", ")))
        }
        return context
    }
}

/// What `config contexts` prints: every context of the file and the one in effect.
public struct ContextsListing: Sendable, Hashable {
    public var file: ContextsFile?
    public var path: String
    public var selected: String?
}
