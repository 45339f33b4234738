import Foundation

/// Runs a program to completion with only stdin, stdout and stderr open (a postmaster that `pg_ctl` leaves
/// running would otherwise keep the harness's descriptors), its output in a temporary file.
/// - Throws: when it exits non-zero, with its output.
@discardableResult
func runProgram(_ argv: [String]) throws -> String {
    // bash closes every descriptor above stderr, then becomes the program.
    let closing = #"for f in /proc/$$/fd/*; do n=${f##*/}; [ "$n" -gt 2 ] && eval "exec $n>&-"; done; exec "$@""#
    let full = ["/bin/bash", "-c", closing, "bash"] + argv
    // The output file has no name while the program runs: a harness killed meanwhile (SIGKILL, or exit from
    // another thread) leaves nothing in the temporary folder.
    let outputPath = NSTemporaryDirectory() + "memo-gray-run-\(UUID().uuidString)"
    let output = open(outputPath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard output >= 0 else { throw TortureError("cannot make \(outputPath): error \(errno)") }
    unlink(outputPath)
    let reader = FileHandle(fileDescriptor: output, closeOnDealloc: true)
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, output, 1)
    posix_spawn_file_actions_adddup2(&actions, 1, 2)
    var cArguments = full.map { strdup($0) } + [nil]
    defer { for argument in cArguments { free(argument) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, full[0], &actions, nil, &cArguments, environ)
    guard spawned == 0 else { throw TortureError("cannot run \(argv[0]): error \(spawned)") }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    lseek(output, 0, SEEK_SET)
    let text = String(decoding: reader.readDataToEndOfFile(), as: UTF8.self)
        .trimmingCharacters(in: .whitespacesAndNewlines)
    // Exited normally with status 0: the low seven bits hold the signal, the next eight the exit status.
    guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
        throw TortureError("\(argv.joined(separator: " ")): \(text)")
    }
    return text
}

/// Network namespaces for the gray-failure run: every party (PostgreSQL, each memo-server, each client, the
/// harness) in a namespace of its own, each linked by a veth pair to a bridge in one more namespace. Two
/// bridges: `db` (PostgreSQL and the servers, 192.0.2.0/26) and `clients` (the servers and the clients,
/// 192.0.2.64/26), so that a server can be cut off from PostgreSQL alone, or from its clients alone, by taking
/// its port on one bridge down. Traffic passes between two namespaces made here, not to the root namespace.
///
/// Names begin with a prefix unique to the run; `teardown` deletes every namespace (which deletes the veths
/// in them), and a watchdog process does the same if the harness dies without it.
final class GrayNetwork {
    enum Bridge: String {
        case db = "d"
        case clients = "c"
    }

    let prefix: String
    private let bridgeNamespace: String
    private(set) var namespaces: [String] = []
    private var nextClientHost = 80

    /// Makes the bridge namespace and its two bridges (`swd`, `swc`).
    /// - Throws: when `ip` fails (not root, no iproute2).
    init() throws {
        prefix = "gf" + String(UInt32.random(in: 0...0xFFFFF), radix: 16)
        bridgeNamespace = prefix + "-br"
        // If the harness dies (even by SIGKILL), a watchdog removes the namespaces.
        cleanupWhenGone(cleanupCommand)
        try add(namespace: bridgeNamespace)
        for bridge in [Bridge.db, .clients] {
            try ip(["netns", "exec", bridgeNamespace, "ip", "link", "add", "sw" + bridge.rawValue, "type", "bridge"])
            try ip(["netns", "exec", bridgeNamespace, "ip", "link", "set", "sw" + bridge.rawValue, "up"])
        }
        try ip(["netns", "exec", bridgeNamespace, "ip", "link", "set", "lo", "up"])
    }

    static let postgresAddress = "192.0.2.1"
    /// A server's address on the database bridge (server 0 is .2, server 1 .3).
    static func serverDatabaseAddress(_ server: Int) -> String { "192.0.2.\(2 + server)" }
    /// A server's address on the clients' bridge (server 0 is .65, server 1 .66).
    static func serverClientAddress(_ server: Int) -> String { "192.0.2.\(65 + server)" }

