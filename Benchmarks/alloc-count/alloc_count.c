/*
 * Counts a process's heap allocations and writes, for Benchmarks/check_thresholds.py: loaded with LD_PRELOAD, it
 * forwards malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign to glibc and counts each call (free is
 * counted apart), and counts the calls that write bytes out (write, writev, send, sendto, sendmsg) before passing
 * them on. On SIGUSR2 it writes "allocations N frees M writes W\n" to the file named by ALLOC_COUNT_FILE (replacing
 * it), so a script can read the counts before and after a window of work. Counts do not depend on timing: the same
 * requests make the same allocations and writes whatever else the machine is doing.
 *
 * Build: gcc -O2 -Wall -shared -fPIC -o alloc_count.so alloc_count.c -ldl
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_ulong allocations;
static atomic_ulong frees;
static atomic_ulong writes;

void *malloc(size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}

void free(void *pointer) {
    if (pointer != NULL) atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    __libc_free(pointer);
}

/* The write family: counted, then passed to the next definition (glibc's), found once when the library loads. */
static __typeof__(&write) next_write;
static __typeof__(&writev) next_writev;
static __typeof__(&send) next_send;
static __typeof__(&sendto) next_sendto;
static __typeof__(&sendmsg) next_sendmsg;

ssize_t write(int fd, const void *buffer, size_t count) {
    atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
    return next_write(fd, buffer, count);
}

ssize_t writev(int fd, const struct iovec *vector, int count) {
    atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
    return next_writev(fd, vector, count);
}

ssize_t send(int fd, const void *buffer, size_t length, int flags) {
    atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
    return next_send(fd, buffer, length, flags);
}

ssize_t sendto(int fd, const void *buffer, size_t length, int flags, const struct sockaddr *to, socklen_t size) {
    atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
    return next_sendto(fd, buffer, length, flags, to, size);
}

ssize_t sendmsg(int fd, const struct msghdr *message, int flags) {
    atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
    return next_sendmsg(fd, message, flags);
}

/* Decimal digits of value at the end of buffer; returns where they start (async-signal-safe, unlike snprintf). */
static char *digits(unsigned long value, char *end) {
    do { *--end = (char)('0' + value % 10); value /= 10; } while (value != 0);
    return end;
}

static void report(int signal) {
    (void)signal;
    int saved = errno;
    const char *path = getenv("ALLOC_COUNT_FILE");
    if (path != NULL) {
        char line[128];
        char a[24], f[24], w[24];
        char *as = digits(atomic_load(&allocations), a + sizeof a);
        char *fs = digits(atomic_load(&frees), f + sizeof f);
        char *ws = digits(atomic_load(&writes), w + sizeof w);
        size_t n = 0;
        memcpy(line + n, "allocations ", 12); n += 12;
        memcpy(line + n, as, (size_t)(a + sizeof a - as)); n += (size_t)(a + sizeof a - as);
        memcpy(line + n, " frees ", 7); n += 7;
        memcpy(line + n, fs, (size_t)(f + sizeof f - fs)); n += (size_t)(f + sizeof f - fs);
        memcpy(line + n, " writes ", 8); n += 8;
        memcpy(line + n, ws, (size_t)(w + sizeof w - ws)); n += (size_t)(w + sizeof w - ws);
        line[n++] = '\n';
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ssize_t written = next_write(fd, line, n); /* not counted */
            (void)written;
            close(fd);
        }
    }
    errno = saved;
}

__attribute__((constructor)) static void install(void) {
    next_write = (__typeof__(&write))dlsym(RTLD_NEXT, "write");
    next_writev = (__typeof__(&writev))dlsym(RTLD_NEXT, "writev");
    next_send = (__typeof__(&send))dlsym(RTLD_NEXT, "send");
    next_sendto = (__typeof__(&sendto))dlsym(RTLD_NEXT, "sendto");
    next_sendmsg = (__typeof__(&sendmsg))dlsym(RTLD_NEXT, "sendmsg");
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = report;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, NULL);
}
