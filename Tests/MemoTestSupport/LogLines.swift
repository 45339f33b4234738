import Synchronization

/// A server's log lines, kept for a test to look through.
package final class LogLines: Sendable {
    package let lines = Mutex<[String]>([])

    package init() {}
}
