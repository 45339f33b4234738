// swift-tools-version:6.0
import PackageDescription

// Data flow, one target per concern:
// bytes -> frames -> messages (MemoWire) -> store (MemoStore, MemoSQLite, MemoPostgres) -> subject (MemoModel)
// TLS (MemoTLS; its certificate authority in MemoPKI) and the epoll event loop (MemoNet) carry the bytes; the executables only wire parts together.
// MemoModel holds the values and protocols everything shares (memo, change, errors, limits, the table, the
// subject); the pieces that run (the stores' shared core and writer thread, logs and traces) are modules of
// their own, so that code which only needs the model links nothing else.
// The modules on the server's per-request path are built without Swift's dynamic exclusivity checks in release
// builds. Why: `swift_beginAccess`/`swift_endAccess` on class properties and loop-bound values cost about 3,900
// of the 31,000 instructions of a create on the event loops (callgrind; BENCHMARKS.md). Why it is safe: the
// dynamic check keeps a per-thread set of accesses, so what it catches is an overlapping access within one
// thread (a callback that mutates a property its caller is mutating), not a race; these types are confined to
// one event loop thread (connections, sessions, the record layer) or to a lock, the static checks still run in
// every build, and debug builds (which `swift test` and `.ci/run` use for the test suite) keep the dynamic
// checks, so an overlapping access introduced later fails the tests instead of passing silently. memo-bench is
// built the same way: its clients share the cores with the server they measure (each connection's driver is
// confined to one thread), and `redis-benchmark`, which it is compared with, pays no such checks.
// SwiftPM refuses `unsafeFlags` in a package another package depends on, so the package offers no library
// product: its products are the four programs, and its modules are for them and its tests.
let hotPathSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))
]

// The model's generic code (the subject, its queues) runs on every change in the stores and the server, which are
// other modules: without cross-module optimization it ran there unspecialised, looking up the subject's metadata
// on each send (the cost is in BENCHMARKS.md, "Instruction counts behind the code's shape").
let modelSettings: [SwiftSetting] = [
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release))
]

// memo-client is started once per memo by scripts, so its start counts (BENCHMARKS.md, "A script's command"). In
// release builds it links the Swift runtime, Foundation and Dispatch statically: the dynamic loader then maps
// 6 libraries instead of 20 and does not resolve the Swift libraries' symbols, which halved `--version` (9.1 ->
// 4.5 ms CPU). `-static-stdlib` is also a compile flag because the static Foundation's autolink entries (ICU and
// its helpers) come from compiling against it. lld, not gold: gold repeats glibc's link-time warning about the
// mktemp in the static Foundation, and a build shows no warnings. The executable stays position-independent, so
// its image is placed at a random address like every library's: the ~76,000 relative relocations a static Swift
// runtime brings are packed (`-z pack-relative-relocs`, glibc 2.36's DT_RELR), which gets a third of what
// `-no-pie` would (measured 4.20 against 3.12-4.69 ms CPU) without giving up address randomisation for ~0.5 ms.
// libstdc++ (which the static Swift runtime needs) and libgcc are linked in too: the driver's `-lstdc++` finds the
// linker script in Linking/static-libstdc++ first, which names the static archive (`-Xlinker -Bstatic -lstdc++` came
// after the driver's own `-lstdc++` on the link line, and lld kept the shared one), and `-static-libgcc` makes the
// driver link libgcc_eh's unwinder in place of libgcc_s. The loader then maps 4 libraries instead of 6 and skips
// libstdc++'s 4,303 symbol relocations: `--version` 7.88 -> 5.88 M instructions, a resumed `add` 26.84 -> 24.82 M
// (callgrind; BENCHMARKS.md, "libstdc++ linked in"). OpenSSL stays shared, so Debian's security updates reach it.
// The sections a start touches come first in .text and .bss (Linking/memo-client.order, written by
// Linking/start-order.sh): the start reads and zeroes fewer pages, `--version` 602 -> 543 page faults and a resumed
// `add` 809 -> 740, about 0.3 ms less CPU for `--version` (BENCHMARKS.md, "The start's pages"). A name the file
// lists and the link lacks is skipped silently, so a stale file costs part of the gain, not the build.
// Debug builds, which the tests run, stay dynamic.
let clientStartupSwiftSettings: [SwiftSetting] = [.unsafeFlags(["-static-stdlib"], .when(configuration: .release))]
let clientStartupLinkerSettings: [LinkerSetting] = [
    .unsafeFlags(
        [
            "-static-stdlib", "-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs",
            "-L", Context.packageDirectory + "/Linking/static-libstdc++", "-Xclang-linker", "-static-libgcc",
            "-Xlinker", "--symbol-ordering-file=" + Context.packageDirectory + "/Linking/memo-client.order",
            "-Xlinker", "--no-warn-symbol-ordering",
        ],
        .when(configuration: .release))
]

