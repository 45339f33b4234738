import Foundation
import MemoClient
import MemoModel
import MemoNet
import MemoServer
import MemoTestSupport
import ServerTestSupport
import Testing

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
