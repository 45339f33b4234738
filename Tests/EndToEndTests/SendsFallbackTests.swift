import Foundation
import MemoModel
import MemoNet
import MemoProbe
import MemoTestSupport
import MemoWire
import ServerTestSupport
import Testing

/// Where the kernel refuses io_uring (a container's seccomp profile does, or `kernel.io_uring_disabled`),
/// `--sends batched` falls back to one `send` per record by itself, says so at startup, and serves subscribers as
/// before. The refusal is real: a seccomp filter, installed by a small launcher compiled here, answers
/// io_uring_setup with EPERM, as Docker's default profile does.
@Suite("Sends: a kernel that refuses io_uring")
struct SendsFallbackTests {
    /// Compiles the launcher: it installs the filter, then runs its arguments.
    private func launcher(in directory: TemporaryDirectory) throws -> String {
        let source = directory.path + "/deny-io-uring.c", program = directory.path + "/deny-io-uring"
        try Self.launcherSource.write(toFile: source, atomically: true, encoding: .utf8)
        let compiler = Process()
        compiler.executableURL = URL(fileURLWithPath: "/usr/bin/cc")
        compiler.arguments = ["-O1", "-o", program, source]
        try compiler.run()
        compiler.waitUntilExit()
        #expect(compiler.terminationStatus == 0, "cc could not build the seccomp launcher")
        return program
    }

    @Test func aServerRefusedIoUringSaysSoAndStillDeliversEveryChange() throws {
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory()
        let program = try launcher(in: directory)
        let server = try ServerProcess(
            arguments: ["--store", "memory", "--certs", certificates.path, "--listen", "127.0.0.1:0", "--threads", "1"],
            directory: directory, launcher: [program])
        defer {
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        #expect(server.log.contains("sends: each (io_uring: Operation not permitted)"), "\(server.log)")
        // Enough subscribers on the one thread for a batch, had the kernel allowed one.
        let address = try SocketAddress(parsing: server.address)
        var subscribers: [(TestClient, UInt32)] = []
        for _ in 0..<6 {
            let client = try TestClient(address: address, identity: certificates.client())
            try client.hello()
            let subscription = try client.send(Message.subscribe(after: 0))
            _ = try client.receive { $0.requestID == subscription && $0.type == Message.Kind.subscribed.rawValue }
            subscribers.append((client, subscription))
        }
        let writer = try TestClient(address: address, identity: certificates.client())
        try writer.hello()
        for index in 0..<5 {
            _ = try writer.request(Message.create(id: nil, insertMicros: nil, content: "refused \(index)"))
            for (client, subscription) in subscribers {
                guard case .change(let change) = try client.receive({ $0.requestID == subscription }).1 else {
                    Issue.record("a subscriber got no change \(index)")
                    return
                }
                #expect(Array(change.memo.content.utf8) == Array("refused \(index)".utf8))
            }
        }
    }

    @Test func theServerSaysSendsAreBatchedWhereTheKernelAllowsIt() throws {
        let certificates = try TestCertificates()
        let directory = try TemporaryDirectory()
        for flag in ["batched", "each"] {
            let server = try ServerProcess(
                arguments: ["--store", "memory", "--certs", certificates.path, "--listen", "127.0.0.1:0",
                            "--sends", flag],
                directory: directory)
            #expect(server.log.contains("; sends: \(flag)\n"), "\(server.log)")
            server.signal(SIGTERM)
            _ = server.waitForExit()
        }
        let wrong = try runToExit("memo-server", ["serve", "--sends", "sometimes", "--certs", certificates.path])
        #expect(wrong.status == 2)
        #expect(wrong.err.contains("--sends"), "\(wrong.err)")
    }

    private static let launcherSource = """
        #include <errno.h>
        #include <linux/audit.h>
        #include <linux/filter.h>
        #include <linux/seccomp.h>
        #include <stddef.h>
        #include <stdio.h>
        #include <sys/prctl.h>
        #include <sys/syscall.h>
        #include <unistd.h>

        int main(int argc, char **argv) {
            struct sock_filter filter[] = {
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
                BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
                BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
                BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            };
            struct sock_fprog program = {.len = sizeof filter / sizeof filter[0], .filter = filter};
            if (argc < 2 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) != 0) {
                perror("seccomp");
                return 126;
            }
            execv(argv[1], argv + 1);
            perror("execv");
            return 127;
        }
        """
}
