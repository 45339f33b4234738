import Glibc

/// epoll, eventfd, signalfd, accept4 and pthread_setname_np, which the toolchain's `Glibc` module does not import.
///
/// The package has no C target for this module, so the functions are looked up once with `dlsym` and called
/// through `@convention(c)` pointers, which use the C calling convention. Constants and the `epoll_event`
/// layout come from the Linux UAPI headers, which are stable ABI.
enum LinuxAPI {
    typealias EpollCreate1 = @convention(c) (Int32) -> Int32
    typealias EpollCtl = @convention(c) (Int32, Int32, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias EpollWait = @convention(c) (Int32, UnsafeMutableRawPointer?, Int32, Int32) -> Int32
    typealias EventFD = @convention(c) (UInt32, Int32) -> Int32
    typealias SignalFD = @convention(c) (Int32, UnsafePointer<sigset_t>?, Int32) -> Int32
    typealias Accept4 = @convention(c) (
        Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?, Int32
    ) -> Int32

    static let epollCreate1: EpollCreate1 = symbol("epoll_create1")
    static let epollCtl: EpollCtl = symbol("epoll_ctl")
    static let epollWait: EpollWait = symbol("epoll_wait")
    static let eventFD: EventFD = symbol("eventfd")
    static let signalFD: SignalFD = symbol("signalfd")
    // accept4 is declared only under _GNU_SOURCE, which the Glibc module does not define.
    static let accept4: Accept4 = symbol("accept4")
    typealias SetThreadName = @convention(c) (pthread_t, UnsafePointer<CChar>?) -> Int32
    private static let setThreadNameFunction: SetThreadName = symbol("pthread_setname_np")

    /// Names a thread (at most 15 bytes); failures are ignored since the name is only for humans.
    static func setThreadName(_ thread: pthread_t, _ name: String) {
        _ = name.withCString { setThreadNameFunction(thread, $0) }
    }

    // <sys/epoll.h>
    static let EPOLLIN: UInt32 = 0x001
    static let EPOLLPRI: UInt32 = 0x002
    static let EPOLLOUT: UInt32 = 0x004
    static let EPOLLERR: UInt32 = 0x008
    static let EPOLLHUP: UInt32 = 0x010
    static let EPOLLRDHUP: UInt32 = 0x2000
    static let EPOLL_CTL_ADD: Int32 = 1
    static let EPOLL_CTL_DEL: Int32 = 2
    static let EPOLL_CTL_MOD: Int32 = 3
    // EPOLL_CLOEXEC, EFD_CLOEXEC and SFD_CLOEXEC equal O_CLOEXEC; the NONBLOCK flags equal O_NONBLOCK.
    static let cloexec: Int32 = O_CLOEXEC
    static let nonblock: Int32 = O_NONBLOCK

    /// `struct epoll_event` is packed (12 bytes) on x86_64 and naturally aligned (16 bytes) elsewhere.
    #if arch(x86_64)
    static let epollEventSize = 12
    static let epollDataOffset = 4
    #else
    static let epollEventSize = 16
    static let epollDataOffset = 8
    #endif

    /// `struct signalfd_siginfo` is 128 bytes; `ssi_signo` is its first field.
    static let signalfdSiginfoSize = 128

    /// Writes one `epoll_event` at `index` of `buffer`.
    static func storeEvent(_ events: UInt32, data: UInt64, into buffer: UnsafeMutableRawPointer, at index: Int) {
        let base = index * epollEventSize
        buffer.storeBytes(of: events, toByteOffset: base, as: UInt32.self)
        buffer.storeBytes(of: data, toByteOffset: base + epollDataOffset, as: UInt64.self)
    }

    /// Reads the events mask and data word of the `epoll_event` at `index` of `buffer`.
    static func loadEvent(from buffer: UnsafeRawPointer, at index: Int) -> (events: UInt32, data: UInt64) {
        let base = index * epollEventSize
        let events = buffer.loadUnaligned(fromByteOffset: base, as: UInt32.self)
        let data = buffer.loadUnaligned(fromByteOffset: base + epollDataOffset, as: UInt64.self)
        return (events, data)
    }

    private static func symbol<F>(_ name: String) -> F {
        // RTLD_DEFAULT is the null handle on glibc: search the global scope, where libc is always loaded.
        guard let pointer = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
            fatalError("libc has no \(name): MemoNet needs Linux with glibc")
        }
        return unsafeBitCast(pointer, to: F.self)
    }
}
