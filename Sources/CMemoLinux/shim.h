#ifndef CMEMOLINUX_SHIM_H
#define CMEMOLINUX_SHIM_H
// Linux calls the toolchain's Glibc module does not import: epoll, eventfd, signalfd, accept4, thread names.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <pthread.h>
#include <malloc.h>

// accept4 and pthread_setname_np are declared only under _GNU_SOURCE; declare them here with their glibc
// signatures so that Swift sees them without changing how the rest of libc is imported.
extern int accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags);
extern int pthread_setname_np(pthread_t thread, const char *name);

static inline int CMemoLinux_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    return accept4(fd, addr, addrlen, flags);
}
static inline int CMemoLinux_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}
#endif
