/* The floor bench/network.py compares the network source with: one thread that waits on its UDP
 * sockets (epoll) and reads every datagram waiting with recvmmsg, counting them and doing nothing
 * else. Built by bench/network.py with gcc at run time.
 *
 *     recvmmsg_floor ADDRESS FIRST_PORT SOCKETS PACKET_LENGTH
 *
 * Prints "ready" once its sockets are bound; on SIGINT or SIGTERM it prints the datagrams it read
 * and exits. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64
#define MAX_SOCKETS 64
#define RECV_BUFFER (16 << 20)

static volatile sig_atomic_t stopped = 0;

static void stop(int signal) {
    (void)signal;
    stopped = 1;
}

static int bind_udp(const char *address, int port) {
    struct sockaddr_in at;
    memset(&at, 0, sizeof at);
    at.sin_family = AF_INET;
    at.sin_port = htons((unsigned short)port);
    if (inet_pton(AF_INET, address, &at.sin_addr) != 1) {
        fprintf(stderr, "recvmmsg_floor: %s is not an IPv4 address\n", address);
        exit(2);
    }
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    int size = RECV_BUFFER;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof size) != 0 ||
        bind(fd, (struct sockaddr *)&at, sizeof at) != 0) {
        fprintf(stderr, "recvmmsg_floor: cannot bind udp %s:%d: %s\n", address, port, strerror(errno));
        exit(2);
    }
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: recvmmsg_floor ADDRESS FIRST_PORT SOCKETS PACKET_LENGTH\n");
        return 2;
    }
    int first_port = atoi(argv[2]), sockets = atoi(argv[3]);
    size_t length = (size_t)atol(argv[4]) + 1; /* one more, as the network source reads */
    if (sockets < 1 || sockets > MAX_SOCKETS || length < 2) {
        fprintf(stderr, "recvmmsg_floor: 1 to %d sockets and a positive packet length\n", MAX_SOCKETS);
        return 2;
    }
    struct sigaction on_stop;
    memset(&on_stop, 0, sizeof on_stop);
    on_stop.sa_handler = stop; /* no SA_RESTART: epoll_wait returns EINTR */
    sigaction(SIGINT, &on_stop, NULL);
    sigaction(SIGTERM, &on_stop, NULL);

    int poll = epoll_create1(0), fds[MAX_SOCKETS];
    for (int k = 0; k < sockets; k++) {
        fds[k] = bind_udp(argv[1], first_port + k);
        struct epoll_event interest = {.events = EPOLLIN, .data.u32 = (unsigned)k};
        epoll_ctl(poll, EPOLL_CTL_ADD, fds[k], &interest);
    }
    char *buffers = malloc(BATCH * length);
    struct iovec iov[BATCH];
    struct mmsghdr messages[BATCH];
    for (int i = 0; i < BATCH; i++) {
        iov[i] = (struct iovec){.iov_base = buffers + i * length, .iov_len = length};
        messages[i] = (struct mmsghdr){.msg_hdr = {.msg_iov = &iov[i], .msg_iovlen = 1}};
    }
    printf("ready\n");
    fflush(stdout);

    unsigned long long received = 0;
    struct epoll_event events[MAX_SOCKETS];
    while (!stopped) {
        int ready = epoll_wait(poll, events, MAX_SOCKETS, -1);
        for (int e = 0; e < ready; e++) {
            int fd = fds[events[e].data.u32];
            int got;
            while ((got = recvmmsg(fd, messages, BATCH, MSG_DONTWAIT, NULL)) > 0) {
                received += (unsigned long long)got;
            }
        }
    }
    printf("%llu\n", received);
    return 0;
}
