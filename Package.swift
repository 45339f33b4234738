// swift-tools-version:6.0
import PackageDescription

// Data flow, one target per concern:
// bytes -> frames -> messages (MemoWire) -> store (MemoCore, MemoSQLite, MemoPostgres) -> subject (MemoCore)
// TLS (MemoTLS) and the epoll event loop (MemoNet) carry the bytes; the executables only wire parts together.
// The modules on the server's per-request path are built without Swift's dynamic exclusivity checks in release
// builds. Why: `swift_beginAccess`/`swift_endAccess` on class properties and loop-bound values cost about 3,900
// of the 31,000 instructions of a create on the event loops (callgrind; BENCHMARKS.md). Why it is safe: the
// dynamic check keeps a per-thread set of accesses, so what it catches is an overlapping access within one
// thread (a callback that mutates a property its caller is mutating), not a race; these types are confined to
// one event loop thread (connections, sessions, the record layer) or to a lock, the static checks still run in
// every build, and debug builds (which `swift test` and `.ci/run` use for the test suite) keep the dynamic
// checks, so an overlapping access introduced later fails the tests instead of passing silently.
let hotPathSettings: [SwiftSetting] = [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))
]

let package = Package(
    name: "memo",
    products: [
        .library(name: "MemoWire", targets: ["MemoWire"]),
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
        .target(name: "MemoCore", swiftSettings: hotPathSettings),
        .target(
            name: "MemoSQLite", dependencies: ["MemoCore", "CSQLite", "CMemoLinux"], swiftSettings: hotPathSettings),
        .target(name: "MemoPostgres", dependencies: ["MemoCore", "CPostgres"]),
        .target(name: "MemoWire", dependencies: ["MemoCore"], swiftSettings: hotPathSettings),
        .target(name: "MemoTLS", dependencies: ["COpenSSL"], swiftSettings: hotPathSettings),
        .systemLibrary(name: "CMemoLinux"),
        .target(name: "MemoNet", dependencies: ["CMemoLinux"], swiftSettings: hotPathSettings),
        .target(name: "MemoCLI"),
        .target(
            name: "MemoServer", dependencies: ["MemoWire", "MemoSQLite", "MemoTLS", "MemoNet"],
            swiftSettings: hotPathSettings),
        .target(name: "MemoProbe", dependencies: ["MemoWire", "MemoTLS", "MemoNet"]),
        .target(name: "MemoText"),
        .target(name: "MemoClient", dependencies: ["MemoWire", "MemoTLS", "MemoNet", "MemoText"]),
        .target(name: "MemoTUI", dependencies: ["MemoCore", "MemoText"]),
        .executableTarget(
            name: "memo-server",
            dependencies: ["MemoServer", "MemoSQLite", "MemoPostgres", "MemoTLS", "MemoNet", "MemoCLI", "MemoWire"]),
        .executableTarget(
            name: "memo-client",
            dependencies: ["MemoClient", "MemoTUI", "MemoCLI", "MemoSQLite", "MemoTLS", "MemoNet"]),
        .executableTarget(
            name: "memo-bench",
            dependencies: [
                "MemoCore", "MemoWire", "MemoSQLite", "MemoProbe", "MemoClient", "MemoTLS", "MemoNet", "MemoCLI",
                "MemoTUI",
            ]),
        .executableTarget(
            name: "memo-torture", dependencies: ["MemoProbe", "MemoTLS", "MemoNet", "MemoWire", "MemoCLI"]),
        .testTarget(
            name: "MemoWireTests",
            dependencies: [
                "MemoCore", "MemoSQLite", "MemoPostgres", "MemoWire", "MemoTLS", "MemoNet", "MemoCLI", "MemoServer", "MemoClient",
                "MemoTUI", "MemoText", "MemoProbe",
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
