import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoWire
import Testing

/// A probe connection that creates memos numbered in order ("memo 0", "memo 1", ...) and keeps what the server
/// answered, so that a watcher's output can be compared with the writes.
package final class NumberedWriter {
    package let client: TestClient
    package private(set) var made: [Memo] = []

    /// Connects to `address` (`HOST:PORT`) with the certificates' client identity and says hello.
    package init(address: String, certificates: TestCertificates) throws {
        client = try TestClient(address: try SocketAddress(parsing: address), identity: certificates.client())
        try client.hello()
    }

    /// Creates `count` memos, one request at a time.
    package func write(_ count: Int) throws {
        for _ in 0..<count {
            let reply = try client.request(.create(id: nil, insertMicros: nil, content: "memo \(made.count)"))
            guard case .memo(let memo) = reply else {
                Issue.record("create answered \(reply)")
                throw TestClient.Failure.closed
            }
            made.append(memo)
        }
    }

    /// The ids of the memos made, as `watch --json` prints them.
    package var ids: [String] { made.map { $0.id.uuidString.lowercased() } }
}

/// The established TCP connections that `ss -tn` lists for `filter` (such as `( dport = :7420 )`), one line
/// each; `timers` adds each socket's timer (`ss -o`: `timer:(keepalive,14sec,0)`).
package func establishedTCP(_ filter: String, timers: Bool = false) throws -> [String] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
    process.arguments = [timers ? "-tnoH" : "-tnH", "state", "established", filter]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
}
