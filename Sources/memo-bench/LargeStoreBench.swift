import CMemoLinux
import Foundation
import MemoCLI
import MemoClient
import MemoModel
import MemoProbe
import MemoSQLite
import MemoStore
import MemoWire
import Synchronization

/// `memo-bench large`: what a store of a million memos costs: server start, server memory, a fresh mirror and a
/// full `memo-client list`, each with the built binaries as a user runs them. The store is a SQLite file this
/// bench fills, or a PostgreSQL database the caller filled (`--postgres`, `bench/large-postgres.sh`).
struct LargeStoreBench {
    var memos = 1_000_000
    var size = 100
    var directory: String?
    var postgres: String?
    var runs = 3
    var json = false

    init(_ arguments: inout Arguments) throws(UsageError) {
        memos = try arguments.integer("--memos", in: 1...100_000_000) ?? memos
        size = try arguments.integer("--size", in: 0...MemoLimits.maxContentBytes) ?? size
        directory = try arguments.option("--dir")
        postgres = try arguments.option("--postgres")
        runs = try arguments.integer("--runs", in: 1...100) ?? runs
        json = arguments.flag("--json")
        try arguments.finish()
    }

    func run() async throws {
        let folder = directory ?? NSTemporaryDirectory() + "memo-bench-large-\(UUID().uuidString)"
        defer { if directory == nil { try? FileManager.default.removeItem(atPath: folder) } }
        let path = folder + "/memos.sqlite"
        // A PostgreSQL database is filled by the caller; the mirror below checks that it holds the memos.
        let fillSeconds = postgres == nil ? try fill(path) : nil
        let store = postgres ?? "sqlite:" + path
        let binaries = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().path
        var start: [Double] = [], startCPU: [Double] = [], rss: [Int] = [], mirror: [Double] = [], list: [Double] = []
        var listBytes = 0
        var mirrorGrowth: [Int] = []
        for _ in 0..<runs {
            let server = try StartedServer(binary: binaries + "/memo-server", store: store, certs: folder + "/certs")
            defer { server.stop() }
            start.append(server.startMilliseconds)
            startCPU.append(server.startCPUMilliseconds)
            rss.append(server.rssKiB())
            let (mirrorTime, grown) = try await mirrorMilliseconds(server: server.address, certs: folder + "/certs")
            mirror.append(mirrorTime)
            mirrorGrowth.append(grown)
            let (milliseconds, bytes) = try listMilliseconds(binaries + "/memo-client", server.address, folder)
            list.append(milliseconds)
            listBytes = bytes
        }
        let content = Double(memos * size)
        // The first run's: a later mirror reuses what the first one's freed, which malloc may keep.
        let mirrorKiB = mirrorGrowth[0]
        let best = (start.min()!, rss.min()!, mirror.min()!, list.min()!)
        let middle = (median(start), median(rss), median(mirror), median(list))
        if json {
            print(String(format: "{\"op\":\"large\",\"memos\":%d,\"size\":%d,\"runs\":%d,\"start_ms\":%.1f,"
                         + "\"start_cpu_ms\":%.0f,\"rss_kib\":%d,\"rss_per_memo\":%.1f,"
                         + "\"rss_per_content_byte\":%.2f,\"mirror_ms\":%.1f,\"list_ms\":%.1f,\"list_bytes\":%d,"
                         + "\"start_ms_median\":%.1f,\"start_cpu_ms_median\":%.0f,\"rss_kib_median\":%d,"
                         + "\"mirror_ms_median\":%.1f,\"list_ms_median\":%.1f,\"mirror_rss_kib\":%d,"
                         + "\"mirror_rss_per_content_byte\":%.2f}",
                         memos, size, runs, best.0, startCPU.min()!, best.1,
                         Double(best.1 * 1024) / Double(memos), Double(best.1 * 1024) / content, best.2, best.3,
                         listBytes, middle.0, median(startCPU), middle.1, middle.2, middle.3, mirrorKiB,
                         Double(mirrorKiB * 1024) / content))
        } else {
            if let fillSeconds { print(String(format: "filled %d memos in %.1f s", memos, fillSeconds)) }
            print(String(format: "large: %d memos of %d bytes, best of %d runs (median in brackets)", memos, size,
                         runs))
            print(String(format: "  server start        %8.1f ms  (%.1f ms); %.0f ms of its CPU (%.0f ms)", best.0,
                         middle.0, startCPU.min()!, median(startCPU)))
            print(String(format: "  server RSS          %8.1f MiB  (%.1f MiB); %.0f bytes per memo, %.2f x content "
                         + "(%.2f x)", Double(best.1) / 1024, Double(middle.1) / 1024,
                         Double(best.1 * 1024) / Double(memos), Double(best.1 * 1024) / content,
                         Double(middle.1 * 1024) / content))
            print(String(format: "  snapshot to mirror  %8.1f ms  (%.1f ms)", best.2, middle.2))
            print(String(format: "  mirror RSS          %8.1f MiB  (first run); %.0f bytes per memo, %.2f x content",
                         Double(mirrorKiB) / 1024, Double(mirrorKiB * 1024) / Double(memos),
                         Double(mirrorKiB * 1024) / content))
            print(String(format: "  memo-client list    %8.1f ms  (%.1f ms); %d bytes to a pipe", best.3, middle.3,
                         listBytes))
        }
    }

