#include "CMicroHTTPDShim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

// A ticker whose tick pokes the listener when the owner's tick function asks for it.
struct cmhd_accept_watchdog {
    struct cmhd_ticker *ticker;
    cmhd_watchdog_tick_function tick;
    cmhd_poke_bound_function bound;
    void *context;
    char host[64];
    uint16_t port;
};

static void cmhd_accept_watchdog_tick(void *argument) {
    struct cmhd_accept_watchdog *watchdog = argument;
    if (watchdog->tick(watchdog->context)) {
        (void)cmhd_poke(watchdog->host, watchdog->port, watchdog->bound, watchdog->context);
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
    watchdog->tick = tick;
    watchdog->bound = bound;
    watchdog->context = context;
    watchdog->ticker = cmhd_ticker_start(period_ms, cmhd_accept_watchdog_tick, watchdog);
    if (watchdog->ticker == NULL) {
        int saved = errno;
        free(watchdog);
        errno = saved;
        return NULL;
    }
    return watchdog;
}

void cmhd_accept_watchdog_stop(struct cmhd_accept_watchdog *watchdog) {
    cmhd_ticker_stop(watchdog->ticker);
    free(watchdog);
}
