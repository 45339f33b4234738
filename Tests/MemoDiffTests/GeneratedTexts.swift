import Foundation
import MemoTestSupport

/// Texts for comparing MemoDiff with `diff` and `git`: a base and edits of it, reproducible from a seed.
struct GeneratedTexts {
    /// Whether every line is distinct (the shortest diff is then unique) or drawn from a few repeated lines.
    enum Lines { case distinct, repeated }

    private var random: SeededGenerator
    private let lines: Lines
    private var serial = 0

    init(seed: UInt64, lines: Lines) {
        random = SeededGenerator(seed: seed)
        self.lines = lines
    }

    /// A few repeated lines, Hangul in both normal forms (different bytes, so different lines) and blank ones.
    private static let repeatedLines = ["a\n", "b\n", "c\n", "\n", "}\n", "\u{AC00}\n", "\u{1100}\u{1161}\n", "if x {\n"]

    mutating func line() -> String {
        switch lines {
        case .distinct:
            serial += 1
            return serial % 3 == 0 ? "줄 \(serial) 가나다\n" : "line \(serial)\n"
        case .repeated:
            return Self.repeatedLines[Int.random(in: 0..<Self.repeatedLines.count, using: &random)]
        }
    }

    mutating func base(maxLines: Int) -> [String] {
        (0..<Int.random(in: 0...maxLines, using: &random)).map { _ in line() }
    }

    /// `lines` with up to `maxEdits` random deletions, insertions and replacements of one to three lines.
    mutating func edit(_ lines: [String], maxEdits: Int) -> [String] {
        var result = lines
        for _ in 0..<Int.random(in: 0...maxEdits, using: &random) {
            let at = Int.random(in: 0...result.count, using: &random)
            let span = min(Int.random(in: 1...3, using: &random), result.count - at)
            switch Int.random(in: 0..<3, using: &random) {
            case 0 where span > 0: result.removeSubrange(at..<(at + span))
            case 1: result.insert(contentsOf: (0..<Int.random(in: 1...3, using: &random)).map { _ in line() }, at: at)
            default:
                let new = (0..<Int.random(in: 1...3, using: &random)).map { _ in line() }
                result.replaceSubrange(at..<(at + span), with: new)
            }
        }
        return result
    }

    /// The lines joined, the last newline dropped now and then.
    mutating func text(_ lines: [String]) -> String {
        let joined = lines.joined()
        if !joined.isEmpty && Int.random(in: 0..<5, using: &random) == 0 { return String(joined.dropLast()) }
        return joined
    }
}

/// Byte-exact text files in a temporary folder, for the system tools.
struct ToolFiles {
    let directory: TemporaryDirectory

    init() throws { directory = try TemporaryDirectory() }

    func write(_ name: String, _ text: String) throws -> String {
        let path = directory.path + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// `diff -u` of two texts with labels and no dates.
    func systemDiff(_ old: String, _ new: String) throws -> (status: Int32, out: String) {
        let oldPath = try write("old", old)
        let newPath = try write("new", new)
        let (status, out, err) = try runTool(
            installedTool("diff") ?? "/usr/bin/diff", ["-u", "--label", "old", "--label", "new", oldPath, newPath],
            environment: ["LC_ALL": "C"])
        precondition(status < 2, "diff failed: \(err)")
        return (status, out)
    }

    /// `git merge-file -p` of three texts. - Returns: git's conflict count (0: clean) and its output.
    func gitMerge(base: String, ours: String, theirs: String) throws -> (conflicts: Int32, out: String) {
        let basePath = try write("base", base)
        let oursPath = try write("ours", ours)
        let theirsPath = try write("theirs", theirs)
        let (status, out, err) = try runTool(
            installedTool("git") ?? "/usr/bin/git",
            ["merge-file", "-p", "-L", "ours", "-L", "base", "-L", "theirs", oursPath, basePath, theirsPath],
            environment: ["LC_ALL": "C", "HOME": directory.path, "GIT_CONFIG_NOSYSTEM": "1"])
        precondition(status >= 0 && status < 127, "git merge-file failed: \(err)")
        return (status, out)
    }
}
