// A minimal io_uring for one job: many small sends, one per socket, submitted with one system call (a change fanned
// out to a loop's subscribers). Raw system calls and the kernel's own header, no liburing: the rings are mapped
// and driven here, as io_uring(7) describes. One thread uses a ring (its event loop's).
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "CMemoLinux.h"

struct CMemoLinux_ring {
    int fd;
    unsigned entries;
    // The submission ring: its head moves as the kernel consumes, its tail as we queue.
    unsigned *sq_head, *sq_tail, *sq_mask, *sq_array;
    struct io_uring_sqe *sqes;
    unsigned queued;  // entries written since the last submission
    // The completion ring: its tail moves as the kernel completes, its head as we reap.
    unsigned *cq_head, *cq_tail, *cq_mask;
    struct io_uring_cqe *cqes;
    void *sq_map, *cq_map;
    size_t sq_map_size, cq_map_size, sqes_size;
};

static int ring_setup(unsigned entries, struct io_uring_params *params) {
    return (int)syscall(__NR_io_uring_setup, entries, params);
}

static int ring_enter(int fd, unsigned submit, unsigned complete, unsigned flags) {
    return (int)syscall(__NR_io_uring_enter, fd, submit, complete, flags, NULL, 0);
}

static void ring_unmap(struct CMemoLinux_ring *ring) {
    if (ring->sqes && ring->sqes != MAP_FAILED) munmap(ring->sqes, ring->sqes_size);
    if (ring->cq_map && ring->cq_map != MAP_FAILED && ring->cq_map != ring->sq_map) munmap(ring->cq_map, ring->cq_map_size);
    if (ring->sq_map && ring->sq_map != MAP_FAILED) munmap(ring->sq_map, ring->sq_map_size);
    if (ring->fd >= 0) close(ring->fd);
}

struct CMemoLinux_ring *CMemoLinux_ring_open(unsigned entries, int *error) {
    struct CMemoLinux_ring *ring = calloc(1, sizeof *ring);
    if (!ring) { *error = ENOMEM; return NULL; }
    struct io_uring_params params;
    // One thread submits (the loop's), and nothing completes by task work it must be interrupted for: the
    // kernel can skip the locking and signalling for other submitters. Older kernels refuse these flags (EINVAL):
    // then a plain ring.
    memset(&params, 0, sizeof params);
    params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SUBMIT_ALL;
    ring->fd = ring_setup(entries, &params);
    if (ring->fd < 0 && errno == EINVAL) {
        memset(&params, 0, sizeof params);
        ring->fd = ring_setup(entries, &params);
    }
    if (ring->fd < 0) { *error = errno; free(ring); return NULL; }
    ring->entries = params.sq_entries;
    ring->sq_map_size = params.sq_off.array + params.sq_entries * sizeof(unsigned);
    ring->cq_map_size = params.cq_off.cqes + params.cq_entries * sizeof(struct io_uring_cqe);
    int single = (params.features & IORING_FEAT_SINGLE_MMAP) != 0;
    if (single && ring->cq_map_size > ring->sq_map_size) ring->sq_map_size = ring->cq_map_size;
    ring->sq_map = mmap(NULL, ring->sq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring->fd,
                        IORING_OFF_SQ_RING);
    if (ring->sq_map == MAP_FAILED) goto failed;
    ring->cq_map = single ? ring->sq_map
                          : mmap(NULL, ring->cq_map_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                                 ring->fd, IORING_OFF_CQ_RING);
    if (ring->cq_map == MAP_FAILED) goto failed;
    ring->sqes_size = params.sq_entries * sizeof(struct io_uring_sqe);
    ring->sqes = mmap(NULL, ring->sqes_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring->fd,
                      IORING_OFF_SQES);
    if (ring->sqes == MAP_FAILED) goto failed;
    char *sq = ring->sq_map, *cq = ring->cq_map;
    ring->sq_head = (unsigned *)(sq + params.sq_off.head);
    ring->sq_tail = (unsigned *)(sq + params.sq_off.tail);
    ring->sq_mask = (unsigned *)(sq + params.sq_off.ring_mask);
    ring->sq_array = (unsigned *)(sq + params.sq_off.array);
    ring->cq_head = (unsigned *)(cq + params.cq_off.head);
    ring->cq_tail = (unsigned *)(cq + params.cq_off.tail);
    ring->cq_mask = (unsigned *)(cq + params.cq_off.ring_mask);
    ring->cqes = (struct io_uring_cqe *)(cq + params.cq_off.cqes);
    return ring;
failed:
    *error = errno;
    ring_unmap(ring);
    free(ring);
    return NULL;
}

void CMemoLinux_ring_close(struct CMemoLinux_ring *ring) {
    if (!ring) return;
    ring_unmap(ring);
    free(ring);
}

unsigned CMemoLinux_ring_capacity(const struct CMemoLinux_ring *ring) { return ring->entries; }

int CMemoLinux_ring_descriptor(const struct CMemoLinux_ring *ring) { return ring->fd; }

int CMemoLinux_ring_send(struct CMemoLinux_ring *ring, int fd, const void *bytes, unsigned length, uint64_t token) {
    unsigned tail = *ring->sq_tail;  // only this thread writes the tail
    unsigned head = __atomic_load_n(ring->sq_head, __ATOMIC_ACQUIRE);
    if (tail - head >= ring->entries) return -1;
    unsigned index = tail & *ring->sq_mask;
    struct io_uring_sqe *sqe = &ring->sqes[index];
    memset(sqe, 0, sizeof *sqe);
    sqe->opcode = IORING_OP_SEND;
    sqe->fd = fd;
    sqe->addr = (unsigned long)bytes;
    sqe->len = length;
    // MSG_DONTWAIT: a full socket completes with -EAGAIN at once instead of being parked until it is writable, so
    // every send has completed when the submission returns (the caller keeps what was refused).
    sqe->msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    sqe->user_data = token;
    ring->sq_array[index] = index;
    __atomic_store_n(ring->sq_tail, tail + 1, __ATOMIC_RELEASE);
    ring->queued++;
    return 0;
}

int CMemoLinux_ring_submit(struct CMemoLinux_ring *ring) {
    unsigned submitted = 0;
    while (submitted < ring->queued) {
        int result = ring_enter(ring->fd, ring->queued - submitted, 0, 0);
        if (result < 0) {
            if (errno == EINTR) continue;
            int error = errno;
            ring->queued -= submitted;
            return -error;
        }
        if (result == 0) break;
        submitted += (unsigned)result;
    }
    ring->queued = 0;
    return (int)submitted;
}

int CMemoLinux_ring_wait(struct CMemoLinux_ring *ring, unsigned count) {
    for (;;) {
        int result = ring_enter(ring->fd, 0, count, IORING_ENTER_GETEVENTS);
        if (result >= 0) return 0;
        if (errno != EINTR) return -errno;
    }
}

int CMemoLinux_ring_reap(struct CMemoLinux_ring *ring, uint64_t *tokens, int32_t *results, int max) {
    unsigned head = *ring->cq_head;  // only this thread moves the head
    unsigned tail = __atomic_load_n(ring->cq_tail, __ATOMIC_ACQUIRE);
    int count = 0;
    while (head != tail && count < max) {
        struct io_uring_cqe *cqe = &ring->cqes[head & *ring->cq_mask];
        tokens[count] = cqe->user_data;
        results[count] = cqe->res;
        count++;
        head++;
    }
    __atomic_store_n(ring->cq_head, head, __ATOMIC_RELEASE);
    return count;
}
