import Foundation
import MemoClient
import MemoModel
/// `memo-client completion ids`: the ids the completion scripts (ClientCommandTable) offer for show, edit and rm,
/// from the mirror cache the terminal front end keeps, so that completing never connects.
enum Completion {
    /// The ids in the mirror cache of `server`, newest first; none when there is no cache or it is damaged.
    static func cachedIDs(server: String) -> [String] {
        guard let cached = try? MirrorCache.load(from: MirrorCache.defaultPath(server: server)) else { return [] }
        return cached.memos.map { $0.id.lowercasedString }
    }
}
