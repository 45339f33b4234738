import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoTLS
import MemoWire

/// Every hostile peer the server must survive, each with the outcome it must get.
enum HostileCatalog {
    static let cases: [HostileCase] = tls + framing + requests + load

    /// A frame of `type` with `payload`, as raw bytes (for frames the encoder would never make).
    static func frame(type: UInt8, requestID: UInt32 = 9, _ payload: [UInt8]) -> [UInt8] {
        let length = UInt32(5 + payload.count)
        return withUnsafeBytes(of: length.bigEndian, Array.init) + [type]
            + withUnsafeBytes(of: requestID.bigEndian, Array.init) + payload
    }

    // MARK: Transport and TLS

    static let tls: [HostileCase] = [
        HostileCase(name: "plain-tcp", expected: "closed at once (not TLS)") { context in
            let socket = try TCPSocket.connect(to: context.address, timeout: .seconds(5))
            defer { socket.close() }
            writeAll(socket, Array("GET / HTTP/1.1\r\nHost: memo\r\n\r\n".utf8))
            let seconds = context.secondsUntilClosed(socket, within: 5)
            return CaseOutcome((seconds ?? 99) < 1, seconds.map { "closed after \($0) s" } ?? "still open after 5 s")
        },
        HostileCase(name: "tls-without-certificate", expected: "TLS refused: noClientCertificate") { context in
            let got = context.attempt(ProbeConnection.Identity(ca: context.certs + "/ca.crt"))
            return CaseOutcome(got == "TLS refused: noClientCertificate", got)
        },
        HostileCase(name: "wrong-ca", expected: "TLS refused: unknownCA") { context in
            let got = context.attempt(ProbeConnection.Identity(
                ca: context.certs + "/ca.crt", certificate: context.foreignCerts + "/client.crt",
                key: context.foreignCerts + "/client.key"))
            return CaseOutcome(got == "TLS refused: unknownCA", got)
        },
        HostileCase(name: "expired-certificate", expected: "TLS refused: certificateExpired") { context in
            let got = context.attempt(context.identity("expired"))
            return CaseOutcome(got == "TLS refused: certificateExpired", got)
        },
        HostileCase(
            name: "not-yet-valid-certificate",
            expected: "TLS refused: certificateRejected (the server's alert for it is the generic bad certificate)"
        ) { context in
            let got = context.attempt(context.identity("future"))
            return CaseOutcome(got == "TLS refused: certificateRejected", got)
        },
        HostileCase(name: "tls1.0-only", expected: "TLS refused: protocolVersion") { context in
            let got = context.attempt(context: try context.oldProtocolContext(.tls1_0))
            return CaseOutcome(got == "TLS refused: protocolVersion", got)
        },
        HostileCase(name: "tls1.1-only", expected: "TLS refused: protocolVersion") { context in
            let got = context.attempt(context: try context.oldProtocolContext(.tls1_1))
            return CaseOutcome(got == "TLS refused: protocolVersion", got)
        },
        HostileCase(
            name: "slowloris-handshake",
            expected: "a ClientHello dripped one byte per 200 ms is closed at the handshake timeout (2 s, +1 s)"
        ) { context in
            let engine = try TLSEngine(context: try TLSContext(.client(
                trustedCAPath: context.certs + "/ca.crt", certificateChainPath: context.certs + "/client.crt",
                privateKeyPath: context.certs + "/client.key")), serverName: "127.0.0.1")
            _ = try engine.handshake()
            var hello: [UInt8] = []
            engine.takeOutbound(into: &hello)
            let socket = try TCPSocket.connect(to: context.address, timeout: .seconds(5))
            defer { socket.close() }
            let start = ContinuousClock.now
            var closedAt: Duration?
            for byte in hello.prefix(40) {
                guard writeAll(socket, [byte]), context.secondsUntilClosed(socket, within: 0.2) == nil else {
                    closedAt = ContinuousClock.now - start
                    break
                }
            }
            let seconds = closedAt.map { Double(milliseconds($0)) / 1000 }
            let ok = seconds.map { $0 >= context.handshakeTimeout - 0.3 && $0 <= context.handshakeTimeout + 1 }
            return CaseOutcome(ok ?? false, seconds.map { "closed after \($0) s" } ?? "still open after 8 s")
        },
        HostileCase(
            name: "slowloris-hello",
            expected: "hello dripped one byte per 200 ms after TLS: error 303 handshake-timeout, closed"
        ) { context in
            let connection = try context.connect(hello: false)
            let hello = Message.hello(minVersion: 1, maxVersion: 1, client: "slow").frame(requestID: 1)
            for byte in hello.prefix(hello.count - 1) {
                guard (try? connection.sendRaw([byte])) != nil else { break }
                pause(0.2)
                if Double(hello.firstIndex(of: byte) ?? 0) * 0.2 > context.handshakeTimeout + 1 { break }
            }
            return context.expectClose(with: .handshakeTimeout, context.readUntilClosed(connection))
        },
        HostileCase(
            name: "half-open-flood",
            expected: "thousands of TCP connections that never start TLS are all closed by the handshake timeout"
        ) { context in
            var sockets: [TCPSocket] = []
            defer { for socket in sockets { socket.close() } }
            for _ in 0..<context.flood {
                sockets.append(try TCPSocket.connect(to: context.address, timeout: .seconds(5)))
            }
            let opened = ContinuousClock.now
            var open = 0
            for socket in sockets {
                let left = Double(milliseconds(opened + .seconds(context.handshakeTimeout + 3) - .now)) / 1000
                if context.secondsUntilClosed(socket, within: max(0.01, left)) == nil { open += 1 }
            }
            return CaseOutcome(open == 0, "\(sockets.count - open) of \(sockets.count) closed by the server "
                + "within \(Int(context.handshakeTimeout) + 3) s")
        },
        HostileCase(
            name: "garbage-tls-records",
            expected: "bytes that are not TLS records after the handshake: closed"
        ) { context in
            let connection = try context.connect()
            writeAll(connection.socket, Array("this is not a TLS record at all\r\n".utf8))
            let result = context.readUntilClosed(connection)
            return CaseOutcome(result.closed, context.describe(result))
        },
    ]

