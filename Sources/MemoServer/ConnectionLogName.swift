import MemoDiagnostics
import MemoNet

/// How the server's log names one connection, and the lines a connection writes about itself: a value, so the
/// exact text and fields of each line are tested without a socket.
///
/// Every line about a connection carries `conn`, `peer` and (once TLS gave it) `cn`, in that order, in both forms:
/// `"<event> conn=<n> peer=<address> cn=<name> <detail>"` in text, and the same as fields before the line's own.
struct ConnectionLogName {
    let number: UInt64
    let peer: SocketAddress
    /// The client certificate's common name, "-" until the handshake gives it.
    var commonName = "-"

    /// `line` about this connection as a log record.
    func record(_ line: LogLine) -> LogRecord {
        LogRecord(
            line.level, line.name, [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName)] + line.fields,
            text: "\(line.event) conn=\(number) peer=\(peer) cn=\(commonName) \(line.detail)")
    }

    /// The loop could not take the socket: the connection closes before it began (no `cn` yet).
    func cannotRegister(_ error: some Error) -> LogRecord {
        LogRecord(
            .error, "close", [("conn", "\(number)"), ("peer", "\(peer)"), ("reason", "cannot register: \(error)")],
            text: "close conn=\(number) peer=\(peer) reason=\"cannot register: \(error)\"")
    }

    /// A subscriber whose catch-up the history overtook (`ServerConnectionMachine.catchUpOvertaken`).
    func catchUpOvertaken() -> LogRecord {
        LogRecord(
            .warn, "slow_consumer",
            [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName), ("catch_up", "overtaken")],
            text: "slow consumer conn=\(number) peer=\(peer) cn=\(commonName): the history let go of changes its "
                + "catch-up had not sent; dropping what is queued and sending going-away")
    }

    /// A slow consumer's queue is dropped (see `ServerConnectionMachine.slowConsumer`).
    func slowConsumer(limit: Int) -> LogRecord {
        LogRecord(
            .warn, "slow_consumer",
            [("conn", "\(number)"), ("peer", "\(peer)"), ("cn", commonName), ("queued_limit", "\(limit)")],
            text: "slow consumer conn=\(number) peer=\(peer) cn=\(commonName): over \(limit) bytes queued; dropping "
                + "them and sending going-away")
    }
}

extension LogLine {
    /// TLS is up: the role the certificate gives and the TLS version agreed ("?" when unknown), and
    /// `resumed=yes` when the handshake resumed a session from a ticket (the field is left out otherwise).
    static func opened(readOnly: Bool, tls version: String?, resumed: Bool = false) -> LogLine {
        let role = readOnly ? "read-only" : "read-write"
        let version = version ?? "?"
        return LogLine(
            event: "open", detail: "role=\(role) tls=\(version)" + (resumed ? " resumed=yes" : ""), name: "open",
            level: .info, fields: [("role", role), ("tls", version)] + (resumed ? [("resumed", "yes")] : []))
    }

    /// The connection is closed, for `reason` (the machine's `closeReason`).
    static func closed(reason: String) -> LogLine {
        LogLine(
            event: "close", detail: "reason=\"\(reason)\"", name: "close", level: .info, fields: [("reason", reason)])
    }
}
