import MemoClient

/// `config contexts`: one line per context of the config file, in its order.
extension CommandRunner {
    /// Tab-separated `CURRENT<TAB>NAME<TAB>SERVER` (CURRENT `*` for the context in effect, else empty; SERVER `-`
    /// when the context names none); columns aligned on a terminal; with `--json` one object per context:
    /// `{"name":…,"current":true|false,"server":…|null,"ca":…|null,"cert":…|null,"key":…|null}`; with
    /// `-o ids` the names only, one per line.
    func printContexts(_ listing: ContextsListing) {
        let contexts = listing.file?.contexts ?? []
        if style.format == .ids {
            for context in contexts { out.line(context.name) }
            return
        }
        if style.json {
            for context in contexts {
                var text = "{\"name\":"
                MemoJSON.appendString(context.name, to: &text)
                text += ",\"current\":" + (context.name == listing.selected ? "true" : "false")
                for (name, value) in [("server", context.server), ("ca", context.ca), ("cert", context.cert),
                                      ("key", context.key)] {
                    text += ",\"" + name + "\":"
                    if let value { MemoJSON.appendString(value, to: &text) } else { text += "null" }
                }
                out.line(text + "}")
            }
            return
        }
        if contexts.isEmpty, style.human {
            out.line(listing.file == nil ? "(no contexts: \(listing.path) does not exist)" : "(no contexts)")
            return
        }
        let width = contexts.map(\.name.count).max() ?? 0
        for context in contexts {
            let mark = context.name == listing.selected ? "*" : ""
            let server = context.server ?? "-"
            if style.human {
                let padded = context.name + String(repeating: " ", count: width - context.name.count)
                out.line((mark.isEmpty ? " " : mark) + " " + padded + "  " + server)
            } else {
                out.line(mark + "\t" + context.name + "\t" + server)
            }
        }
    }
}

extension ClientCommand {
    var isContexts: Bool {
        if case .contexts = self { return true }
        return false
    }
}