    // MARK: Frames

    static let framing: [HostileCase] = [
        HostileCase(name: "garbage-after-handshake", expected: "error 101 frame-too-large, closed") { context in
            context.expectClose(with: .frameTooLarge, try context.sendAndReadUntilClosed(
                Array("GET / HTTP/1.1\r\nHost: memo\r\n\r\n".utf8)))
        },
        HostileCase(name: "length-zero", expected: "error 100 malformed-frame, closed") { context in
            context.expectClose(with: .malformedFrame, try context.sendAndReadUntilClosed([0, 0, 0, 0]))
        },
        HostileCase(name: "length-2^32-1", expected: "error 101 frame-too-large, closed") { context in
            context.expectClose(with: .frameTooLarge, try context.sendAndReadUntilClosed([0xFF, 0xFF, 0xFF, 0xFF]))
        },
        HostileCase(
            name: "frame-cut-then-silence",
            expected: "a frame cut mid-way, then nothing: error 304 frame-timeout after the frame timeout (2 s), closed"
        ) { context in
            let whole = Message.create(id: UUID(), insertMicros: nil, content: String(repeating: "x", count: 1000))
                .frame(requestID: 3)
            let connection = try context.connect(timeout: .seconds(context.frameTimeout + 3))
            let start = ContinuousClock.now
            try connection.sendRaw(Array(whole.prefix(300)))
            let result = context.readUntilClosed(connection)
            var outcome = context.expectClose(with: .frameTimeout, result)
            outcome.got += " after \(Double(milliseconds(ContinuousClock.now - start)) / 1000) s"
            return outcome
        },
        HostileCase(name: "unknown-message-type", expected: "error 102 unknown-message-type, closed") { context in
            context.expectClose(with: .unknownMessageType, try context.sendAndReadUntilClosed(frame(type: 0x33, [])))
        },
        HostileCase(name: "invalid-utf8", expected: "error 103 invalid-utf8, closed") { context in
            // create, no flags, content of two bytes that are not UTF-8
            context.expectClose(with: .invalidUTF8, try context.sendAndReadUntilClosed(
                frame(type: 0x02, [0, 0, 0, 0, 2, 0xC3, 0x28])))
        },
        HostileCase(name: "trailing-bytes", expected: "error 100 malformed-frame, closed") { context in
            context.expectClose(with: .malformedFrame, try context.sendAndReadUntilClosed(frame(type: 0x04, [0xAA])))
        },
        HostileCase(name: "response-as-request", expected: "error 203 invalid-request, stays open") { context in
            let connection = try context.connect()
            return context.expectStaysOpen(connection, try connection.request(.ok), code: .invalidRequest)
        },
        HostileCase(
            name: "abrupt-reset-mid-frame",
            expected: "half a frame, then a TCP reset: the server closes that connection (logged) and nothing else"
        ) { context in
            let before = context.logCount("close conn=")
            let connection = try context.connect()
            try connection.sendRaw(Array(Message.ping(nonce: 1).frame(requestID: 2).prefix(7)))
            reset(connection.socket)
            let deadline = ContinuousClock.now + .seconds(3)
            while context.logCount("close conn=") <= before, ContinuousClock.now < deadline { pause(0.02) }
            let closed = context.logCount("close conn=") - before
            return CaseOutcome(closed >= 1, closed >= 1 ? "the server logged the close" : "no close logged in 3 s")
        },
    ]

