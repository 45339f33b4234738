/// A wait in a test that ran past its deadline.
package struct ClientTestTimeout: Error, CustomStringConvertible {
    package let what: String

    package init(what: String) { self.what = what }

    package var description: String { "timed out waiting for \(what)" }
}

/// Runs `body` with a deadline; the deadline is a failure, never a way to wait for something.
package func withDeadline<T: Sendable>(
    _ seconds: Double = 20, _ what: String, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: .seconds(seconds))
            throw ClientTestTimeout(what: what)
        }
        let first = try await group.next()!
        group.cancelAll()
        return first
    }
}
