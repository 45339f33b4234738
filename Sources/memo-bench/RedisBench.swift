import Foundation
import MemoCLI
import MemoNet
import MemoProbe
import MemoTLS

/// A minimal RESP client over TLS, for the side-by-side modes (pub/sub and idle connections).
final class RedisConnection {
    let stream: TLSStream
    private var buffer: [UInt8] = []
    private var index = 0

    init(address: SocketAddress, context: TLSContext) throws {
        stream = try TLSStream(address: address, context: context)
    }

    static func command(_ words: [String]) -> [UInt8] {
        var bytes = Array("*\(words.count)\r\n".utf8)
        for word in words {
            let utf8 = Array(word.utf8)
            bytes += Array("$\(utf8.count)\r\n".utf8) + utf8 + [13, 10]
        }
        return bytes
    }

    func send(_ words: [String]) throws {
        try stream.write(Self.command(words))
    }

    /// A RESP value: strings (simple or bulk), integers, arrays, errors.
    indirect enum Value {
        case string(String)
        case integer(Int)
        case array([Value])
        case error(String)
        case null
    }

    /// The next whole reply, waiting for it.
    func reply() throws -> Value {
        let deadline = ContinuousClock.now + stream.timeout
        while true {
            if let value = parse() { return value }
            append(try stream.read(until: deadline, what: "a Redis reply"))
        }
    }

    /// Every whole reply that has arrived, without waiting.
    func availableReplies() throws -> [Value] {
        append(try stream.readAvailable())
        var values: [Value] = []
        while let value = parse() { values.append(value) }
        return values
    }

    /// Hands the payload of every whole pub/sub `message` that has arrived to `body`, without waiting; other
    /// replies are parsed and dropped. A message is read in place from the buffer (one string per message, as the
    /// memo client's one content string per change), since the client shares the cores with the server.
    func availableMessages(_ body: (String) -> Void) throws {
        compact()
        try stream.readAvailable(appendingTo: &buffer)
        while index < buffer.count {
            if let (payload, end) = message(at: index) {
                body(payload)
                index = end
            } else if parse() == nil {
                return
            }
        }
    }

    /// A pub/sub message (`*3`, then the bulk strings `message`, the channel and the payload) that lies whole at
    /// `start`: its payload and where it ends; nil for anything else or a partial one.
    private func message(at start: Int) -> (payload: String, end: Int)? {
        buffer.withUnsafeBufferPointer { bytes -> (payload: String, end: Int)? in
            var at = start
            guard let count = Self.header(bytes, UInt8(ascii: "*"), &at), count == 3 else { return nil }
            var payload = 0..<0
            for item in 0..<3 {
                guard let length = Self.header(bytes, UInt8(ascii: "$"), &at), at + length + 2 <= bytes.count
                else { return nil }
                if item == 0 {
                    guard length == 7, memcmp(bytes.baseAddress! + at, "message", 7) == 0 else { return nil }
                }
                payload = at..<(at + length)
                at += length + 2
            }
            return (String(decoding: UnsafeBufferPointer(rebasing: bytes[payload]), as: UTF8.self), at)
        }
    }

    /// Reads `type` and a decimal count ended by CRLF at `at`, moving past them.
    private static func header(_ bytes: UnsafeBufferPointer<UInt8>, _ type: UInt8, _ at: inout Int) -> Int? {
        guard at < bytes.count, bytes[at] == type else { return nil }
        var cursor = at + 1
        var value = 0
        while cursor < bytes.count, bytes[cursor] >= UInt8(ascii: "0"), bytes[cursor] <= UInt8(ascii: "9") {
            value = value * 10 + Int(bytes[cursor] - UInt8(ascii: "0"))
            cursor += 1
        }
        guard cursor > at + 1, cursor + 1 < bytes.count, bytes[cursor] == 13, bytes[cursor + 1] == 10 else {
            return nil
        }
        at = cursor + 2
        return value
    }

    private func append(_ bytes: [UInt8]) {
        compact()
        buffer += bytes
    }

