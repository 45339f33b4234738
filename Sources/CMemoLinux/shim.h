#ifndef CMEMOLINUX_SHIM_H
#define CMEMOLINUX_SHIM_H
// accept4 and pthread_setname_np are declared only under _GNU_SOURCE: ask the system headers for them rather than
// repeating their signatures here.
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
// Linux calls the toolchain's Glibc module does not import: epoll, eventfd, signalfd, accept4, thread names.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <malloc.h>
#include <sys/syscall.h>
#include <unistd.h>

// Under _GNU_SOURCE glibc declares accept4's address as a transparent union (__SOCKADDR_ARG) that Swift cannot
// pass a `sockaddr` pointer to; this takes the plain pointer.
static inline int CMemoLinux_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    return accept4(fd, addr, addrlen, flags);
}

// The number of CPUs this thread may run on (its affinity mask: taskset, cgroup cpusets), 0 when unknown. The raw
// system call, because glibc declares sched_getaffinity and cpu_set_t only under _GNU_SOURCE; the kernel answers
// with the bytes of the mask it filled.
static inline int CMemoLinux_available_cpus(void) {
    unsigned long mask[16] = {0};  // 1,024 CPUs
    long filled = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
    if (filled <= 0) return 0;
    int count = 0;
    for (long word = 0; word < filled / (long)sizeof(unsigned long); word++) count += __builtin_popcountl(mask[word]);
    return count;
}
#endif
