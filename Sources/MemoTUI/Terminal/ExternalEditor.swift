import Foundation

/// Hands the compose text to the user's editor ($VISUAL, $EDITOR, else vi) and takes back what it saved.
enum ExternalEditor {
    /// Writes `text` to a temporary file, gives the terminal to the editor (cooked mode, main screen) and reads the
    /// file back once the editor exits.
    /// - Returns: the edited text, or nil when the editor failed (non-zero exit) so the text is left alone.
    static func edit(_ text: String, command: String, terminal: Terminal, reader: InputReader) throws -> String? {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("memo-\(UUID().uuidString.lowercased()).txt")
        try Data((text + "\n").utf8).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }

        reader.pause()
        terminal.leave()
        defer {
            try? terminal.enter()
            reader.resume()
        }
        // Through the shell, so that EDITOR may carry arguments ("code --wait").
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", command + " \"$1\"", "memo-editor", url.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        var edited = String(decoding: try Data(contentsOf: url), as: UTF8.self)
        // Editors end the file with a newline the memo did not have.
        if edited.hasSuffix("\n") { edited.removeLast() }
        return edited
    }
}
