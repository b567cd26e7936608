#include "CMicroHTTPDShim.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cmhd_accept_watchdog {
    int wake_fd;
    pthread_t thread;
    cmhd_watchdog_tick_function tick;
    cmhd_poke_bound_function bound;
    void *context;
    char host[64];
    uint16_t port;
    int period_ms;
};

static void *cmhd_accept_watchdog_loop(void *argument) {
    struct cmhd_accept_watchdog *watchdog = argument;
    struct pollfd wake = {.fd = watchdog->wake_fd, .events = POLLIN};
    for (;;) {
        int ready = poll(&wake, 1, watchdog->period_ms);
        if (ready > 0) {
            return NULL;
        }
        if (ready < 0 && errno != EINTR) {
            return NULL;
        }
        if (ready == 0 && watchdog->tick(watchdog->context)) {
            (void)cmhd_poke(watchdog->host, watchdog->port, watchdog->bound, watchdog->context);
        }
    }
}

struct cmhd_accept_watchdog *cmhd_accept_watchdog_start(const char *host, uint16_t port, int period_ms,
                                                        cmhd_watchdog_tick_function tick,
                                                        cmhd_poke_bound_function bound, void *context) {
    struct cmhd_accept_watchdog *watchdog = calloc(1, sizeof *watchdog);
    if (watchdog == NULL || strlen(host) >= sizeof watchdog->host) {
        free(watchdog);
        errno = EINVAL;
        return NULL;
    }
    strcpy(watchdog->host, host);
    watchdog->port = port;
    watchdog->period_ms = period_ms;
    watchdog->tick = tick;
    watchdog->bound = bound;
    watchdog->context = context;
    watchdog->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (watchdog->wake_fd >= 0 && pthread_create(&watchdog->thread, NULL, cmhd_accept_watchdog_loop, watchdog) == 0) {
        return watchdog;
    }
    int saved = errno;
    if (watchdog->wake_fd >= 0) {
        close(watchdog->wake_fd);
    }
    free(watchdog);
    errno = saved;
    return NULL;
}

void cmhd_accept_watchdog_stop(struct cmhd_accept_watchdog *watchdog) {
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(watchdog->wake_fd, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
    pthread_join(watchdog->thread, NULL);
    close(watchdog->wake_fd);
    free(watchdog);
}
