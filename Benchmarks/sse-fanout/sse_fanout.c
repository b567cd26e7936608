/*
 * SSE fan-out load generator for the gateway (one process, epoll, non-blocking sockets, loopback).
 *
 * 1. Opens STREAMS connections to `GET <stream-path>` and waits until every stream has its first event (the current
 *    value). The gateway's RSS (from /proc/PID/status) is read after 20 warm-up streams and again once all streams
 *    are open and idle: (after - before) / streams is the user-space memory per idle stream (kernel socket buffers
 *    are not in RSS).
 * 2. ROUNDS times: takes a CLOCK_MONOTONIC timestamp, sends one `POST <mutation-path>` with BODY on a separate
 *    keep-alive connection, then reads every stream until each has one more event, stamping each stream when its
 *    event is read. Prints min/p50/p99/max of (arrival - send) over all streams and rounds (min: the fixed cost of a
 *    change before the first stream has it), and per round the time until
 *    the last stream had it.
 *
 * STREAM_PATH may instead be `@FILE`: one line per stream kind, `INITIAL AFFECTED PATH` (stream i uses line
 * i % lines): INITIAL events open the stream (one: the first transition holds every subscription's value), AFFECTED
 * (0 or 1) says whether the mutation changes one of its queries. Latencies are then measured over the affected
 * streams only, and an event on an unaffected stream is counted as spurious.
 *
 * The client runs on the same cores as the gateway: its own CPU time per round is printed (getrusage), so its share
 * of the latency can be judged. An event is recognised by "\nid: " in the raw (chunked) byte stream.
 *
 * Build: gcc -O2 -Wall -o sse_fanout sse_fanout.c
 * Usage: sse_fanout PORT GATEWAY_PID STREAMS ROUNDS STREAM_PATH MUTATION_PATH BODY
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char needle[] = "\nid: ";
#define NEEDLE_LEN 5

struct stream {
    int fd;
    int initial;      /* events that open the stream */
    int affected;     /* whether each mutation sends it an event */
    const char *request;
    int request_length;
    int match;        /* bytes of `needle` matched so far */
    int events;       /* events seen */
    double arrival;   /* when the awaited event was read */
};

static struct stream *streams;
static int epfd;
static unsigned short port;

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double cpu_ms(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e3 + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e3;
}

static long rss_kib(int pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kib = atol(line + 6);
    fclose(f);
    return kib;
}

static int connect_to(int nonblocking) {
    int fd = socket(AF_INET, SOCK_STREAM | (nonblocking ? SOCK_NONBLOCK : 0), 0);
    if (fd < 0) { perror("socket"); exit(1); }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) { perror("connect"); exit(1); }
    return fd;
}

/* Reads what is available on stream i; returns events newly seen, -1 when the stream closed. */
static int drain(int i) {
    char buffer[4096];
    int found = 0;
    for (;;) {
        ssize_t n = read(streams[i].fd, buffer, sizeof buffer);
        if (n > 0) {
            for (ssize_t k = 0; k < n; k++) {
                char c = buffer[k];
                if (c == needle[streams[i].match]) {
                    if (++streams[i].match == NEEDLE_LEN) { found++; streams[i].match = 0; }
                } else {
                    streams[i].match = (c == needle[0]) ? 1 : 0;
                }
            }
            continue;
        }
        if (n == 0) return -1;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return found;
        if (errno == EINTR) continue;
        return -1;
    }
}

/* The events stream i has once `rounds` mutations went out. */
static int target_of(int i, int rounds) { return streams[i].initial + (streams[i].affected ? rounds : 0); }

/* Waits until every stream in [0, count) has its events after `rounds` mutations; stamps arrivals. Returns 0, or -1
 * on timeout. */
static int wait_all(int count, int rounds, double timeout_ms) {
    struct epoll_event evs[512];
    int done = 0;
    for (int i = 0; i < count; i++) if (streams[i].events >= target_of(i, rounds)) done++;
    double deadline = now_ms() + timeout_ms;
    while (done < count) {
        int left = (int)(deadline - now_ms());
        if (left <= 0) return -1;
        int n = epoll_wait(epfd, evs, 512, left);
        for (int e = 0; e < n; e++) {
            int i = evs[e].data.u32;
            int before = streams[i].events, target = target_of(i, rounds);
            int got = drain(i);
            double t = now_ms();
            if (got < 0) { fprintf(stderr, "stream %d closed by the server after %d events\n", i, before); exit(1); }
            streams[i].events += got;
            if (before < target && streams[i].events >= target) { streams[i].arrival = t; done++; }
        }
    }
    return 0;
}

