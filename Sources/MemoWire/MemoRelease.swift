/// The release this build is, for `--version` (the wire protocol's version is `WireProtocol.version`).
public enum MemoRelease {
    public static let version = "1.0.0"

    /// The `--version` text of a binary: its release, the protocol, and the C libraries it runs on, one per line
    /// so that a script can pick a line.
    public static func versionText(program: String, libraries: [(name: String, version: String)]) -> String {
        var text = "\(program) \(version)\nprotocol \(WireProtocol.version)\n"
        for library in libraries { text += "\(library.name) \(library.version)\n" }
        return text
    }
}
