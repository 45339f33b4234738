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

/// accept4(2). glibc declares its address argument as a transparent union (__SOCKADDR_ARG) under _GNU_SOURCE,
/// which Swift cannot pass a `sockaddr` pointer to; this takes the plain pointer.
int CMemoLinux_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/// pthread_setname_np(3): at most 15 bytes of name.
int CMemoLinux_set_thread_name(pthread_t thread, const char *name);

/// The number of CPUs this thread may run on (its affinity mask: taskset, cgroup cpusets), 0 when unknown.
int CMemoLinux_available_cpus(void);
#endif