    // MARK: Requests

    static let requests: [HostileCase] = [
        HostileCase(name: "request-before-hello", expected: "error 105 hello-required, closed") { context in
            context.expectClose(with: .helloRequired, try context.sendAndReadUntilClosed(
                Message.list.frame(requestID: 1), hello: false))
        },
        HostileCase(name: "unsupported-version", expected: "error 104 unsupported-version, closed") { context in
            context.expectClose(with: .unsupportedVersion, try context.sendAndReadUntilClosed(
                Message.hello(minVersion: WireProtocol.version + 1, maxVersion: 9, client: "future").frame(requestID: 1), hello: false))
        },
        HostileCase(name: "content-over-limit", expected: "error 202 content-too-large, stays open") { context in
            let connection = try context.connect()
            let reply = try connection.request(.create(
                id: UUID(), insertMicros: nil, content: String(repeating: "a", count: MemoLimits.maxContentBytes + 1)))
            return context.expectStaysOpen(connection, reply, code: .contentTooLarge)
        },
        HostileCase(name: "request-id-reused", expected: "error 106 duplicate-request-id, closed") { context in
            let connection = try context.connect()
            let head = try context.currentRevision()
            try connection.send(.subscribe(after: head), id: 5)
            _ = try connection.receive { $0.requestID == 5 }
            try connection.send(.subscribe(after: head), id: 5)
            return context.expectClose(with: .duplicateRequestID, context.readUntilClosed(connection))
        },
        HostileCase(name: "read-only-certificate-writes", expected: "error 204 permission-denied, stays open") {
            context in
            let connection = try context.connect("reader")
            let reply = try connection.request(.create(id: UUID(), insertMicros: nil, content: "not allowed"))
            return context.expectStaysOpen(connection, reply, code: .permissionDenied)
        },
        HostileCase(name: "unknown-subscription", expected: "error 205 unknown-subscription, stays open") { context in
            let connection = try context.connect()
            let reply = try connection.request(.unsubscribe(subscription: 999))
            return context.expectStaysOpen(connection, reply, code: .unknownSubscription)
        },
        HostileCase(
            name: "subscription-limit", expected: "the 65th subscription: error 203 invalid-request, stays open"
        ) { context in
            let connection = try context.connect()
            let head = try context.currentRevision()
            for _ in 0..<64 {
                let reply = try connection.request(.subscribe(after: head))
                guard case .subscribed = reply else { return CaseOutcome(false, "a subscription got \(brief(reply))") }
            }
            let reply = try connection.request(.subscribe(after: head))
            return context.expectStaysOpen(connection, reply, code: .invalidRequest)
        },
    ]

