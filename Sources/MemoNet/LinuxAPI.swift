internal import CMemoLinux
import Glibc

/// Flags and event masks from <sys/epoll.h>, <sys/eventfd.h> and <sys/signalfd.h>, in the integer types the
/// calls take.
///
/// The headers declare these as C enum constants (each with a `#define NAME NAME` so `#ifdef` works), which
/// Swift imports as the `EPOLL_EVENTS` struct for the event bits and as `Int` for the anonymous flag enums;
/// the functions themselves (`epoll_create1`, `epoll_ctl`, `epoll_wait`, `eventfd`, `signalfd`) and the types
/// (`epoll_event`, `signalfd_siginfo`) are called and used directly through `CMemoLinux`.
enum LinuxAPI {
    static let EPOLLIN = CMemoLinux.EPOLLIN.rawValue
    static let EPOLLPRI = CMemoLinux.EPOLLPRI.rawValue
    static let EPOLLOUT = CMemoLinux.EPOLLOUT.rawValue
    static let EPOLLERR = CMemoLinux.EPOLLERR.rawValue
    static let EPOLLHUP = CMemoLinux.EPOLLHUP.rawValue
    static let EPOLLRDHUP = CMemoLinux.EPOLLRDHUP.rawValue

    /// `epoll_create1` flags.
    static let epollFlags = Int32(EPOLL_CLOEXEC)
    /// `eventfd` flags.
    static let eventFDFlags = Int32(EFD_CLOEXEC | EFD_NONBLOCK)
    /// `signalfd` flags.
    static let signalFDFlags = Int32(SFD_CLOEXEC | SFD_NONBLOCK)

    /// Names a thread (at most 15 bytes); failures are ignored since the name is only for humans.
    static func setThreadName(_ thread: pthread_t, _ name: String) {
        _ = name.withCString { CMemoLinux_set_thread_name(thread, $0) }
    }
}
