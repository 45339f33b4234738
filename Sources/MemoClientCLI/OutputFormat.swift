import Foundation
import MemoCLI
import MemoModel
/// `-o`/`--output`: the form a command prints memos in, whatever stdout is. Without it, the form follows stdout
/// (a table for people on a terminal, tab-separated text otherwise); `--json` is `-o json`.
public enum OutputFormat: String, Sendable, Hashable, CaseIterable {
    /// One JSON object per line, as `--json`.
    case json
    /// The tab-separated lines memo-client prints when stdout is not a terminal, even on one; for `show`, the
    /// memo's list line instead of its content.
    case tsv
    /// One full id per line.
    case ids
    /// Tab-separated with more columns: id, revision, insertDate, updateDate, size (bytes of content), first line.
    case wide

    /// The commands that print memos, which take every form; the others take only `json` and `tsv` (and `config
    /// contexts` also `ids`: its names).
    static let memoCommands = "list, show, add, edit and rm"

    /// Reads `-o`'s value. - Throws: a usage error naming the choices.
    static func parse(_ text: String) throws(UsageError) -> OutputFormat {
        guard let format = OutputFormat(rawValue: text) else {
            throw UsageError("-o (--output) takes json, tsv, ids or wide, not '\(text)'")
        }
        return format
    }

    /// Whether `command` can print in this form.
    func applies(to command: ClientCommand) -> Bool {
        switch (self, command) {
        case (.json, _): return true
        case (.tsv, .export(_)): return false  // export's lines are JSON, always
        case (.tsv, _): return true
        case (.ids, .list), (.ids, .show), (.ids, .add), (.ids, .edit), (.ids, .remove): return true
        case (.ids, .contexts): return true  // one name per line (what completion offers for --context)
        case (.wide, .list), (.wide, .show), (.wide, .add), (.wide, .edit), (.wide, .remove): return true
        default: return false
        }
    }
}

extension MemoFormatter {
    /// `-o wide`'s line: `id<TAB>revision<TAB>insertDate<TAB>updateDate<TAB>size<TAB>author<TAB>first line`,
    /// dates in ISO 8601 UTC, size the content's UTF-8 bytes, author the last change's name (`-` when not known).
    public static func wideLine(_ memo: Memo) -> String {
        memo.id.lowercasedString + "\t" + String(memo.revision) + "\t"
            + Timestamp.iso8601(micros: memo.insertMicros) + "\t" + Timestamp.iso8601(micros: memo.updateMicros)
            + "\t" + String(memo.content.utf8.count) + "\t" + memo.author.description + "\t"
            + firstLine(memo.content)
    }
}
