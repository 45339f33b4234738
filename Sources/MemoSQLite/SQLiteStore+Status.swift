import MemoModel
import MemoStore
extension SQLiteStore {
    /// Kind `sqlite`, the database file.
    public var storeStatus: StoreStatus {
        StoreStatus(
            kind: "sqlite", location: path, memoCount: storeState.memoCount,
            oldestRetained: storeState.oldestResumable)
    }
}
