#include "CMicroHTTPDShim.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct cmhd_ticker {
    int wake_fd;
    pthread_t thread;
    cmhd_tick_function tick;
    void *context;
    int period_ms;
};

static void *cmhd_ticker_loop(void *argument) {
    struct cmhd_ticker *ticker = argument;
    struct pollfd wake = {.fd = ticker->wake_fd, .events = POLLIN};
    for (;;) {
        int ready = poll(&wake, 1, ticker->period_ms);
        if (ready > 0 || (ready < 0 && errno != EINTR)) {
            return NULL;
        }
        if (ready == 0) {
            ticker->tick(ticker->context);
        }
    }
}

struct cmhd_ticker *cmhd_ticker_start(int period_ms, cmhd_tick_function tick, void *context) {
    struct cmhd_ticker *ticker = calloc(1, sizeof *ticker);
    if (ticker == NULL) {
        return NULL;
    }
    ticker->tick = tick;
    ticker->context = context;
    ticker->period_ms = period_ms;
    ticker->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (ticker->wake_fd >= 0 && pthread_create(&ticker->thread, NULL, cmhd_ticker_loop, ticker) == 0) {
        return ticker;
    }
    int saved = errno;
    if (ticker->wake_fd >= 0) {
        close(ticker->wake_fd);
    }
    free(ticker);
    errno = saved;
    return NULL;
}

void cmhd_ticker_stop(struct cmhd_ticker *ticker) {
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(ticker->wake_fd, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
    pthread_join(ticker->thread, NULL);
    close(ticker->wake_fd);
    free(ticker);
}
