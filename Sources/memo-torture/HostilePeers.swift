import Foundation
import MemoNet
import MemoProbe
import MemoTLS
import MemoWire

/// How the cases talk to the server and describe what they saw.
extension HostileContext {
    /// Connects with `identity` (or `context`) and says hello. - Returns: what happened, in a few words.
    func attempt(_ identity: ProbeConnection.Identity? = nil, context tls: TLSContext? = nil) -> String {
        do {
            let connection: ProbeConnection
            if let tls {
                connection = try ProbeConnection(address: address, context: tls, timeout: .seconds(5))
            } else {
                connection = try ProbeConnection(address: address, identity: identity!, timeout: .seconds(5))
            }
            let welcome = try connection.hello()
            return "accepted: \(brief(welcome))"
        } catch let error as TLSError {
            return "TLS refused: \(error.kind)"
        } catch {
            return "\(error)"
        }
    }

    /// A client that speaks only `version`, with our valid certificate.
    func oldProtocolContext(_ version: TLSVersion) throws -> TLSContext {
        try TLSContext(TLSConfiguration(
            role: .client, certificateChainPath: certs + "/client.crt", privateKeyPath: certs + "/client.key",
            trustedCAPath: certs + "/ca.crt", minimumVersion: version, maximumVersion: version, securityLevel: 0))
    }

    /// Sends `bytes` after TLS (and hello unless `hello` is false) and reads until the server closes.
    func sendAndReadUntilClosed(_ bytes: [UInt8], hello: Bool = true) throws -> (messages: [Message], closed: Bool) {
        let connection = try connect(hello: hello)
        try connection.sendRaw(bytes)
        return readUntilClosed(connection)
    }

    /// The frames before the close; `closed` false when the server kept the connection open past the timeout.
    /// A reset (the server closed with our bytes unread) or a cut TLS stream counts as closed too.
    func readUntilClosed(_ connection: ProbeConnection) -> (messages: [Message], closed: Bool) {
        var messages: [Message] = []
        while true {
            do {
                messages.append(try connection.receive().1)
            } catch ProbeConnection.Failure.timedOut {
                return (messages, false)
            } catch {
                return (messages, true)
            }
        }
    }

    /// Expects an error frame with `code`, then the close.
    func expectClose(with code: ErrorCode, _ result: (messages: [Message], closed: Bool)) -> CaseOutcome {
        let sawCode = result.messages.contains {
            if case .error(code, _) = $0 { return true }
            if case .goingAway(code, _) = $0 { return true }
            return false
        }
        return CaseOutcome(sawCode && result.closed, describe(result))
    }

    /// Expects the answer to be error `code` and the connection to stay open (a ping is answered after it).
    func expectStaysOpen(_ connection: ProbeConnection, _ reply: Message, code: ErrorCode) -> CaseOutcome {
        var got = brief(reply)
        var open = false
        do {
            open = try connection.request(.ping(nonce: 7)) == .pong(nonce: 7)
            got += open ? ", then pong (still open)" : ", then no pong"
        } catch {
            got += ", then \(error)"
        }
        if case .error(code, _) = reply { return CaseOutcome(open, got) }
        return CaseOutcome(false, got)
    }

    /// Error and going-away frames in full, the other frames counted, then whether the server closed.
    func describe(_ result: (messages: [Message], closed: Bool)) -> String {
        var parts: [String] = []
        let others = result.messages.filter {
            switch $0 {
            case .error, .goingAway: return false
            default: return true
            }
        }
        if !others.isEmpty {
            let kinds = Set(others.map { "\($0.kind)" }).sorted().joined(separator: ", ")
            parts.append("\(others.count) other frames (\(kinds))")
        }
        parts += result.messages.compactMap {
            switch $0 {
            case .error, .goingAway: return brief($0)
            default: return nil
            }
        }
        parts.append(result.closed ? "closed" : "still open")
        return parts.joined(separator: ", ")
    }

