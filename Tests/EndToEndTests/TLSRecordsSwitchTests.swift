import Foundation
import MemoNet
import MemoServer
import MemoTLS
import MemoTestSupport
import ServerTestSupport
import Testing

/// The record-layer switch from the command line: `memo-server serve --tls-records own|openssl` and
/// `MEMO_TLS_RECORDS=own|openssl` for memo-client.
@Suite("TLS record layer switch: --tls-records and MEMO_TLS_RECORDS")
struct TLSRecordsSwitchTests {
    /// Runs a built tool with `environment` added to ours. - Returns: status, stdout, stderr.
    static func run(_ tool: String, _ arguments: [String], environment: [String: String]) throws
        -> (Int32, String, String)
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: builtExecutable(tool))
        process.arguments = arguments
        // MEMO_EXPIRY_WARNING=0: the test certificates live a day (see runTool).
        process.environment = ProcessInfo.processInfo.environment
            .merging(["MEMO_EXPIRY_WARNING": "0"].merging(environment) { $1 }) { $1 }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }

    @Test func anUnknownRecordLayerIsAUsageError() throws {
        let (serverStatus, _, serverErr) = try Self.run(
            "memo-server", ["serve", "--tls-records", "boringssl"], environment: [:])
        #expect(serverStatus == 2)
        #expect(serverErr.contains("--tls-records takes own or openssl, not 'boringssl'"), "\(serverErr)")
        let (clientStatus, _, clientErr) = try Self.run(
            "memo-client", ["list"], environment: ["MEMO_TLS_RECORDS": "boringssl"])
        #expect(clientStatus == 2)
        #expect(clientErr.contains("MEMO_TLS_RECORDS takes own or openssl, not 'boringssl'"), "\(clientErr)")
    }

    /// The startup line names the record layer, and that the wiping allocator went in: OpenSSL takes one only
    /// before its first allocation, so this fails if anything in the server used OpenSSL before main installed it.
    @Test func theServerSaysWhichRecordLayerAndThatFreedOpenSSLMemoryIsWiped() throws {
        let directory = try TemporaryDirectory()
        let server = try ServerProcess(
            arguments: ["--listen", "127.0.0.1:0", "--store", "memory", "--certs", directory.path + "/certs",
                        "--tls-records", "openssl"],
            directory: directory)
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        #expect(server.log.contains("TLS records: openssl; freed OpenSSL memory wiped: yes"), "\(server.log)")
    }

    /// Each client layer against each server layer, through the built client.
    @Test(arguments: [TLSRecordLayerChoice.handOff, .openSSL], ["own", "openssl"])
    func theClientWorksWithEitherLayerOnEitherSide(server records: TLSRecordLayerChoice, client: String) throws {
        let server = try TestServer(records: records)
        defer { server.stop() }
        let certs = server.certificates.path
        let (status, out, err) = try Self.run(
            "memo-client",
            ["--server", server.address.description, "--certs", certs, "add", "through \(client)"],
            environment: ["MEMO_TLS_RECORDS": client])
        #expect(status == 0, "\(err)")
        #expect(out.contains("through \(client)"), "\(out)")
    }
}