let package = Package(
    name: "memo",
    products: [
        .executable(name: "memo-server", targets: ["memo-server"]),
        .executable(name: "memo-client", targets: ["memo-client"]),
        .executable(name: "memo-bench", targets: ["memo-bench"]),
        .executable(name: "memo-torture", targets: ["memo-torture"]),
    ],
    targets: [
        .systemLibrary(
            name: "CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "openssl",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CPostgres",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // The write(2) loop every writer shares (EINTR, EAGAIN, short writes), and files fsynced whole or not at all.
        .target(name: "MemoSystem"),
        // Line diffs (`diff -u` text) and three-way line merges (`git merge-file`'s rules), on UTF-8 bytes; the
        // standard library only.
        .target(name: "MemoDiff"),
        // The model: memo, change, errors, limits, dates, the storage protocols, the table and its write planner,
        // the subject. Values and protocols only: no thread, no file, no clock of its own. The planner merges a
        // stale update with MemoDiff (`StaleUpdate`).
        .target(name: "MemoModel", dependencies: ["MemoDiff"], swiftSettings: hotPathSettings + modelSettings),
        // What a server tells its operators: log records (level, format, event, fields) and the stage trace.
        .target(name: "MemoDiagnostics", dependencies: ["MemoModel"], swiftSettings: hotPathSettings),
        // The machinery of the stores: the shared core (table, history, watchers under one lock), the memory
        // store, and the writer thread's queue the durable stores share.
        .target(name: "MemoStore", dependencies: ["MemoModel", "MemoDiagnostics"], swiftSettings: hotPathSettings),
        .target(
            name: "MemoSQLite", dependencies: ["MemoModel", "MemoStore", "CSQLite", "CMemoLinux"],
            swiftSettings: hotPathSettings),
        .target(
            name: "MemoPostgres", dependencies: ["MemoModel", "MemoStore", "MemoDiagnostics", "CPostgres", "CMemoLinux"]),
        .target(name: "MemoWire", dependencies: ["MemoModel"], swiftSettings: hotPathSettings),
        .target(name: "MemoTLS", dependencies: ["COpenSSL", "MemoSystem"], swiftSettings: hotPathSettings),
        // The certificate authority `memo-server certs` runs: keys, certificates, the index and the revocation list
        // it writes. What a connection needs to load certificates and lists stays in MemoTLS.
        .target(name: "MemoPKI", dependencies: ["MemoTLS", "COpenSSL", "MemoSystem"]),
        // Linux calls Glibc's module leaves out, and wrappers for the GNU ones (its C file alone sets _GNU_SOURCE).
        // DWARF 4: valgrind 3.19 (Debian 12) gives up on this target's DWARF 5 ("Possibly corrupted debuginfo"), and
        // bench/instructions.sh runs memo-server under callgrind.
        .target(name: "CMemoLinux", cSettings: [.unsafeFlags(["-gdwarf-4"])]),
        .target(name: "MemoNet", dependencies: ["CMemoLinux"], swiftSettings: hotPathSettings),
        .target(name: "MemoCLI"),
        // Bytes between a non-blocking socket and TLS, shared by the server, the probe and the client.
        .target(
            name: "MemoTransport", dependencies: ["MemoTLS", "MemoNet", "MemoWire"], swiftSettings: hotPathSettings),
        .target(
            name: "MemoServer",
            dependencies: [
                "MemoSystem", "MemoModel", "MemoDiagnostics", "MemoWire", "MemoTLS", "MemoNet", "MemoTransport",
            ],
            swiftSettings: hotPathSettings),
        // The probe's TLS stream carries memo-bench's requests: built like the hot modules (its connections are
        // not Sendable, each used by one thread).
        .target(
            name: "MemoProbe", dependencies: ["MemoWire", "MemoTLS", "MemoNet", "MemoTransport"],
            swiftSettings: hotPathSettings),
        .target(name: "MemoText"),
        .target(
            name: "MemoClient",
            dependencies: ["MemoSystem", "MemoModel", "MemoWire", "MemoTLS", "MemoNet", "MemoTransport"]),
        // memo-client's command line and what it prints (parsing, JSON, tables, exit codes), tested without a process.
        .target(
            name: "MemoClientCLI",
            dependencies: [
                "MemoSystem", "MemoModel", "MemoText", "MemoCLI", "MemoNet", "MemoClient", "MemoTLS", "MemoWire",
                "MemoDiff",
            ]),
        // View models and navigation: no terminal code, so the compiler keeps escape sequences out of them.
        .target(name: "MemoViewModels", dependencies: ["MemoSystem", "MemoModel", "MemoText", "MemoNet", "MemoDiff"]),
        .target(name: "MemoTUI", dependencies: ["MemoSystem", "MemoModel", "MemoText", "MemoViewModels", "MemoNet"]),
        .executableTarget(
            name: "memo-server",
            dependencies: [
                "MemoModel", "MemoStore", "MemoDiagnostics", "MemoServer", "MemoSQLite", "MemoPostgres", "MemoTLS",
                "MemoPKI", "MemoNet", "MemoCLI", "MemoWire",
            ]),
        .executableTarget(
            name: "memo-client",
            dependencies: [
                "MemoSystem", "MemoModel", "MemoWire", "MemoClient", "MemoClientCLI", "MemoTUI", "MemoViewModels",
                "MemoCLI", "MemoTLS", "MemoNet",
            ],
            swiftSettings: clientStartupSwiftSettings, linkerSettings: clientStartupLinkerSettings),
        .executableTarget(
            name: "memo-bench",
            dependencies: [
                "MemoModel", "MemoStore", "MemoDiagnostics", "MemoWire", "MemoSQLite", "MemoProbe", "MemoClient",
                "MemoTLS", "MemoNet", "MemoCLI", "MemoTUI", "MemoViewModels", "CMemoLinux",
            ],
            swiftSettings: hotPathSettings),
        .executableTarget(
            name: "memo-torture",
            dependencies: [
                "MemoModel", "MemoProbe", "MemoTLS", "MemoPKI", "MemoNet", "MemoWire", "MemoCLI", "MemoSQLite",
            ]),
        // Tests: one target per module (`swift test --filter MemoNetTests` runs MemoNet's), one for whole
        // processes (the built binaries, tmux, other TLS stacks), and the fixtures they share, one target per
        // fixture so that a module's tests link only what they use (MemoModelTests links no store, TLS, server
        // or PostgreSQL code). MemoTestSupport: what needs none of the package (temporary folders, polling,
        // deadlines, recorders, running a built binary); TLSTestSupport: certificates and in-memory handshakes;
        // PostgresTestSupport: a throwaway PostgreSQL cluster; StoreTestSupport: the stores every storage test
        // runs against; ServerTestSupport: test servers in process and as processes, probes, proxies, HTTP;
        // ClientTestSupport: the client library against a test server, memo-client as a process.
        .target(name: "MemoTestSupport", path: "Tests/MemoTestSupport"),
        .target(name: "TLSTestSupport", dependencies: ["MemoTLS", "MemoPKI"], path: "Tests/TLSTestSupport"),
        .target(name: "PostgresTestSupport", dependencies: ["MemoTestSupport"], path: "Tests/PostgresTestSupport"),
        .target(
            name: "StoreTestSupport",
            dependencies: [
                "MemoModel", "MemoStore", "MemoSQLite", "MemoPostgres", "MemoTestSupport", "PostgresTestSupport",
            ],
            path: "Tests/StoreTestSupport"),
        .target(
            name: "ServerTestSupport",
            dependencies: [
                "MemoModel", "MemoStore", "MemoWire", "MemoTLS", "MemoPKI", "MemoNet", "MemoServer", "MemoProbe",
                "MemoTestSupport",
            ],
            path: "Tests/ServerTestSupport"),
        .target(
            name: "ClientTestSupport",
            dependencies: ["MemoModel", "MemoNet", "MemoServer", "MemoClient", "MemoTestSupport", "ServerTestSupport"],
            path: "Tests/ClientTestSupport"),
        .testTarget(name: "MemoSystemTests", dependencies: ["MemoSystem"]),
        .testTarget(name: "MemoModelTests", dependencies: ["MemoModel", "MemoTestSupport"]),
        .testTarget(name: "MemoDiffTests", dependencies: ["MemoDiff", "MemoTestSupport"]),
        .testTarget(
            name: "MemoStoreTests",
            dependencies: ["MemoModel", "MemoStore", "MemoSQLite", "MemoTestSupport", "StoreTestSupport"],
            // A file made by memo-server 1.0.0, read by path (#filePath) and copied before each test.
            exclude: ["Fixtures"]),
        .testTarget(name: "MemoWireTests", dependencies: ["MemoModel", "MemoWire", "MemoTestSupport"]),
        .testTarget(
            name: "MemoTLSTests",
            dependencies: ["MemoTLS", "MemoPKI", "COpenSSL", "MemoTestSupport", "TLSTestSupport"]),
        .testTarget(
            name: "MemoPKITests",
            dependencies: ["MemoPKI", "MemoTLS", "COpenSSL", "MemoTestSupport", "TLSTestSupport"]),
        .testTarget(name: "MemoNetTests", dependencies: ["MemoNet", "CMemoLinux", "MemoTestSupport"]),
        .testTarget(
            name: "MemoTransportTests",
            dependencies: ["MemoTransport", "MemoTLS", "MemoNet", "MemoWire", "MemoTestSupport", "TLSTestSupport"]),
        .testTarget(
            name: "MemoServerTests",
            dependencies: [
                "MemoServer", "MemoModel", "MemoStore", "MemoDiagnostics", "MemoWire", "MemoSQLite", "MemoPostgres",
                "MemoProbe", "MemoPKI", "MemoTLS", "MemoNet", "MemoTestSupport", "TLSTestSupport", "PostgresTestSupport",
                "ServerTestSupport", "ClientTestSupport",
            ],
            // A pg_dump of a database made by memo-server 1.0.0, read by path (#filePath).
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "MemoClientTests",
            dependencies: [
                "MemoClient", "MemoClientCLI", "MemoModel", "MemoStore", "MemoWire", "MemoTLS", "MemoNet", "MemoServer",
                "MemoTestSupport", "TLSTestSupport", "ServerTestSupport", "ClientTestSupport",
            ]
        ),
        .testTarget(
            name: "MemoClientCLITests",
            dependencies: [
                "MemoClientCLI", "MemoClient", "MemoCLI", "MemoModel", "MemoText", "MemoTLS", "MemoWire",
                "MemoTestSupport",
            ]
        ),
        .testTarget(
            name: "MemoTUITests",
            dependencies: [
                "MemoTUI", "MemoViewModels", "MemoModel", "MemoStore", "MemoText", "MemoClient", "MemoNet",
                "MemoTestSupport", "ServerTestSupport", "ClientTestSupport",
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "MemoModel", "MemoStore", "MemoSQLite", "MemoWire", "MemoTLS", "MemoPKI", "MemoNet", "MemoServer",
                "MemoProbe", "MemoClient", "MemoTUI", "MemoViewModels", "MemoText", "MemoClientCLI", "MemoTestSupport",
                "TLSTestSupport", "PostgresTestSupport", "StoreTestSupport", "ServerTestSupport", "ClientTestSupport",
                // GrayIdleStopTests calls the gray run's IdleStop itself; BenchRequestClientTests memo-bench's
                // request batch and answer checks.
                "memo-torture", "memo-bench",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

// Every target imports what it uses: a member of a module that is only reachable through another import is an
// error (SE-0444), so the declared dependencies above are the real graph.
for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [.enableUpcomingFeature("MemberImportVisibility")]
}
