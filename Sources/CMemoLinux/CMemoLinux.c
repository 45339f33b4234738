// The only file that asks glibc for its GNU declarations; see CMemoLinux.h for why the header does not.
#define _GNU_SOURCE
#include <sched.h>
#include "CMemoLinux.h"

int CMemoLinux_accept4(int fd, struct sockaddr *addr, socklen_t *addrlen, int flags) {
    return accept4(fd, addr, addrlen, flags);
}

int CMemoLinux_set_thread_name(pthread_t thread, const char *name) {
    return pthread_setname_np(thread, name);
}

int CMemoLinux_available_cpus(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}
