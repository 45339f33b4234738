import CMemoLinux
import Glibc
import Testing

@testable import MemoNet

/// Checks that `CMemoLinux` imports the kernel's structures with the layout the kernel uses, since the event loop
/// passes them to epoll and signalfd directly.
@Suite("Net: Linux API")
struct NetLinuxAPITests {
    @Test("epoll_event has the kernel's layout: packed, 12 bytes, on x86_64")
    func epollEventLayout() {
        #if arch(x86_64)
        #expect(MemoryLayout<epoll_event>.size == 12)
        #expect(MemoryLayout<epoll_event>.stride == 12)
        #expect(MemoryLayout<epoll_event>.offset(of: \.data) == 4)
        #else
        #expect(MemoryLayout<epoll_event>.size == 16)
        #expect(MemoryLayout<epoll_event>.offset(of: \.data) == 8)
        #endif
        #expect(MemoryLayout<epoll_data_t>.size == 8)
        #expect(MemoryLayout<signalfd_siginfo>.size == 128)
        #expect(MemoryLayout<signalfd_siginfo>.offset(of: \.ssi_signo) == 0)
    }

    @Test("epoll_event data words round-trip through epoll_ctl and epoll_wait")
    func epollEventsRoundTrip() throws {
        let epollFD = epoll_create1(LinuxAPI.epollFlags)
        try #require(epollFD >= 0)
        defer { close(epollFD) }
        // Several ready descriptors, so that epoll_wait fills more than one array element: a wrong stride
        // would garble every event after the first.
        let ids: [UInt64] = [0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x8000_0000_0000_0001]
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        for id in ids {
            let fd = eventfd(1, LinuxAPI.eventFDFlags)
            try #require(fd >= 0)
            descriptors.append(fd)
            var event = epoll_event(events: LinuxAPI.EPOLLIN | LinuxAPI.EPOLLRDHUP, data: epoll_data_t(u64: id))
            try #require(epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0)
        }
        let capacity = ids.count + 2
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        let count = epoll_wait(epollFD, events, Int32(capacity), 1_000)
        #expect(count == Int32(ids.count))
        let received = (0..<max(Int(count), 0)).map { events[$0] }
        #expect(Set(received.map(\.data.u64)) == Set(ids))
        #expect(received.allSatisfy { $0.events == LinuxAPI.EPOLLIN })
    }

    @Test("a loop's thread carries the loop's name, cut to the kernel's 15 bytes")
    func threadName() throws {
        let loop = try EventLoop.start(name: "net-test-thread-name")
        defer { loop.shutdownGracefully() }
        let name = NetBox("")
        let done = NetSignal()
        loop.execute {
            var buffer = [CChar](repeating: 0, count: 64)
            let fd = open("/proc/thread-self/comm", O_RDONLY | O_CLOEXEC)
            if fd >= 0 {
                _ = read(fd, &buffer, buffer.count - 1)
                close(fd)
            }
            let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            name.update { $0 = text }
            done.signal()
        }
        done.wait()
        #expect(name.value == "net-test-thread\n")
    }

    @Test("the header's flag values are the ones the kernel expects")
    func flagValues() {
        #expect(LinuxAPI.epollFlags == O_CLOEXEC)
        #expect(LinuxAPI.eventFDFlags == O_CLOEXEC | O_NONBLOCK)
        #expect(LinuxAPI.signalFDFlags == O_CLOEXEC | O_NONBLOCK)
        #expect(LinuxAPI.EPOLLIN == 0x001 && LinuxAPI.EPOLLOUT == 0x004 && LinuxAPI.EPOLLRDHUP == 0x2000)
    }
}