static int open_streams(int from, int to) {
    for (int i = from; i < to; i++) {
        streams[i].fd = connect_to(1);
        struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLET, .data.u32 = i};
        epoll_ctl(epfd, EPOLL_CTL_ADD, streams[i].fd, &ev);
    }
    /* Connected once writable: send the request (small, fits the socket buffer). */
    int sent = 0;
    struct epoll_event evs[512];
    char *wrote = calloc(to - from, 1);
    double deadline = now_ms() + 30000;
    while (sent < to - from && now_ms() < deadline) {
        int n = epoll_wait(epfd, evs, 512, 1000);
        for (int e = 0; e < n; e++) {
            int i = evs[e].data.u32;
            if (i < from || i >= to || wrote[i - from]) {
                /* Edge-triggered: read now, or this readiness is never reported again. */
                int got = drain(i);
                if (got < 0) { fprintf(stderr, "stream %d closed by the server while opening\n", i); exit(1); }
                streams[i].events += got;
                continue;
            }
            if (!(evs[e].events & EPOLLOUT)) continue;
            if (write(streams[i].fd, streams[i].request, streams[i].request_length) != streams[i].request_length) {
                perror("write request");
                exit(1);
            }
            wrote[i - from] = 1;
            sent++;
            struct epoll_event in = {.events = EPOLLIN | EPOLLET, .data.u32 = i};
            epoll_ctl(epfd, EPOLL_CTL_MOD, streams[i].fd, &in);
            int got = drain(i);
            if (got < 0) { fprintf(stderr, "stream %d closed by the server while opening\n", i); exit(1); }
            streams[i].events += got;
        }
    }
    free(wrote);
    if (sent < to - from) return -1;
    return wait_all(to, 0, 30000);
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *sorted, int n, double p) {
    int index = (int)(p / 100.0 * n + 0.999999) - 1;
    if (index < 0) index = 0;
    if (index >= n) index = n - 1;
    return sorted[index];
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s PORT GATEWAY_PID STREAMS ROUNDS STREAM_PATH MUTATION_PATH BODY\n", argv[0]);
        return 2;
    }
    /* Each line as it happens, also into a pipe or a file: a tool watching the output (a profiler's window) sees the
       summary before the streams close. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    port = (unsigned short)atoi(argv[1]);
    int pid = atoi(argv[2]), count = atoi(argv[3]), rounds = atoi(argv[4]);
    const char *stream_path = argv[5], *mutation_path = argv[6], *body = argv[7];
    const int warm = 20;
    if (count < warm) { fprintf(stderr, "need at least %d streams\n", warm); return 2; }
    streams = calloc(count, sizeof *streams);
    epfd = epoll_create1(0);

    /* Stream kinds: one (every stream on STREAM_PATH, affected) or the lines of @FILE. */
    char *kinds_request[4096];
    int kinds_length[4096], kinds_initial[4096], kinds_affected[4096], kinds = 0;
    char line[8192], path[8000];
    FILE *file = stream_path[0] == '@' ? fopen(stream_path + 1, "r") : NULL;
    if (stream_path[0] == '@' && !file) { perror(stream_path + 1); return 2; }
    while (kinds < 4096) {
        int initial = 1, affected = 1;
        if (file) {
            if (!fgets(line, sizeof line, file)) break;
            if (sscanf(line, "%d %d %7999s", &initial, &affected, path) != 3) continue;
        } else {
            if (kinds == 1) break;
            snprintf(path, sizeof path, "%s", stream_path);
        }
        size_t size = strlen(path) + 128;
        kinds_request[kinds] = malloc(size);
        kinds_length[kinds] = snprintf(kinds_request[kinds], size,
                                       "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n", path);
        kinds_initial[kinds] = initial;
        kinds_affected[kinds] = affected;
        kinds++;
    }
    if (file) fclose(file);
    if (kinds == 0) { fprintf(stderr, "no stream paths\n"); return 2; }
    int affected_count = 0;
    for (int i = 0; i < count; i++) {
        int k = i % kinds;
        streams[i].request = kinds_request[k];
        streams[i].request_length = kinds_length[k];
        streams[i].initial = kinds_initial[k];
        streams[i].affected = kinds_affected[k];
        affected_count += kinds_affected[k];
    }

    if (open_streams(0, warm) < 0) { fprintf(stderr, "warm-up streams did not open\n"); return 1; }
    usleep(500000);
    long before = rss_kib(pid);
    double t_open = now_ms();
    for (int from = warm; from < count; from += 500) {
        int to = from + 500 < count ? from + 500 : count;
        if (open_streams(from, to) < 0) {
            fprintf(stderr, "streams %d..%d did not all get their first event\n", from, to);
            return 1;
        }
    }
    double opened_in = now_ms() - t_open;
    sleep(2);
    long after = rss_kib(pid);
    printf("streams=%d opened_in_ms=%.0f rss_before_kib=%ld rss_after_kib=%ld per_stream_kib=%.2f\n", count,
           opened_in, before, after, (double)(after - before) / (count - warm));
    fflush(stdout);

    int mutation = connect_to(0);
    char post[2048];
    int post_length = snprintf(post, sizeof post,
                               "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                               "Content-Length: %zu\r\n\r\n%s",
                               mutation_path, strlen(body), body);
    double *latencies = malloc(sizeof(double) * (size_t)count * rounds);
    double *round_max = malloc(sizeof(double) * rounds);
    int measured = 0;
    for (int r = 0; r < rounds; r++) {
        usleep(300000);
        double cpu0 = cpu_ms();
        double t0 = now_ms();
        if (write(mutation, post, post_length) != post_length) { perror("write mutation"); return 1; }
        if (wait_all(count, r + 1, 30000) < 0) {
            int missing = 0;
            for (int i = 0; i < count; i++) if (streams[i].events < target_of(i, r + 1)) missing++;
            fprintf(stderr, "round %d: %d streams did not get the event within 30 s\n", r + 1, missing);
            return 1;
        }
        double cpu = cpu_ms() - cpu0;
        char reply[4096];
        ssize_t n = read(mutation, reply, sizeof reply - 1);
        if (n <= 0 || strncmp(reply, "HTTP/1.1 200", 12) != 0) {
            fprintf(stderr, "mutation failed: %.*s\n", n > 0 ? (int)n : 0, reply);
            return 1;
        }
        double worst = 0;
        for (int i = 0; i < count; i++) {
            if (!streams[i].affected) continue;
            double l = streams[i].arrival - t0;
            latencies[measured++] = l;
            if (l > worst) worst = l;
        }
        round_max[r] = worst;
        printf("round %d: last stream after %.1f ms, client cpu %.1f ms\n", r + 1, worst, cpu);
        fflush(stdout);
    }
    /* Unaffected streams must not have heard of the mutations (drain what arrived meanwhile first). */
    usleep(300000);
    int spurious = 0;
    for (int i = 0; i < count; i++) {
        int got = drain(i);
        if (got > 0) streams[i].events += got;
        if (streams[i].events > target_of(i, rounds)) spurious += streams[i].events - target_of(i, rounds);
    }
    printf("affected_streams=%d spurious_events=%d\n", affected_count, spurious);
    qsort(latencies, measured, sizeof *latencies, compare);
    qsort(round_max, rounds, sizeof *round_max, compare);
    printf("fanout streams=%d rounds=%d events=%d min_ms=%.2f p50_ms=%.2f p99_ms=%.2f max_ms=%.2f "
           "median_round_last_ms=%.2f\n",
           count, rounds, measured, latencies[0], percentile(latencies, measured, 50), percentile(latencies, measured, 99),
           latencies[measured - 1], percentile(round_max, rounds, 50));
    printf("spread p10_ms=%.2f p25_ms=%.2f p75_ms=%.2f p90_ms=%.2f\n", percentile(latencies, measured, 10),
           percentile(latencies, measured, 25), percentile(latencies, measured, 75), percentile(latencies, measured, 90));
    for (int i = 0; i < count; i++) close(streams[i].fd);
    close(mutation);
    return 0;
}