    /// The middle run's figure (the upper middle for an even count).
    private func median<Value: Comparable>(_ values: [Value]) -> Value { values.sorted()[values.count / 2] }

    /// Creates memos in `path` until it holds `memos`; nil when it already did.
    private func fill(_ path: String) throws -> Double? {
        let store = try SQLiteStore(path: path)
        defer { store.close() }
        var missing = memos - (try store.storeState.read { $0.count })
        guard missing > 0 else { return nil }
        let clock = ContinuousClock()
        let started = clock.now
        let content = String(repeating: "m", count: size)
        var generator = BenchIDs()
        // A few full batches in flight, so the writer always has the next one waiting.
        let inFlight = DispatchSemaphore(value: 4)
        let failure = Mutex<MemoError?>(nil)
        while missing > 0 {
            let count = min(SQLiteStore.maxBatch, missing)
            let ops = (0..<count).map { _ in
                WriteOp.create(id: generator.uuid(), content: content, insertMicros: nil)
            }
            inFlight.wait()
            store.submit(ops) { results in
                for case .failure(let error) in results { failure.withLock { $0 = error } }
                inFlight.signal()
            }
            missing -= count
        }
        for _ in 0..<4 { inFlight.wait() }
        // libdispatch traps when a semaphore is freed below its initial value.
        for _ in 0..<4 { inFlight.signal() }
        if let error = failure.withLock({ $0 }) { throw error }
        return (clock.now - started).milliseconds / 1000
    }

    /// The time until a fresh mirror is ready, and what this process's resident memory grew by meanwhile (KiB):
    /// the mirror, its list and what the snapshot's reading left allocated. Measured from after a `malloc_trim`,
    /// so that memory freed earlier (the fill's store) and kept by malloc does not hide the growth.
    private func mirrorMilliseconds(server: String, certs: String) async throws -> (Double, Int) {
        malloc_trim(0)
        let before = residentKiB(of: "self") ?? 0
        var configuration = ClientConfiguration(server: server, certificatesDirectory: certs)
        configuration.requestTimeout = .seconds(120)
        let clock = ContinuousClock()
        let started = clock.now
        let client = try await MemoConnection.connect(configuration)
        defer { client.close() }
        let store = try RemoteStore(client: client)
        store.startMirror()
        try await store.waitUntilFresh(timeout: .seconds(300))
        let elapsed = (clock.now - started).milliseconds
        guard store.memoList().value?.count ?? 0 >= memos else {
            throw UsageError("the mirror holds fewer memos than the store")
        }
        return (elapsed, (residentKiB(of: "self") ?? before) - before)
    }

    /// `memo-client list` with stdout to a pipe that this process drains: the time until it exits, the bytes.
    private func listMilliseconds(_ binary: String, _ server: String, _ folder: String) throws -> (Double, Int) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["--server", server, "--certs", folder + "/certs", "--timeout", "300", "list"]
        let pipe = Pipe()
        process.standardOutput = pipe
        let clock = ContinuousClock()
        let started = clock.now
        try process.run()
        var bytes = 0
        while true {
            let chunk = pipe.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            bytes += chunk.count
        }
        process.waitUntilExit()
        let elapsed = (clock.now - started).milliseconds
        guard process.terminationStatus == 0 else {
            throw UsageError("memo-client list exited with \(process.terminationStatus)")
        }
        return (elapsed, bytes)
    }
}
