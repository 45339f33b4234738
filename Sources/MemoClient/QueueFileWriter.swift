import Dispatch
import Foundation

/// Writes the offline queue's files off the client's loop: the loop hands it the bytes of a file (nil: remove it)
/// and hears the outcome back on the loop. One serial queue, so the files are written in the order the loop asked,
/// and the loop never waits for a disk (an fsync can take long; a full disk fails).
final class QueueFileWriter: Sendable {
    private let queue = DispatchQueue(label: "memo-client.queue-writer")

    /// Replaces `path` with `bytes` (removes it for nil), then calls `done` with the error, if any, on the loop
    /// that `onLoop` hops to.
    func write(
        _ bytes: [UInt8]?, to path: String, onLoop: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
        done: @escaping @Sendable ((any Error)?) -> Void
    ) {
        queue.async {
            var failure: (any Error)?
            do {
                try WriteQueueFile.replace(path, with: bytes)
            } catch {
                failure = error
            }
            let outcome = failure
            onLoop { done(outcome) }
        }
    }

    /// Waits until every write handed over so far is done (its outcome may still be on its way to the loop).
    func waitUntilWritten() {
        queue.sync {}
    }
}
