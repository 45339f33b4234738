internal import CMemoLinux

/// The CPUs this process may run on.
public enum AvailableCPUs {
    /// How many CPUs the calling thread's affinity mask allows (what `taskset` or a cgroup cpuset leaves it),
    /// at least 1. Not the machine's core count: a server pinned to one core runs best with one loop.
    public static var count: Int {
        max(1, Int(CMemoLinux_available_cpus()))
    }

    /// The default number of event loops: one per CPU the server may use, up to 64.
    public static var defaultLoopCount: Int { min(count, 64) }
}