    /// Waits until the server closes a plain socket. - Returns: seconds until it did, or nil.
    func secondsUntilClosed(_ socket: TCPSocket, within seconds: Double) -> Double? {
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(Int(seconds * 1000))
        var buffer = [UInt8](repeating: 0, count: 4096)
        while ContinuousClock.now < deadline {
            guard (try? socket.wait(for: .readable, timeout: deadline - ContinuousClock.now)) == true else { break }
            do {
                if try buffer.withUnsafeMutableBytes({ try socket.read(into: $0) }) == .eof { break }
            } catch {
                break  // reset
            }
        }
        let elapsed = ContinuousClock.now - start
        return elapsed < .milliseconds(Int(seconds * 1000)) ? Double(milliseconds(elapsed)) / 1000 : nil
    }

    /// The store's revision, as a new connection's welcome says.
    func currentRevision() throws -> UInt64 {
        guard case .welcome(_, let revision, _, _, _) = try connect(hello: false).hello() else { return 0 }
        return revision
    }
}

/// A message in a few words.
func brief(_ message: Message) -> String {
    switch message {
    case .error(let code, _): return "error \(code)"
    case .goingAway(let code, _): return "going-away \(code)"
    case .welcome(_, let revision, _, let role, _): return "welcome (revision \(revision), \(role))"
    default: return "\(message.kind)"
    }
}

/// Sends raw bytes on a plain socket, waiting while it would block. - Returns: false once the peer is gone.
@discardableResult
func writeAll(_ socket: TCPSocket, _ bytes: [UInt8], timeout: Duration = .seconds(5)) -> Bool {
    var offset = 0
    let deadline = ContinuousClock.now + timeout
    while offset < bytes.count, ContinuousClock.now < deadline {
        do {
            let result = try bytes[offset...].withUnsafeBytes { try socket.write($0) }
            switch result {
            case .wrote(let count): offset += count
            case .wouldBlock: _ = try socket.wait(for: .writable, timeout: deadline - ContinuousClock.now)
            }
        } catch {
            return false
        }
    }
    return offset == bytes.count
}

/// Closes a socket with a reset (SO_LINGER 0) instead of a FIN.
func reset(_ socket: TCPSocket) {
    var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
    _ = setsockopt(socket.fileDescriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
    socket.close()
}

/// Shrinks a socket's receive buffer, so that a peer that does not read fills the server's queue sooner (and
/// the case costs less CPU on both sides).
func shrinkReceiveBuffer(_ socket: TCPSocket, to bytes: Int32 = 16 * 1024) {
    var size = bytes
    _ = setsockopt(socket.fileDescriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
}

/// Shrinks a socket's send buffer, so that a peer that stops reading stalls our writes sooner.
func shrinkSendBuffer(_ socket: TCPSocket, to bytes: Int32 = 16 * 1024) {
    var size = bytes
    _ = setsockopt(socket.fileDescriptor, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
}

/// The server's RSS during a flood case, against the bound of issue 12: less than 2 x --max-outbound above what
/// it was when the case began.
struct RSSWatch {
    let context: HostileContext
    let baselineKiB: Int
    private(set) var peakKiB: Int

    init(_ context: HostileContext) {
        self.context = context
        baselineKiB = context.server.residentKiB ?? 0
        peakKiB = baselineKiB
    }

    mutating func sample() {
        if let kib = context.server.residentKiB { peakKiB = max(peakKiB, kib) }
    }

    /// Samples every 20 ms for `seconds` while the case reads nothing: what the server holds for an idle reader
    /// is the figure that must stay bounded.
    mutating func sampleWithoutReading(for seconds: Double) {
        let until = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < until {
            sample()
            pause(0.02)
        }
    }

    var grewKiB: Int { peakKiB - baselineKiB }
    var boundKiB: Int { 2 * context.maxOutbound / 1024 }

    func outcome(_ passed: Bool, _ got: String) -> CaseOutcome {
        CaseOutcome(passed && grewKiB <= boundKiB, got + "; server RSS up \(grewKiB) KiB (bound \(boundKiB) KiB)")
    }
}
