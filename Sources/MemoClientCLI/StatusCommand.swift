import Foundation
import MemoClient
import MemoModel
import MemoWire

/// One server's line of `memo-client status`: its report, or why it could not be had.
public struct StatusRow: Sendable {
    public var server: String
    public var report: StatusReport?
    /// Why the server could not be asked (unreachable, TLS refused, no answer in time); nil with a report.
    public var failure: String?
    /// The exit code the failure stands for (5 refused, 6 unreachable, ...); nil with a report.
    public var failureCode: ExitCode?

    public init(server: String, report: StatusReport) {
        self.server = server
        self.report = report
    }

    public init(server: String, failure: String, code: ExitCode) {
        self.server = server
        self.failure = failure
        failureCode = code
    }
}

extension CommandRunner {
    /// `memo-client status`: asks each server of `--server` on its own connection, at once, and prints one row
    /// per server in the order given.
    /// - Returns: 0 when every server answered ready; the failure's code (6 unreachable, 5 refused) when one
    ///   could not be asked; else 8 when one answered not ready.
    func status() async -> ExitCode {
        let servers = configuration.server.split(separator: ",").map(String.init)
        let base = configuration
        let rows = await withTaskGroup(of: (Int, StatusRow).self) { group in
            for (index, server) in servers.enumerated() {
                group.addTask {
                    var single = base
                    single.server = server
                    do {
                        let client = try await MemoConnection.connect(single)
                        defer { client.close() }
                        return (index, StatusRow(server: server, report: try await client.status()))
                    } catch {
                        return (index, StatusRow(
                            server: server, failure: ExitCode.message(for: error), code: ExitCode(error)))
                    }
                }
            }
            var rows = [StatusRow?](repeating: nil, count: servers.count)
            for await (index, row) in group { rows[index] = row }
            return rows.compactMap { $0 }
        }
        for line in StatusFormat.lines(rows, style: style) { out.line(line) }
        out.flush()
        return StatusFormat.exitCode(rows)
    }
}

/// How `memo-client status` prints its rows (README, "Operating memo", says the same).
public enum StatusFormat {
    /// 0 when every row is ready; else the first unreachable row's code; else 8 (not ready).
    public static func exitCode(_ rows: [StatusRow]) -> ExitCode {
        if let failed = rows.first(where: { $0.report == nil }) { return failed.failureCode ?? .unreachable }
        if rows.contains(where: { $0.report?.ready == false }) { return .notReady }
        return .ok
    }

    /// Human: a table with a header. Scripts: the same columns separated by tabs, no header. JSON: one object per
    /// line, one line per server.
    public static func lines(_ rows: [StatusRow], style: OutputStyle) -> [String] {
        if style.json { return rows.map(json) }
        let header = ["SERVER", "STATUS", "REVISION", "MEMOS", "CONNECTIONS", "SUBSCRIBERS", "LAG", "STORE",
                      "UPTIME", "DETAIL"]
        let table = rows.map(columns)
        guard style.human else { return table.map { $0.joined(separator: "\t") } }
        var widths = header.map(\.count)
        for row in table {
            for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) }
        }
        return ([header] + table).map { row in
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }.joined(separator: "  ").trimmingCharacters(in: .whitespaces)
        }
    }

    /// The cells of one row: `-` where a value does not apply or the server could not be asked.
    static func columns(_ row: StatusRow) -> [String] {
        guard let report = row.report else {
            return [row.server, "unreachable", "-", "-", "-", "-", "-", "-", "-", row.failure ?? ""]
        }
        func integer(_ key: String) -> Int64? {
            if case .integer(let value)? = report[key] { return value }
            return nil
        }
        func text(_ key: String) -> String? {
            if case .text(let value)? = report[key] { return value }
            return nil
        }
        let connections = (integer("connections.read_write") ?? 0) + (integer("connections.read_only") ?? 0)
        var lag = "-"
        if let applied = integer("postgres.applied_revision"), let head = integer("postgres.database_head") {
            lag = String(max(0, head - applied))
            if case .number(let age)? = report["postgres.feed_progress_age.seconds"] {
                lag += String(format: " (%.1fs)", age)
            }
        }
        var store = text("store.kind") ?? "-"
        if let location = text("store.location") { store += ":" + location }
        var uptime = "-"
        if case .number(let seconds)? = report["uptime.seconds"] { uptime = duration(seconds) }
        return [
            row.server, report.ready ? "ready" : "not-ready", integer("revision.head").map(String.init) ?? "-",
            integer("memos.count").map(String.init) ?? "-", String(connections),
            integer("subscribers").map(String.init) ?? "-", lag, store, uptime, report.ready ? "" : report.reason,
        ]
    }

    /// `3d4h`, `2h05m`, `4m07s`, `12s`.
    static func duration(_ seconds: Double) -> String {
        let total = Int(seconds)
        let (days, hours, minutes, rest) = (total / 86_400, total / 3600 % 24, total / 60 % 60, total % 60)
        if days > 0 { return "\(days)d\(hours)h" }
        if hours > 0 { return String(format: "%dh%02dm", hours, minutes) }
        if minutes > 0 { return String(format: "%dm%02ds", minutes, rest) }
        return "\(rest)s"
    }

    /// `{"server":…,"reachable":true,"ready":…,"reason":…|null,"fields":{name:value,…}}`; a server that could not
    /// be asked: `{"server":…,"reachable":false,"ready":false,"reason":…,"fields":{}}`. Values that do not apply
    /// are null.
    static func json(_ row: StatusRow) -> String {
        var text = "{\"server\":"
        MemoJSON.appendString(row.server, to: &text)
        guard let report = row.report else {
            text += ",\"reachable\":false,\"ready\":false,\"reason\":"
            MemoJSON.appendString(row.failure ?? "", to: &text)
            return text + ",\"fields\":{}}"
        }
        text += ",\"reachable\":true,\"ready\":" + (report.ready ? "true" : "false") + ",\"reason\":"
        if report.ready { text += "null" } else { MemoJSON.appendString(report.reason, to: &text) }
        text += ",\"fields\":{"
        for (index, field) in report.fields.enumerated() {
            if index > 0 { text += "," }
            MemoJSON.appendString(field.key, to: &text)
            text += ":"
            switch field.value {
            case .none: text += "null"
            case .integer(let value): text += String(value)
            case .number(let value): text += value.isFinite ? "\(value)" : "null"
            case .text(let value): MemoJSON.appendString(value, to: &text)
            }
        }
        return text + "}}"
    }
}
