import Foundation
import Testing

/// One `watch --json` change line, read back.
package struct WatchLine: Equatable {
    package var type: String
    package var revision: UInt64
    package var id: String
    package var content: String

    package init(_ line: String) throws {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        type = try #require(object["type"] as? String)
        revision = try #require((object["revision"] as? NSNumber)?.uint64Value)
        let memo = try #require(object["memo"] as? [String: Any])
        id = try #require(memo["id"] as? String)
        content = try #require(memo["content"] as? String)
        #expect((memo["revision"] as? NSNumber)?.uint64Value == revision)
    }
}