    private func compact() {
        if index > 0, index == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            index = 0
        }
    }

    /// Parses one value at `index`, or returns nil (consuming nothing) when it is not all there.
    private func parse() -> Value? {
        var cursor = index
        guard let value = parseValue(&cursor) else { return nil }
        index = cursor
        return value
    }

    private func line(_ cursor: inout Int) -> String? {
        var end = cursor
        while end + 1 < buffer.count {
            if buffer[end] == 13, buffer[end + 1] == 10 {
                let text = String(decoding: buffer[cursor..<end], as: UTF8.self)
                cursor = end + 2
                return text
            }
            end += 1
        }
        return nil
    }

    private func parseValue(_ cursor: inout Int) -> Value? {
        guard cursor < buffer.count else { return nil }
        let type = buffer[cursor]
        var at = cursor + 1
        guard let head = line(&at) else { return nil }
        switch type {
        case UInt8(ascii: "+"):
            cursor = at
            return .string(head)
        case UInt8(ascii: "-"):
            cursor = at
            return .error(head)
        case UInt8(ascii: ":"):
            cursor = at
            return .integer(Int(head) ?? 0)
        case UInt8(ascii: "$"):
            let length = Int(head) ?? -1
            if length < 0 {
                cursor = at
                return .null
            }
            guard at + length + 2 <= buffer.count else { return nil }
            let text = String(decoding: buffer[at..<(at + length)], as: UTF8.self)
            cursor = at + length + 2
            return .string(text)
        case UInt8(ascii: "*"):
            let count = Int(head) ?? -1
            if count < 0 {
                cursor = at
                return .null
            }
            var items: [Value] = []
            for _ in 0..<count {
                guard let item = parseValue(&at) else { return nil }
                items.append(item)
            }
            cursor = at
            return .array(items)
        default:
            cursor = buffer.count
            return .error("unexpected RESP type byte \(type)")
        }
    }
}

/// `memo-bench redis-fanout` and `memo-bench redis-connections`: the same shapes as `fanout` and `connections`,
/// against Redis over TLS, with the same client machinery so that the two compare.
struct RedisBench {
    static func fanout(_ arguments: inout Arguments) throws {
        let bench = try FanoutBench(&arguments)
        let target = bench.target
        raiseDescriptorLimit()
        let context = try ProbeConnection.context(for: target.identity)
        let address = try target.address()
        var subs: [RedisConnection] = []
        for _ in 0..<bench.subscribers {
            let connection = try RedisConnection(address: address, context: context)
            try connection.send(["SUBSCRIBE", "memo"])
            _ = try connection.reply()
            subs.append(connection)
        }
        let publisher = UncheckedBox(try RedisConnection(address: address, context: context))
        let expected = bench.changes
        let all = subs.map { UncheckedBox($0) }
        let latencies = all.map { _ in UncheckedBox(LatencyTable(changes: expected)) }
        let cpuBefore = target.serverCPUSeconds()
        let deadline = ContinuousClock.now + .seconds(Double(bench.changes) / Double(bench.rate) + 30)
        let done = Recorder<(any Error)?>()
        let pace = 1.0 / Double(bench.rate)
        Thread.detachNewThread {
            do {
                let start = Date()
                for index in 0..<expected {
                    let wait = start.addingTimeInterval(Double(index) * pace).timeIntervalSinceNow
                    if wait > 0 { Thread.sleep(forTimeInterval: wait) }
                    try publisher.value.send(["PUBLISH", "memo", "\(index) \(monotonicNanos())"])
                    _ = try publisher.value.availableReplies()
                }
                done.record(nil)
            } catch {
                done.record(error)
            }
        }
        let errors = pollConnections(
            count: all.count, threads: 2, descriptor: { all[$0].value.stream.socket.fileDescriptor },
            readable: { index, woke in
                let table = latencies[index].value
                try all[index].value.availableMessages { payload in
                    guard let (sequence, sent) = LatencyTable.stamp(payload) else { return }
                    let at = sent <= woke ? woke : monotonicNanos()  // sent after poll returned: timed at its read
                    table.record(sequence, Double(at - sent) / 1e6)
                }
                return table.count >= expected || all[index].value.stream.peerClosed
            }, deadline: deadline)
        if let error = done.waitFor(1).first ?? nil { throw error }
        if let error = errors.first { throw error }
        let cpuAfter = target.serverCPUSeconds()
        let result = FanoutResult(
            changes: expected, latencies: latencies.map(\.value),
            cpuSeconds: cpuAfter.flatMap { a in cpuBefore.map { a - $0 } })
        result.report(json: bench.json, label: "redis-fanout", subscribers: all.count, changes: expected,
                      rate: bench.rate)
    }

    static func connections(_ arguments: inout Arguments) throws {
        let bench = try ConnectionsBench(&arguments)
        let target = bench.target
        raiseDescriptorLimit()
        let context = try ProbeConnection.context(for: target.identity)
        let address = try target.address()
        let before = target.serverRSS()
        let clock = ContinuousClock()
        let started = clock.now
        var connections: [RedisConnection] = []
        for _ in 0..<bench.count {
            let connection = try RedisConnection(address: address, context: context)
            try connection.send(["PING"])
            _ = try connection.reply()
            connections.append(connection)
        }
        let openSeconds = (clock.now - started).milliseconds / 1000
        Thread.sleep(forTimeInterval: bench.hold)
        let after = target.serverRSS()
        ConnectionsBench.report(
            label: "redis-connections", count: bench.count, seconds: openSeconds, before: before, after: after,
            json: bench.json)
        withExtendedLifetime(connections) {}
    }
}

