// swift-tools-version:6.0
import PackageDescription

// Data flow, one target per concern:
// bytes -> frames -> messages (MemoWire) -> store (MemoCore, MemoSQLite, MemoPostgres) -> subject (MemoCore)
// TLS (MemoTLS) and the epoll event loop (MemoNet) carry the bytes; the executables only wire parts together.
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
        .target(name: "MemoCore"),
        .target(name: "MemoSQLite", dependencies: ["MemoCore", "CSQLite", "CMemoLinux"]),
        .target(name: "MemoPostgres", dependencies: ["MemoCore", "CPostgres"]),
        .target(name: "MemoWire", dependencies: ["MemoCore"]),
        .target(name: "MemoTLS", dependencies: ["COpenSSL"]),
        .systemLibrary(name: "CMemoLinux"),
        .target(name: "MemoNet", dependencies: ["CMemoLinux"]),
        .target(name: "MemoCLI"),
        // Bytes between a non-blocking socket and TLS, shared by the server, the probe and the client.
        .target(name: "MemoTransport", dependencies: ["MemoTLS", "MemoNet"]),
        .target(
            name: "MemoServer", dependencies: ["MemoWire", "MemoSQLite", "MemoTLS", "MemoNet", "MemoTransport"]),
        .target(name: "MemoProbe", dependencies: ["MemoWire", "MemoTLS", "MemoNet", "MemoTransport"]),
        .target(name: "MemoText"),
        .target(
            name: "MemoClient", dependencies: ["MemoWire", "MemoTLS", "MemoNet", "MemoText", "MemoTransport"]),
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