    /// A namespace for one party, with one link to each bridge it is on. - Returns: the namespace's name.
    @discardableResult
    func addParty(_ name: String, links: [(Bridge, String)]) throws -> String {
        let namespace = prefix + "-" + name
        try add(namespace: namespace)
        try ip(["netns", "exec", namespace, "ip", "link", "set", "lo", "up"])
        for (bridge, address) in links {
            let inside = prefix + name + bridge.rawValue
            let outside = inside + "b"
            try ip(["link", "add", inside, "type", "veth", "peer", "name", outside])
            try ip(["link", "set", inside, "netns", namespace])
            try ip(["link", "set", outside, "netns", bridgeNamespace])
            try ip(["netns", "exec", bridgeNamespace, "ip", "link", "set", outside, "master", "sw" + bridge.rawValue])
            try ip(["netns", "exec", bridgeNamespace, "ip", "link", "set", outside, "up"])
            try ip(["netns", "exec", namespace, "ip", "addr", "add", address + "/26", "dev", inside])
            try ip(["netns", "exec", namespace, "ip", "link", "set", inside, "up"])
        }
        return namespace
    }

    /// A client's namespace on the clients' bridge, with the next free address (192.0.2.80 and up).
    func addClient(_ name: String) throws -> String {
        nextClientHost += 1
        guard nextClientHost < 127 else { throw TortureError("too many clients for 192.0.2.64/26") }
        return try addParty(name, links: [(.clients, "192.0.2.\(nextClientHost)")])
    }

    /// Takes a party's port on a bridge down (the party is cut off from everyone on that bridge) or up again.
    func setLink(_ party: String, _ bridge: Bridge, up: Bool) throws {
        try ip(["netns", "exec", bridgeNamespace, "ip", "link", "set", prefix + party + bridge.rawValue + "b",
                up ? "up" : "down"])
    }

    /// Kills what still runs in the namespaces and deletes them (their veths go with them).
    func teardown() {
        for namespace in namespaces.reversed() {
            _ = try? runProgram(["/bin/sh", "-c", "ip netns pids \(namespace) | xargs -r kill -9"])
            _ = try? ip(["netns", "del", namespace])
        }
        namespaces.removeAll()
    }

    /// A shell command that deletes every namespace of this run: what the watchdog runs if the harness dies.
    var cleanupCommand: String {
        "for ns in $(ip netns list | cut -d' ' -f1 | grep '^\(prefix)-'); do "
            + "ip netns pids $ns | xargs -r kill -9; ip netns del $ns; done"
    }

    private func add(namespace: String) throws {
        try ip(["netns", "add", namespace])
        namespaces.append(namespace)
    }

    private func ip(_ arguments: [String]) throws {
        try runProgram(["/usr/sbin/ip"] + arguments)
    }
}

/// The calling thread moves into a network namespace: the sockets it opens from then on live there. (Only
/// this thread: `setns` with CLONE_NEWNET changes the calling thread's namespace.)
func enterNetworkNamespace(_ namespace: String) throws {
    let descriptor = open("/run/netns/" + namespace, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw TortureError("cannot open namespace \(namespace)") }
    defer { close(descriptor) }
    try enterNetworkNamespace(descriptor: descriptor, name: namespace)
}

/// The calling thread's network namespace, to come back to (`enterNetworkNamespace(descriptor:)`).
func currentNetworkNamespace() throws -> Int32 {
    let descriptor = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw TortureError("cannot open /proc/thread-self/ns/net") }
    return descriptor
}

func enterNetworkNamespace(descriptor: Int32, name: String) throws {
    typealias SetNamespace = @convention(c) (Int32, Int32) -> Int32
    // Glibc's module does not export setns; it is in libc all the same.
    guard let symbol = dlsym(dlopen(nil, RTLD_NOW), "setns") else { throw TortureError("no setns in libc") }
    let setNamespace = unsafeBitCast(symbol, to: SetNamespace.self)
    let cloneNewNet: Int32 = 0x4000_0000
    guard setNamespace(descriptor, cloneNewNet) == 0 else {
        throw TortureError("setns \(name): \(String(cString: strerror(errno)))")
    }
}

/// A shell loop that waits for this process to go away, then runs `command`: cleanup even after SIGKILL.
func cleanupWhenGone(_ command: String) {
    let loop = "while kill -0 \(getpid()) 2>/dev/null; do sleep 1; done; " + command
    _ = try? runProgram(["/bin/sh", "-c", "(\(loop)) >/dev/null 2>&1 &"])
}
