import Foundation
import MemoCLI

let usage = """
    usage: memo-bench [MODE] [options]

    With no mode: requests against a server, shaped like redis-benchmark (memo-bench --help-requests).
    Modes:
      store        creates per second straight into a store (no network): group commit at work
      connections  N idle TLS connections held open; the server's memory per connection
      handshakes   full TLS handshakes per second
      fanout       S subscribers, K changes at R per second: delivery latency and server CPU per delivery
      client       the front end with N memos mirrored: time per remote change and per filter keystroke
      keystroke    the real front end in a pseudo-terminal: key-to-screen latency while a save waits on a
                   stopped server
      snapshot     time until a fresh mirror of an N-memo store is ready
      large        a million-memo SQLite store: server start, server memory, a fresh mirror, a full list
      redis-fanout, redis-connections   the same shapes against Redis over TLS (bench/compare.sh)

    memo-bench MODE --help describes a mode's options.
    """

var arguments = Arguments(Array(CommandLine.arguments.dropFirst()))
let mode = arguments.command()
if arguments.flag("--help-requests") {
    print(RequestBench.help)
    exit(0)
}
let wantsHelp = arguments.flag("--help", "-h")
do {
    switch mode {
    case "store":
        if wantsHelp {
            print(StoreBench.help)
            exit(0)
        }
        try await StoreBench(&arguments).run()
    case "connections":
        if wantsHelp {
            print(ConnectionsBench.help)
            exit(0)
        }
        try ConnectionsBench(&arguments).run()
    case "handshakes":
        if wantsHelp {
            print(HandshakesBench.help)
            exit(0)
        }
        try HandshakesBench(&arguments).run()
    case "fanout":
        if wantsHelp {
            print(FanoutBench.help)
            exit(0)
        }
        try FanoutBench(&arguments).run()
    case "redis-fanout", "redis-connections":
        if wantsHelp {
            print(RedisBench.help)
            exit(0)
        }
        if mode == "redis-fanout" { try RedisBench.fanout(&arguments) } else { try RedisBench.connections(&arguments) }
    case "client":
        if wantsHelp {
            print(ClientScaleBench.help)
            exit(0)
        }
        try await ClientScaleBench(&arguments).run()
    case "keystroke":
        if wantsHelp {
            print(KeystrokeBench.help)
            exit(0)
        }
        try KeystrokeBench(&arguments).run()
    case "snapshot":
        if wantsHelp {
            print(SnapshotBench.help)
            exit(0)
        }
        try await SnapshotBench(&arguments).run()
    case "large":
        if wantsHelp {
            print(LargeStoreBench.help)
            exit(0)
        }
        try await LargeStoreBench(&arguments).run()
    case nil where wantsHelp:
        print(usage + "\n\n" + RequestBench.help)
    case nil:
        try RequestBench(&arguments).run()
    default:
        throw UsageError(mode.map { "unknown mode '\($0)'" } ?? "missing mode")
    }
} catch let error as UsageError {
    FileHandle.standardError.write(Data("memo-bench: \(error)\n\(usage)\n".utf8))
    exit(2)
} catch {
    FileHandle.standardError.write(Data("memo-bench: \(error)\n".utf8))
    exit(1)
}
