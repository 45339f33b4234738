import Foundation
import Glibc
import MemoModel
import MemoNet
import MemoProbe
import MemoServer
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// A real Prometheus server on loopback with a throwaway configuration and data folder, scraping one target every
/// second; stopped (and its folder removed) by `stop()`.
final class TestPrometheus {
    let directory: TemporaryDirectory
    let port: Int
    private let process = Process()
    let logPath: String

    init(target: SocketAddress) throws {
        let path = try #require(installedTool("prometheus"), "prometheus is not installed (Debian: apt-get install prometheus)")
        directory = try TemporaryDirectory()
        let configuration = """
            global:
              scrape_interval: 1s
              scrape_timeout: 1s
            scrape_configs:
              - job_name: memo
                static_configs:
                  - targets: ['\(target)']
            """
        try configuration.write(toFile: directory.path + "/prometheus.yml", atomically: true, encoding: .utf8)
        // Prometheus cannot be told port 0: a port found free a moment before (as the PostgreSQL support does).
        port = try freeLoopbackPort()
        logPath = directory.path + "/prometheus.log"
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = [
            "--config.file=" + directory.path + "/prometheus.yml", "--storage.tsdb.path=" + directory.path + "/data",
            "--web.listen-address=127.0.0.1:\(port)", "--log.level=warn",
        ]
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.standardOutput = log
        process.standardError = log
        try process.run()
    }

    var address: SocketAddress { get throws { try SocketAddress(parsing: "127.0.0.1:\(port)") } }

    /// The value of an instant query's first sample, nil while there is none (or Prometheus is not up yet).
    func query(_ expression: String) -> Double? {
        let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
        guard let answer = try? httpRequest(try address, "/api/v1/query?query=" + encoded), answer.status == 200,
              let json = try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any],
              let data = json["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
              let value = result.first?["value"] as? [Any], value.count == 2, let text = value[1] as? String
        else { return nil }
        return Double(text)
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}

@Suite("A real Prometheus scrapes /metrics", .enabled(if: prometheusTestsEnabled), .serialized)
struct PrometheusScrapeTests {
    @Test func prometheusSeesTheConnectionsAndTheHeadRevision() throws {
        let server = try TestServer(metrics: true)
        defer { server.stop() }
        let prometheus = try TestPrometheus(target: try #require(server.server.metricsAddress))
        defer { prometheus.stop() }
        let writer = try server.connect()
        let reader = try server.connect("reader")
        for index in 0..<5 {
            _ = try writer.request(.create(id: nil, insertMicros: nil, content: "memo \(index)"))
        }
        #expect(eventually(within: 60) { prometheus.query("memo_head_revision") == 5 }, "\(prometheus.log)")
        #expect(eventually(within: 30) { prometheus.query(#"memo_connections{role="read_write"}"#) == 1 })
        #expect(eventually(within: 30) { prometheus.query(#"memo_connections{role="read_only"}"#) == 1 })
        #expect(eventually(within: 30) {
            prometheus.query(#"memo_requests_total{kind="create",result="ok"}"#) == 5
        })
        #expect(prometheus.query(#"up{job="memo"}"#) == 1)
        _ = reader
    }
}
