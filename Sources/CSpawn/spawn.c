// posix_spawn with the GNU extensions Swift's Glibc module does not import (closefrom, chdir): ChildProcess's start,
// instead of Foundation's Process.run(), which on Linux can read past a readdir buffer while it lists /proc/self/fd
// and crash the parent (swift-corelibs-foundation, findMaximumOpenFromProcSelfFD).
#define _GNU_SOURCE
#include "CSpawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>

int cspawn_start(pid_t *pid, const char *path, char *const argv[], char *const envp[], const char *directory,
                 int stdin_fd, int stdout_fd, int stderr_fd) {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int result = posix_spawn_file_actions_init(&actions);
    if (result != 0) return result;
    result = posix_spawnattr_init(&attributes);
    if (result != 0) {
        posix_spawn_file_actions_destroy(&actions);
        return result;
    }
    const int targets[3] = {0, 1, 2};
    const int sources[3] = {stdin_fd, stdout_fd, stderr_fd};
    for (int index = 0; index < 3 && result == 0; index++) {
        if (sources[index] >= 0) {
            result = posix_spawn_file_actions_adddup2(&actions, sources[index], targets[index]);
        } else {
            result = posix_spawn_file_actions_addopen(&actions, targets[index], "/dev/null",
                                                      index == 0 ? O_RDONLY : O_WRONLY, 0);
        }
    }
    if (result == 0) result = posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    if (result == 0 && directory != NULL) result = posix_spawn_file_actions_addchdir_np(&actions, directory);
    sigset_t empty, all;
    sigemptyset(&empty);
    sigfillset(&all);
    if (result == 0) result = posix_spawnattr_setsigmask(&attributes, &empty);
    if (result == 0) result = posix_spawnattr_setsigdefault(&attributes, &all);
    if (result == 0) result = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    if (result == 0) {
        if (strchr(path, '/') != NULL) {
            result = posix_spawn(pid, path, &actions, &attributes, argv, envp);
        } else {
            result = posix_spawnp(pid, path, &actions, &attributes, argv, envp);
        }
    }
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    return result;
}
