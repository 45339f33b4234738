#ifndef CMEMOLINUX_H
#define CMEMOLINUX_H
// Linux calls the toolchain's Glibc module does not import (epoll, eventfd, signalfd, malloc_trim), and wrappers for
// the ones glibc declares only under _GNU_SOURCE (accept4, pthread_setname_np, sched_getaffinity).
//
// This header does not define _GNU_SOURCE: the toolchain's Glibc module is built without it, and a header that
// turns it on changes glibc's own declarations (fd_set's member is `fds_bits` instead of `__fds_bits`), which a
// clean build then refuses as two definitions of one type. CMemoLinux.c defines it and takes the declarations
// from the system headers; Swift sees only the wrappers below, in plain C types.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <malloc.h>
#include <stdint.h>

/// accept4(2). glibc declares its address argument as a transparent union (__SOCKADDR_ARG) under _GNU_SOURCE,
/// which Swift cannot pass a `sockaddr` pointer to; this takes the plain pointer.
int CMemoLinux_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/// pthread_setname_np(3): at most 15 bytes of name.
int CMemoLinux_set_thread_name(pthread_t thread, const char *name);

/// The number of CPUs this thread may run on (its affinity mask: taskset, cgroup cpusets), 0 when unknown.
int CMemoLinux_available_cpus(void);

/// A small io_uring for batched sends (CMemoLinuxRing.c): one thread's, opaque.
struct CMemoLinux_ring;

/// A ring of at least `entries` submissions; NULL with `*error` set (errno) when the kernel refuses io_uring
/// (ENOSYS, EPERM under a seccomp profile or kernel.io_uring_disabled, ENOMEM).
struct CMemoLinux_ring *CMemoLinux_ring_open(unsigned entries, int *error);
void CMemoLinux_ring_close(struct CMemoLinux_ring *ring);
/// How many sends may be queued before a submission.
unsigned CMemoLinux_ring_capacity(const struct CMemoLinux_ring *ring);
/// The ring's own descriptor (for a test that breaks the ring).
int CMemoLinux_ring_descriptor(const struct CMemoLinux_ring *ring);
/// Queues send(fd, bytes, length, MSG_NOSIGNAL | MSG_DONTWAIT) with `token` for its completion; -1 when full.
int CMemoLinux_ring_send(struct CMemoLinux_ring *ring, int fd, const void *bytes, unsigned length, uint64_t token);
/// Submits what is queued: the number submitted, or -errno.
int CMemoLinux_ring_submit(struct CMemoLinux_ring *ring);
/// Waits until at least `count` completions are in the ring: 0, or -errno.
int CMemoLinux_ring_wait(struct CMemoLinux_ring *ring, unsigned count);
/// Takes up to `max` completions: each one's token and result (bytes sent, or -errno). Returns how many.
int CMemoLinux_ring_reap(struct CMemoLinux_ring *ring, uint64_t *tokens, int32_t *results, int max);
#endif
