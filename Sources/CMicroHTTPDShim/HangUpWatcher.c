#include "CMicroHTTPDShim.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

// The wake-up eventfd is registered under token 0; every other token is the owner's.
enum { CMHD_WAKE_TOKEN = 0, CMHD_EVENTS_PER_WAIT = 64 };

struct cmhd_hangup_watcher {
    int epoll_fd;
    int wake_fd;
    pthread_t thread;
    cmhd_hangup_function function;
    void *context;
};

static void *cmhd_hangup_watcher_loop(void *argument) {
    struct cmhd_hangup_watcher *watcher = argument;
    struct epoll_event events[CMHD_EVENTS_PER_WAIT];
    for (;;) {
        int count = epoll_wait(watcher->epoll_fd, events, CMHD_EVENTS_PER_WAIT, -1);
        if (count < 0) {
            if (errno == EINTR) {
                continue;
            }
            return NULL;
        }
        for (int index = 0; index < count; index++) {
            if (events[index].data.u64 == CMHD_WAKE_TOKEN) {
                return NULL;
            }
            uint32_t hang_up = EPOLLRDHUP | EPOLLHUP | EPOLLERR;
            watcher->function(watcher->context, events[index].data.u64, (events[index].events & hang_up) != 0);
        }
    }
}

struct cmhd_hangup_watcher *cmhd_hangup_watcher_start(cmhd_hangup_function function, void *context) {
    struct cmhd_hangup_watcher *watcher = calloc(1, sizeof *watcher);
    if (watcher == NULL) {
        return NULL;
    }
    watcher->function = function;
    watcher->context = context;
    watcher->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    watcher->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (watcher->epoll_fd >= 0 && watcher->wake_fd >= 0) {
        struct epoll_event wake = {.events = EPOLLIN, .data.u64 = CMHD_WAKE_TOKEN};
        if (epoll_ctl(watcher->epoll_fd, EPOLL_CTL_ADD, watcher->wake_fd, &wake) == 0
            && pthread_create(&watcher->thread, NULL, cmhd_hangup_watcher_loop, watcher) == 0) {
            return watcher;
        }
    }
    int saved = errno;
    if (watcher->epoll_fd >= 0) {
        close(watcher->epoll_fd);
    }
    if (watcher->wake_fd >= 0) {
        close(watcher->wake_fd);
    }
    free(watcher);
    errno = saved;
    return NULL;
}

int cmhd_hangup_watcher_add(struct cmhd_hangup_watcher *watcher, int fd, uint64_t token) {
    if (token == CMHD_WAKE_TOKEN) {
        errno = EINVAL;
        return -1;
    }
    // Edge-triggered: one report per hang-up. Data the client sends meanwhile (EPOLLIN) is not asked for.
    struct epoll_event event = {.events = EPOLLRDHUP | EPOLLET, .data.u64 = token};
    return epoll_ctl(watcher->epoll_fd, EPOLL_CTL_ADD, fd, &event);
}

int cmhd_hangup_watcher_watch_writable(struct cmhd_hangup_watcher *watcher, int fd, uint64_t token) {
    if (token == CMHD_WAKE_TOKEN) {
        errno = EINVAL;
        return -1;
    }
    struct epoll_event event = {.events = EPOLLRDHUP | EPOLLOUT | EPOLLET, .data.u64 = token};
    return epoll_ctl(watcher->epoll_fd, EPOLL_CTL_MOD, fd, &event);
}

void cmhd_hangup_watcher_remove(struct cmhd_hangup_watcher *watcher, int fd) {
    struct epoll_event unused = {0};
    (void)epoll_ctl(watcher->epoll_fd, EPOLL_CTL_DEL, fd, &unused);
}

void cmhd_hangup_watcher_stop(struct cmhd_hangup_watcher *watcher) {
    uint64_t one = 1;
    ssize_t written;
    do {
        written = write(watcher->wake_fd, &one, sizeof one);
    } while (written < 0 && errno == EINTR);
    pthread_join(watcher->thread, NULL);
    close(watcher->epoll_fd);
    close(watcher->wake_fd);
    free(watcher);
}
