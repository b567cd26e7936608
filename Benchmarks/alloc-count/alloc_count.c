/*
 * Counts a process's heap allocations, for Benchmarks/check-thresholds.py: loaded with LD_PRELOAD, it forwards
 * malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign to glibc and counts each call (free is counted
 * apart). On SIGUSR2 it writes "allocations N frees M\n" to the file named by ALLOC_COUNT_FILE (replacing it), so a
 * script can read the count before and after a window of work. Counts do not depend on timing: the same requests
 * make the same allocations whatever else the machine is doing.
 *
 * Build: gcc -O2 -Wall -shared -fPIC -o alloc_count.so alloc_count.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_ulong allocations;
static atomic_ulong frees;

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
        char line[96];
        char a[24], f[24];
        char *as = digits(atomic_load(&allocations), a + sizeof a);
        char *fs = digits(atomic_load(&frees), f + sizeof f);
        size_t n = 0;
        memcpy(line + n, "allocations ", 12); n += 12;
        memcpy(line + n, as, (size_t)(a + sizeof a - as)); n += (size_t)(a + sizeof a - as);
        memcpy(line + n, " frees ", 7); n += 7;
        memcpy(line + n, fs, (size_t)(f + sizeof f - fs)); n += (size_t)(f + sizeof f - fs);
        line[n++] = '\n';
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ssize_t written = write(fd, line, n);
            (void)written;
            close(fd);
        }
    }
    errno = saved;
}

__attribute__((constructor)) static void install(void) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = report;
    action.sa_flags = SA_RESTART;
    sigemptyset(&action.sa_mask);
    sigaction(SIGUSR2, &action, NULL);
}
