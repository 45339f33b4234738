import Foundation
import MemoClient
import MemoCore
import MemoNet
import MemoServer
import Testing

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

/// Waits for the first value of `subject` that satisfies `condition`.
package func firstValue<Value: Sendable>(
    of subject: Subject<Value>, _ what: String, seconds: Double = 20,
    where condition: @escaping @Sendable (Value) -> Bool
) async throws -> Value {
    let stream = subject.values
    return try await withDeadline(seconds, what) {
        for await value in stream where condition(value) { return value }
        throw ClientTestTimeout(what: what + " (the subject ended)")
    }
}

extension TestServer {
    /// A client configuration for this server with the named certificate.
    package func clientConfiguration(
        _ name: String = "client", timeout: Duration = .seconds(10)
    ) -> ClientConfiguration {
        ClientConfiguration(
            server: address.description, caPath: certificates.path + "/ca.crt",
            certificatePath: certificates.path + "/\(name).crt", keyPath: certificates.path + "/\(name).key",
            requestTimeout: timeout, clientName: "client-test")
    }
}
