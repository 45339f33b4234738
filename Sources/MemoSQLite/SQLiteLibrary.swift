internal import CSQLite

/// The SQLite this process runs on, for `--version`.
public enum SQLiteLibrary {
    public static var version: String { String(cString: sqlite3_libversion()) }
}
