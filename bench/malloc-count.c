// LD_PRELOAD library for bench/server-costs.sh: counts calls to malloc, calloc, realloc, posix_memalign and
// aligned_alloc in the whole process (Swift's allocations and OpenSSL's go through them); SIGUSR2 writes
// "MALLOCS <count>" to stderr. Build: cc -O2 -shared -fPIC -o malloc-count.so malloc-count.c
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static atomic_ulong count;
static void counted(void) { atomic_fetch_add_explicit(&count, 1, memory_order_relaxed); }

void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { counted(); return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void *aligned_alloc(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n) {
    counted();
    *p = __libc_memalign(a, n);
    return *p == NULL ? 12 : 0;
}

static void report(int signal) {
    (void)signal;
    char line[64];
    int length = snprintf(line, sizeof line, "MALLOCS %lu\n", atomic_load(&count));
    if (length > 0) (void)write(2, line, (size_t)length);
}

__attribute__((constructor)) static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = report;
    action.sa_flags = SA_RESTART;
    sigaction(SIGUSR2, &action, NULL);
}
