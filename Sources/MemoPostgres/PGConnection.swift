internal import CPostgres
import Foundation
import MemoCore

/// An error from libpq or from PostgreSQL, with the server's SQLSTATE when it sent one.
struct PGError: Error, CustomStringConvertible {
    let message: String
    /// The SQLSTATE code ("40001"), or nil when the error came from libpq itself (a broken connection).
    let sqlState: String?
    /// True when the connection is gone: the statement's outcome is unknown and the connection must be replaced.
    let connectionLost: Bool

    var description: String { message }
}

/// One libpq connection.
///
/// `@unchecked Sendable` because it moves once: the store opens it, then hands it to its writer or feed thread,
/// which alone calls it from then on (libpq connections must not be used by two threads at a time).
final class PGConnection: @unchecked Sendable {
    private let handle: OpaquePointer

    /// Connects with `uri` (any libpq connection string or URI) on top of `defaults`, which the URI overrides.
    /// - Throws: `PGError` with libpq's message.
    init(uri: String, defaults: [(String, String)]) throws(PGError) {
        let keywords = defaults.map(\.0) + ["dbname"]
        let values = defaults.map(\.1) + [uri]
        let connection = withCStrings(keywords) { keys in
            withCStrings(values) { vals in PQconnectdbParams(keys, vals, 1) }
        }
        guard let connection else {
            throw PGError(message: "cannot connect: out of memory", sqlState: nil, connectionLost: true)
        }
        // Checked before `handle` is set: a throw after that would run deinit and finish the connection twice.
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.trimmed(PQerrorMessage(connection))
            PQfinish(connection)
            throw PGError(message: message, sqlState: nil, connectionLost: true)
        }
        handle = connection
        // PostgreSQL's notices (a backend terminated by an administrator) are not written to stderr: the store
        // logs each connection transition itself.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
    }

    deinit {
        PQfinish(handle)
    }

    /// False once libpq has seen the connection break.
    var isHealthy: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The socket, for waiting on notifications with poll.
    var socket: Int32 { PQsocket(handle) }

    /// The backend's process id, which `pg_terminate_backend` takes.
    var backendPID: Int32 { PQbackendPID(handle) }

    /// Runs SQL (several statements allowed) and returns the last result.
    @discardableResult
    func execute(_ sql: String) throws(PGError) -> PGResult {
        try check(PQexec(handle, sql))
    }

    /// Sends SQL (several statements allowed) without waiting for its results: `finish` collects them, and no
    /// other statement may run on this connection before it.
    func send(_ sql: String) throws(PGError) {
        if PQsendQuery(handle, sql) == 0 {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
    }

    /// Waits for every result of the SQL `send` sent; throws the first error among them.
    func finish() throws(PGError) {
        var failure: PGError?
        while let result = PQgetResult(handle) {
            do throws(PGError) {
                _ = try check(result)
            } catch {
                failure = failure ?? error
            }
        }
        if let failure { throw failure }
    }

    /// Runs one statement with parameters in one round trip. A nil parameter is SQL NULL; `Data` parameters are
    /// sent in binary (bytea), strings in text. Results come back in binary.
    func execute(_ sql: String, _ parameters: [PGParameter]) throws(PGError) -> PGResult {
        let count = parameters.count
        var lengths = [Int32](repeating: 0, count: count)
        var formats = [Int32](repeating: 0, count: count)
        var buffers: [UnsafeMutableRawPointer?] = []
        buffers.reserveCapacity(count)
        defer { for buffer in buffers { free(buffer) } }
        for (index, parameter) in parameters.enumerated() {
            switch parameter {
            case .null:
                buffers.append(nil)
            case .text(let text):
                buffers.append(UnsafeMutableRawPointer(strdup(text)))
            case .binary(let bytes):
                let buffer = malloc(max(bytes.count, 1))!
                bytes.withUnsafeBytes { raw in
                    if let base = raw.baseAddress { buffer.copyMemory(from: base, byteCount: raw.count) }
                }
                buffers.append(buffer)
                lengths[index] = Int32(bytes.count)
                formats[index] = 1
            }
        }
        let result = buffers.withUnsafeBufferPointer { pointers in
            pointers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { values in
                PQexecParams(handle, sql, Int32(count), nil, values.baseAddress, lengths, formats, 1)
            }
        }
        return try check(result)
    }

    /// Reads what arrived on the socket and returns the payloads of the notifications it held.
    func notifications() throws(PGError) -> [String] {
        if PQconsumeInput(handle) == 0 {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: true)
        }
        var payloads: [String] = []
        while let notify = PQnotifies(handle) {
            payloads.append(String(cString: notify.pointee.extra))
            PQfreemem(notify)
        }
        return payloads
    }

    private func check(_ result: OpaquePointer?) throws(PGError) -> PGResult {
        guard let result else {
            throw PGError(message: Self.trimmed(PQerrorMessage(handle)), sqlState: nil, connectionLost: !isHealthy)
        }
        let status = PQresultStatus(result)
        if status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK { return PGResult(result) }
        let message = Self.trimmed(PQresultErrorMessage(result))
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        PQclear(result)
        throw PGError(
            message: message.isEmpty ? Self.trimmed(PQerrorMessage(handle)) : message, sqlState: state,
            connectionLost: !isHealthy)
    }

    private static func trimmed(_ text: UnsafePointer<CChar>?) -> String {
        guard let text else { return "unknown error" }
        // libpq's messages run over several lines (DETAIL, HINT, CONTEXT, one line per address tried): one line
        // here, so that a log line or an error frame carrying it stays one line.
        return singleLine(String(cString: text).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

/// A statement parameter.
enum PGParameter {
    case null
    case text(String)
    case binary([UInt8])
}

/// A result held until it is freed; columns are read in binary format.
final class PGResult {
    private let handle: OpaquePointer

    fileprivate init(_ handle: OpaquePointer) {
        self.handle = handle
    }

    deinit {
        PQclear(handle)
    }

    var rowCount: Int { Int(PQntuples(handle)) }

    func isNull(_ row: Int, _ column: Int) -> Bool {
        PQgetisnull(handle, Int32(row), Int32(column)) != 0
    }

    func bytes(_ row: Int, _ column: Int) -> UnsafeRawBufferPointer {
        let length = Int(PQgetlength(handle, Int32(row), Int32(column)))
        return UnsafeRawBufferPointer(start: PQgetvalue(handle, Int32(row), Int32(column)), count: length)
    }

    /// A big-endian integer column (int2, int4 or int8).
    func integer(_ row: Int, _ column: Int) -> Int64 {
        var value: Int64 = 0
        for byte in bytes(row, column) { value = value << 8 | Int64(byte) }
        let width = bytes(row, column).count * 8
        if width < 64 { value = (value << (64 - width)) >> (64 - width) }  // sign-extends a narrower column
        return value
    }

    func uuid(_ row: Int, _ column: Int) -> UUID {
        let raw = bytes(row, column)
        var value = UUID().uuid
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw.prefix(16))) }
        return UUID(uuid: value)
    }

    func text(_ row: Int, _ column: Int) -> String {
        String(decoding: bytes(row, column), as: UTF8.self)
    }
}

/// Calls `body` with a NULL-terminated array of C strings that lives for the call.
private func withCStrings<Result>(
    _ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>) -> Result
) -> Result {
    let copies = strings.map { strdup($0) } + [nil]
    defer { for copy in copies { free(copy) } }
    return copies.map { UnsafePointer($0) }.withUnsafeBufferPointer { body($0.baseAddress!) }
}
