import Glibc

/// Lets this process hold as many descriptors as its hard limit allows (the usual soft limit of 1,024 is far
/// below ten thousand connections). Failing to raise it is not an error: the process works within the old one.
public func raiseDescriptorLimit() {
    var limit = rlimit()
    let resource = __rlimit_resource_t(UInt32(RLIMIT_NOFILE.rawValue))
    guard getrlimit(resource, &limit) == 0, limit.rlim_cur < limit.rlim_max else { return }
    limit.rlim_cur = limit.rlim_max
    _ = setrlimit(resource, &limit)
}
