import Foundation
import MemoTestSupport
import Testing

/// CI's short versions of the torture runs (the long ones are run by hand; see RELIABILITY.md).
@Suite("memo-torture: crash safety and hostile peers, short versions", .serialized)
struct TortureTests {
    @Test func threeKillNineCyclesLoseNoAcknowledgedWriteAndNoWatchedChange() throws {
        let (status, out, err) = try runTool("memo-torture", [
            "crash", "--cycles", "3", "--writers", "3", "--watchers", "2", "--min-uptime", "0.3", "--max-uptime", "1",
        ])
        let summary = try #require(out.split(separator: "\n").first { $0.hasPrefix("crash summary: ") }, "\(out)\(err)")
        #expect(status == 0, "\(out)\(err)")
        #expect(summary.hasPrefix("crash summary: PASS; cycles 3;"))
        for zero in ["lost 0,", "duplicated 0,", "deleted-came-back 0,", "revision-regressions 0,", "missed 0,",
                     "repeated 0,", "mismatched 0;"] {
            #expect(summary.contains(zero), "\(summary)")
        }
        #expect(!summary.contains("writes acknowledged 0 "), "\(summary)")
        #expect(!summary.contains("events checked 0,"), "\(summary)")
        #expect(out.components(separatedBy: "killed and restarted").count == 4)
    }

    @Test func theChecksFailWhenTheStoreForgetsEverythingAtAKill() throws {
        let (status, out, _) = try runTool("memo-torture", [
            "crash", "--cycles", "1", "--writers", "2", "--watchers", "1", "--store", "memory",
            "--min-uptime", "0.3", "--max-uptime", "0.5",
        ])
        #expect(status == 1)
        #expect(out.contains("crash summary: FAIL;"), "\(out)")
    }

    @Test func everyHostileCaseGetsItsExpectedOutcomeWhileAGoodClientIsServed() throws {
        // The other suites run in parallel on the same cores, so the good client's bound here is looser than the
        // 500 ms a quiet machine holds (see RELIABILITY.md): a round once took 592 ms under the full test run.
        let (status, out, err) = try runTool("memo-torture", ["hostile", "--latency-bound", "2000"])
        let lines = out.split(separator: "\n")
        let cases = lines.filter { $0.hasPrefix("PASS ") || $0.hasPrefix("FAIL ") }
        #expect(status == 0, "\(lines.filter { $0.hasPrefix("FAIL") })\(err)")
        #expect(cases.count >= 20)
        #expect(cases.allSatisfy { $0.hasPrefix("PASS ") }, "\(cases.filter { $0.hasPrefix("FAIL") })")
        let summary = try #require(lines.first { $0.hasPrefix("hostile summary: ") }, "\(out)\(err)")
        #expect(summary.hasPrefix("hostile summary: PASS; \(cases.count)/\(cases.count) cases passed"))
        #expect(summary.contains("server up"))
    }

    @Test func usageErrorsExitTwo() throws {
        #expect(try runTool("memo-torture", ["hostile", "--cases", "no-such-case"]).0 == 2)
        #expect(try runTool("memo-torture", ["crash", "--cycles", "0"]).0 == 2)
        #expect(try runTool("memo-torture", ["frobnicate"]).0 == 2)
        let (status, listed, _) = try runTool("memo-torture", ["hostile", "--list"])
        #expect(status == 0)
        #expect(listed.split(separator: "\n").count >= 20)
    }
}
