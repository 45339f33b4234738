// What batching a change's sends would save the fan-out (bench/send-batching.sh runs it): the sender's CPU per
// loopback TCP send of one 150-byte record (a delivery's TLS record) to each of N connected sockets, made three
// ways: send(2) per socket, as memo-server and Redis do; one io_uring submission of all N sends; and the same with
// the sockets registered with the ring and a single-issuer ring. Loopback runs the receiver's TCP processing in the
// sender's system call, as in bench/compare.sh's fan-out. CPU from getrusage around the sends only; the receivers
// are drained between rounds, outside the count.
//
//   ./send-batching N ROUNDS MODE     MODE 0 send, 1 io_uring, 2 io_uring with registered sockets
// Build: cc -O2 -o send-batching send-batching.c -luring (Debian's liburing-dev)
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

static void fail(const char *what) { perror(what); exit(1); }

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: %s N ROUNDS MODE\n", argv[0]); return 2; }
    int n = atoi(argv[1]), rounds = atoi(argv[2]), mode = atoi(argv[3]);
    if (n < 1 || n > 4096 || rounds < 1 || mode < 0 || mode > 2) { fprintf(stderr, "bad arguments\n"); return 2; }

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (void *)&address, sizeof address) || listen(listener, 4096)
        || getsockname(listener, (void *)&address, &length))
        fail("listen");
    int *senders = calloc(n, sizeof(int)), *receivers = calloc(n, sizeof(int));
    for (int i = 0; i < n; i++) {
        receivers[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(receivers[i], (void *)&address, sizeof address)) fail("connect");
        if ((senders[i] = accept(listener, NULL, NULL)) < 0) fail("accept");
        int one = 1;
        setsockopt(senders[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }

    struct io_uring ring;
    if (mode > 0) {
        struct io_uring_params params = {0};
        if (mode == 2) params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
        if (io_uring_queue_init_params(n, &ring, &params) < 0) fail("io_uring_queue_init_params");
        if (mode == 2 && io_uring_register_files(&ring, senders, n) < 0) fail("io_uring_register_files");
    }

    char record[150], sink[65536];
    memset(record, 'x', sizeof record);
    double spent = 0;
    for (int round = 0; round < rounds; round++) {
        double before = cpu_seconds();
        if (mode == 0) {
            for (int i = 0; i < n; i++)
                if (send(senders[i], record, sizeof record, MSG_NOSIGNAL) != sizeof record) fail("send");
        } else {
            for (int i = 0; i < n; i++) {
                struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
                io_uring_prep_send(sqe, mode == 2 ? i : senders[i], record, sizeof record, MSG_NOSIGNAL);
                if (mode == 2) sqe->flags |= IOSQE_FIXED_FILE;
            }
            if (io_uring_submit_and_wait(&ring, n) < 0) fail("io_uring_submit_and_wait");
            struct io_uring_cqe *cqe;
            unsigned head, seen = 0;
            io_uring_for_each_cqe(&ring, head, cqe) {
                if (cqe->res != sizeof record) { fprintf(stderr, "a send returned %d\n", cqe->res); return 1; }
                seen++;
            }
            if (seen != (unsigned)n) { fprintf(stderr, "%u completions of %d\n", seen, n); return 1; }
            io_uring_cq_advance(&ring, seen);
        }
        spent += cpu_seconds() - before;
        for (int i = 0; i < n; i++)
            if (recv(receivers[i], sink, sizeof sink, 0) != sizeof record) fail("recv");
        // A pause between rounds, as between a fan-out's changes.
        nanosleep(&(struct timespec){0, 2000000}, NULL);
    }
    static const char *names[] = {"send", "io_uring", "io_uring-registered"};
    printf("%s %.3f\n", names[mode], spent * 1e6 / ((double)n * rounds));
    return 0;
}