    // MARK: Load

    static let load: [HostileCase] = [
        HostileCase(
            name: "request-flood-in-flight",
            expected: "2,000 pipelined creates, no reading: error 300 too-many-in-flight, closed"
        ) { context in
            let connection = try context.connect()
            var burst: [UInt8] = []
            for i in 0..<2000 {
                burst += Message.create(id: UUID(), insertMicros: nil, content: "flood \(i)")
                    .frame(requestID: UInt32(i + 10))
            }
            try? connection.sendRaw(burst)
            return context.expectClose(with: .tooManyInFlight, context.readUntilClosed(connection))
        },
        HostileCase(
            name: "ping-flood-without-reading",
            expected: "40,000 pings without reading (680 KB of answers, over --max-outbound): the server stops "
                + "reading until we read, RSS up less than 2 x --max-outbound; then every ping is answered"
        ) { context in
            let connection = try context.connect(timeout: .seconds(10))
            shrinkReceiveBuffer(connection.socket)
            let flood = Flood(connection)
            var rss = RSSWatch(context)
            var chunk: [UInt8] = []
            for i in 0..<4000 { chunk += Message.ping(nonce: UInt64(i)).frame(requestID: UInt32(i + 1)) }
            // Pushed out before reading anything: the server stops taking pings once it holds enough answers.
            _ = try flood.sendUntilStalled(
                chunks: 10, perChunk: 4000, stallAfter: .seconds(1), chunk: { _ in chunk }, sample: { rss.sample() })
            rss.sampleWithoutReading(for: 1)
            let (pongs, closed) = flood.drain(expecting: flood.requests, within: .seconds(60)) {
                $0.type == Message.Kind.pong.rawValue
            }
            return rss.outcome(pongs == flood.requests && !closed,
                               "\(pongs) of \(flood.requests) answered" + (closed ? ", closed" : ""))
        },
        HostileCase(
            name: "keyupdate-flood-without-reading",
            expected: "50,000 TLS KeyUpdate(update_requested) without reading: all answered by one KeyUpdate before "
                + "the next record, RSS up less than 2 x --max-outbound; a ping after them is answered"
        ) { context in
            let connection = try context.connect(timeout: .seconds(10))
            let flood = Flood(connection)
            var rss = RSSWatch(context)
            for _ in 0..<50 {
                try flood.requestKeyUpdates(1000)
                rss.sample()
            }
            try flood.send(Message.ping(nonce: 5).frame(requestID: 77), requests: 1)
            let (pongs, closed) = flood.drain(expecting: 1, within: .seconds(30)) { $0.requestID == 77 }
            rss.sample()
            return rss.outcome(pongs == 1 && !closed, "50000 KeyUpdates sent; " + (pongs == 1 ? "the ping after them "
                + "was answered" : "no pong") + (closed ? ", closed" : ""))
        },
        HostileCase(
            name: "get-flood-without-reading",
            expected: "500 pipelined gets of a 60 KB memo (30 MB of answers), no reading: the server answers only "
                + "as fast as we read, RSS up less than 2 x --max-outbound; then every get is answered"
        ) { context in
            let connection = try context.connect(timeout: .seconds(10))
            let reply = try connection.request(.create(
                id: UUID(), insertMicros: nil, content: String(repeating: "g", count: 60_000)))
            guard case .memo(let memo) = reply else { return CaseOutcome(false, "the create got \(brief(reply))") }
            let flood = Flood(connection)
            var rss = RSSWatch(context)
            try flood.send((0..<500).flatMap { Message.get(id: memo.id).frame(requestID: UInt32($0 + 100)) },
                           requests: 500)
            rss.sampleWithoutReading(for: 1)
            let (answers, closed) = flood.drain(expecting: 500, within: .seconds(60)) {
                $0.type == Message.Kind.memo.rawValue
            }
            return rss.outcome(answers == 500 && !closed, "\(answers) of 500 answered" + (closed ? ", closed" : ""))
        },
        HostileCase(
            name: "list-flood-without-reading",
            expected: "300 pipelined lists, no reading: answered only as fast as we read (never more than a few "
                + "snapshots queued), RSS up less than 2 x --max-outbound; then every list is answered"
        ) { context in
            let connection = try context.connect(timeout: .seconds(10))
            let flood = Flood(connection)
            var rss = RSSWatch(context)
            try flood.send((0..<300).flatMap { Message.list.frame(requestID: UInt32($0 + 1)) }, requests: 300)
            rss.sampleWithoutReading(for: 1)
            var lists = 0
            let (_, closed) = flood.drain(expecting: 300, within: .seconds(60)) { frame in
                // The last chunk of a list has its flag set: count whole answers.
                guard case .memos(_, let last, _)? = try? Message(frame: frame), last else { return false }
                lists += 1
                return true
            }
            return rss.outcome(lists == 300 && !closed, "\(lists) of 300 answered" + (closed ? ", closed" : ""))
        },
        HostileCase(
            name: "subscriber-never-reads",
            expected: "a subscriber that never reads while thousands of changes flow: dropped as a slow consumer (301)"
        ) { context in
            let before = context.logCount("slow consumer")
            let sleeper = try context.connect(timeout: .seconds(10))
            try sleeper.send(.subscribe(after: try context.currentRevision()))
            let writer = try context.connect(timeout: .seconds(10))
            let content = String(repeating: "z", count: 2048)
            var changes = 0
            while changes < 20_000, context.logCount("slow consumer") == before {
                var ids: [UInt32] = []
                for _ in 0..<32 {
                    ids.append(try writer.send(.create(id: UUID(), insertMicros: nil, content: content)))
                }
                for id in ids { _ = try writer.receive { $0.requestID == id } }
                changes += 32
            }
            let dropped = context.logCount("slow consumer") > before
            let result = context.readUntilClosed(sleeper)
            var outcome = context.expectClose(with: .slowConsumer, result)
            outcome.got = "\(changes) changes made; " + outcome.got
            outcome.passed = outcome.passed && dropped
            return outcome
        },
        HostileCase(
            name: "reconnect-storm",
            expected: "4 threads x 50 connections (TLS, hello, ping, then dropped or reset): every one served"
        ) { context in
            let served = LockedBox(0)
            let failures = LockedBox<[String]>([])
            let group = DispatchGroup()
            for thread in 0..<4 {
                group.enter()
                Thread.detachNewThread {
                    for i in 0..<50 {
                        do {
                            let connection = try context.connect(timeout: .seconds(10))
                            guard try connection.request(.ping(nonce: 1)) == .pong(nonce: 1) else {
                                throw TortureError("no pong")
                            }
                            served.update { $0 += 1 }
                            if (thread + i) % 2 == 0 { reset(connection.socket) }
                        } catch {
                            failures.update { $0.append("\(error)") }
                        }
                    }
                    group.leave()
                }
            }
            group.wait()
            let failed = failures.value
            return CaseOutcome(failed.isEmpty, "\(served.value) of 200 served"
                + (failed.isEmpty ? "" : "; first failure: \(failed[0])"))
        },
    ]
}
