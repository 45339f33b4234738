import Glibc

/// CLOCK_MONOTONIC in nanoseconds, the one clock event-loop deadlines use.
enum Monotonic {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }

    /// `now() + duration`, saturating; negative durations count as zero.
    static func deadline(after duration: Duration) -> UInt64 {
        let (sum, overflow) = now().addingReportingOverflow(duration.clampedNanoseconds)
        return overflow ? UInt64.max : sum
    }

    /// Milliseconds from now until `deadline`, rounded up so a wait never ends early, capped for poll/epoll.
    static func millisecondsUntil(_ deadline: UInt64) -> Int32 {
        let now = now()
        guard deadline > now else { return 0 }
        let milliseconds = (deadline - now + 999_999) / 1_000_000
        return milliseconds > UInt64(Int32.max) ? Int32.max : Int32(milliseconds)
    }
}

extension Duration {
    /// Whole nanoseconds, with negative durations as 0 and huge ones as `UInt64.max`.
    var clampedNanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return UInt64.max }
        let (total, overflow2) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow2 ? UInt64.max : total
    }
}
