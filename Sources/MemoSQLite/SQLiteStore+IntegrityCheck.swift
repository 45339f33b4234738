import MemoModel
extension SQLiteStore {
    /// Runs SQLite's `PRAGMA integrity_check` on the file at `path` through a read-only connection of its own, so
    /// it changes nothing and may run while a store has the file open.
    /// - Returns: SQLite's report, `["ok"]` for a sound file, otherwise one line per problem.
    /// - Throws: `MemoError.storage` when the file cannot be opened or read.
    public static func integrityCheck(path: String) throws(MemoError) -> [String] {
        let database = try SQLiteDatabase(path: path, readOnly: true)
        defer { database.close() }
        let check = try database.prepare("PRAGMA integrity_check")
        defer { check.reset() }
        var report: [String] = []
        while try check.step() { report.append(check.string(0)) }
        return report
    }
}
