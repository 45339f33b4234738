// swift-tools-version:6.0
import PackageDescription

// Data flow, one target per concern:
// bytes -> frames -> messages (MemoWire) -> store (MemoCore, MemoSQLite, MemoPostgres) -> subject (MemoCore)
// TLS (MemoTLS; its certificate authority in MemoPKI) and the epoll event loop (MemoNet) carry the bytes; the executables only wire parts together.
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
        // The write(2) loop every writer shares (EINTR, EAGAIN, short writes).
        .target(name: "MemoSystem"),
        .target(name: "MemoCore", dependencies: ["MemoSystem"], swiftSettings: hotPathSettings),
        .target(
            name: "MemoSQLite", dependencies: ["MemoCore", "CSQLite", "CMemoLinux"], swiftSettings: hotPathSettings),
        .target(name: "MemoPostgres", dependencies: ["MemoCore", "CPostgres"]),
        .target(name: "MemoWire", dependencies: ["MemoCore"], swiftSettings: hotPathSettings),
        .target(name: "MemoTLS", dependencies: ["COpenSSL"], swiftSettings: hotPathSettings),
        // The certificate authority `memo-server certs` runs: keys, certificates, the index and the revocation list
        // it writes. What a connection needs to load certificates and lists stays in MemoTLS.
        .target(name: "MemoPKI", dependencies: ["MemoTLS", "COpenSSL", "MemoSystem"]),
        // Linux calls Glibc's module leaves out, and wrappers for the GNU ones (its C file alone sets _GNU_SOURCE).
        .target(name: "CMemoLinux"),
        .target(name: "MemoNet", dependencies: ["CMemoLinux"], swiftSettings: hotPathSettings),
        .target(name: "MemoCLI"),
        // Bytes between a non-blocking socket and TLS, shared by the server, the probe and the client.
        .target(
            name: "MemoTransport", dependencies: ["MemoTLS", "MemoNet", "MemoWire"], swiftSettings: hotPathSettings),
        .target(
            name: "MemoServer",
            dependencies: ["MemoSystem", "MemoCore", "MemoWire", "MemoTLS", "MemoNet", "MemoTransport"],
            swiftSettings: hotPathSettings),
        .target(name: "MemoProbe", dependencies: ["MemoWire", "MemoTLS", "MemoNet", "MemoTransport"]),
        .target(name: "MemoText"),
        .target(
            name: "MemoClient",
            dependencies: ["MemoCore", "MemoWire", "MemoTLS", "MemoNet", "MemoTransport"]),
        // memo-client's command line and what it prints (parsing, JSON, tables, exit codes), tested without a process.
        .target(
            name: "MemoClientCLI",
            dependencies: [
                "MemoSystem", "MemoCore", "MemoText", "MemoCLI", "MemoNet", "MemoClient", "MemoTLS", "MemoWire",
            ]),
        // View models and navigation: no terminal code, so the compiler keeps escape sequences out of them.
        .target(name: "MemoViewModels", dependencies: ["MemoSystem", "MemoCore", "MemoText", "MemoNet"]),
        .target(name: "MemoTUI", dependencies: ["MemoSystem", "MemoCore", "MemoText", "MemoViewModels", "MemoNet"]),
        .executableTarget(
            name: "memo-server",
            dependencies: [
                "MemoCore", "MemoServer", "MemoSQLite", "MemoPostgres", "MemoTLS", "MemoPKI", "MemoNet", "MemoCLI",
                "MemoWire",
            ]),
        .executableTarget(
            name: "memo-client",
            dependencies: [
                "MemoSystem", "MemoCore", "MemoWire", "MemoClient", "MemoClientCLI", "MemoTUI", "MemoViewModels",
                "MemoCLI", "MemoTLS", "MemoNet",
            ]),
        .executableTarget(
            name: "memo-bench",
            dependencies: [
                "MemoCore", "MemoWire", "MemoSQLite", "MemoProbe", "MemoClient", "MemoTLS", "MemoNet", "MemoCLI",
                "MemoTUI", "MemoViewModels",
            ],
            swiftSettings: hotPathSettings),
        .executableTarget(
            name: "memo-torture",
            dependencies: [
                "MemoCore", "MemoProbe", "MemoTLS", "MemoPKI", "MemoNet", "MemoWire", "MemoCLI", "MemoSQLite",
            ]),
        // Tests: one target per module (`swift test --filter MemoNetTests` runs MemoNet's), one for whole
        // processes (the built binaries, tmux, other TLS stacks), and the helpers several of them share.
        .target(
            name: "MemoTestSupport",
            dependencies: [
                "MemoCore", "MemoSQLite", "MemoPostgres", "MemoWire", "MemoTLS", "MemoPKI", "MemoNet", "MemoServer",
                "MemoProbe", "MemoClient",
            ],
            path: "Tests/MemoTestSupport"
        ),
        .testTarget(name: "MemoSystemTests", dependencies: ["MemoSystem"]),
        .testTarget(name: "MemoCoreTests", dependencies: ["MemoCore", "MemoTestSupport"]),
        .testTarget(
            name: "MemoStoreTests", dependencies: ["MemoCore", "MemoSQLite", "MemoTestSupport"]),
        .testTarget(name: "MemoWireTests", dependencies: ["MemoCore", "MemoWire", "MemoTestSupport"]),
        .testTarget(name: "MemoTLSTests", dependencies: ["MemoTLS", "MemoPKI", "MemoTestSupport"]),
        .testTarget(name: "MemoPKITests", dependencies: ["MemoPKI", "MemoTLS", "COpenSSL", "MemoTestSupport"]),
        .testTarget(name: "MemoNetTests", dependencies: ["MemoNet", "CMemoLinux", "MemoTestSupport"]),
        .testTarget(
            name: "MemoTransportTests",
            dependencies: ["MemoTransport", "MemoTLS", "MemoNet", "MemoWire", "MemoTestSupport"]),
        .testTarget(
            name: "MemoServerTests",
            dependencies: [
                "MemoServer", "MemoCore", "MemoWire", "MemoSQLite", "MemoPostgres", "MemoProbe", "MemoTLS", "MemoNet",
                "MemoTestSupport",
            ]
        ),
        .testTarget(
            name: "MemoClientTests",
            dependencies: [
                "MemoClient", "MemoClientCLI", "MemoCore", "MemoWire", "MemoTLS", "MemoNet", "MemoServer",
                "MemoTestSupport",
            ]
        ),
        .testTarget(
            name: "MemoClientCLITests",
            dependencies: [
                "MemoClientCLI", "MemoClient", "MemoCLI", "MemoCore", "MemoText", "MemoTLS", "MemoWire", "MemoTestSupport",
            ]
        ),
        .testTarget(
            name: "MemoTUITests",
            dependencies: [
                "MemoTUI", "MemoViewModels", "MemoCore", "MemoText", "MemoClient", "MemoNet", "MemoTestSupport",
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "MemoCore", "MemoSQLite", "MemoWire", "MemoTLS", "MemoPKI", "MemoNet", "MemoServer", "MemoProbe",
                "MemoClient", "MemoTUI", "MemoViewModels", "MemoText", "MemoClientCLI", "MemoTestSupport",
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
