import Foundation
import MemoSQLite
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// Parses the last line of `output` as a JSON object.
func lastJSONObject(_ output: String) throws -> [String: Any] {
    let line = try #require(output.split(separator: "\n").last)
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
}

@Suite("memo-bench smoke: every mode runs briefly and prints valid JSON (no timing asserted)")
struct BenchSmokeTests {
    @Test func requestModePrintsTheRedisBenchmarkShapedObject() throws {
        let server = try TestServer()
        defer { server.stop() }
        for op in ["create", "get", "update", "list"] {
            let (status, out, err) = try runTool("memo-bench", [
                "--server", "\(server.address)", "--certs", server.certificates.path, "--clients", "3",
                "--requests", "60", "--pipeline", "4", "--op", op, "--json",
            ])
            #expect(status == 0, "\(op): \(err)")
            let object = try lastJSONObject(out)
            for field in ["op", "clients", "pipeline", "requests", "ops_per_sec", "p50_ms", "p99_ms"] {
                #expect(object[field] != nil, "\(op) lacks \(field)")
            }
            #expect(object["op"] as? String == op)
            #expect(object["requests"] as? Int == 60)
            #expect(object["errors"] as? Int == 0)
        }
    }

    @Test func fanoutConnectionsSnapshotAndStoreModesRun() throws {
        let server = try TestServer()
        defer { server.stop() }
        let common = ["--server", "\(server.address)", "--certs", server.certificates.path, "--json"]
        let fanout = try runTool("memo-bench", ["fanout", "--subscribers", "5", "--changes", "10", "--rate", "200"] + common)
        #expect(fanout.0 == 0, "\(fanout.2)")
        let fan = try lastJSONObject(fanout.1)
        #expect(fan["deliveries"] as? Int == 50)
        #expect(fan["missing"] as? Int == 0)

        let connections = try runTool("memo-bench", ["connections", "--count", "5", "--hold", "0.1"] + common)
        #expect(connections.0 == 0, "\(connections.2)")
        #expect(try lastJSONObject(connections.1)["count"] as? Int == 5)

        let snapshot = try runTool("memo-bench", ["snapshot", "--memos", "300", "--runs", "1"] + common)
        #expect(snapshot.0 == 0, "\(snapshot.2)")
        let snap = try lastJSONObject(snapshot.1)
        #expect(snap["memos"] as? Int == 300)
        #expect((snap["change_bytes"] as? Int ?? 9999) < 1024)

        let store = try runTool("memo-bench", ["store", "--writers", "4", "--requests", "40", "--json"])
        #expect(store.0 == 0, "\(store.2)")
        #expect(try lastJSONObject(store.1)["requests"] as? Int == 40)
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try runTool("memo-bench", ["--op", "frobnicate"]).0 == 2)
        #expect(try runTool("memo-bench", ["nonsense-mode"]).0 == 2)
        #expect(try runTool("memo-bench", ["--help"]).1.contains("fanout"))
    }
}
