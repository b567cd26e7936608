#ifndef CSPAWN_H
#define CSPAWN_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Starts `path` (searched on the PATH when it has no slash) with `argv` and `envp` (both NULL-terminated) in
/// `directory` (NULL: this process's), with `stdin_fd`, `stdout_fd` and `stderr_fd` as its standard streams (-1:
/// /dev/null). No other descriptor of this process reaches the child, its signal mask is empty and every signal has its
/// default action. Returns 0 and sets `*pid`, or an errno value.
int cspawn_start(pid_t *pid, const char *path, char *const argv[], char *const envp[], const char *directory,
                 int stdin_fd, int stdout_fd, int stderr_fd);

#ifdef __cplusplus
}
#endif

#endif
