#ifndef CMICROHTTPD_SHIM_WRAPPERS_H
#define CMICROHTTPD_SHIM_WRAPPERS_H

// Non-variadic, prefixed wrappers around the variadic libmicrohttpd calls, which Swift cannot import.

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#if !__has_include(<microhttpd.h>)
#error "libmicrohttpd's headers are missing: scripts/gateway and scripts/test install them (Debian: apt-get install libmicrohttpd-dev zlib1g-dev pkg-config)"
#endif
#include <microhttpd.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Receives one formatted libmicrohttpd log line (no trailing newline).
typedef void (*cmhd_log_function)(void *context, const char *message);

/// A log sink handed to `cmhd_start_daemon`; must stay valid until `MHD_stop_daemon` returns.
struct cmhd_logger {
    cmhd_log_function function;
    void *context;
};

/// `MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
///   [MHD_OPTION_EXTERNAL_LOGGER, logger,] MHD_OPTION_ARRAY, options, MHD_OPTION_END)`.
/// `options` must end with an `MHD_OPTION_END` item; `logger` may be NULL.
struct MHD_Daemon *cmhd_start_daemon(unsigned int flags,
                                     uint16_t port,
                                     MHD_AccessHandlerCallback handler,
                                     void *handler_cls,
                                     const struct MHD_OptionItem *options,
                                     const struct cmhd_logger *logger);

/// Parses a numeric IPv4 or IPv6 address into `out` with `port`.
/// Returns 4 or 6 for the family parsed, 0 if `host` is not a numeric address.
int cmhd_make_sockaddr(const char *host, uint16_t port, struct sockaddr_storage *out);

/// Writes the numeric host of `address` into `buffer` and its port into `port`. Returns 1 on success, 0 otherwise.
int cmhd_format_sockaddr(const struct sockaddr *address, char *buffer, size_t buffer_size, uint16_t *port);

/// `MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS)->client_addr`, or NULL.
const struct sockaddr *cmhd_connection_client_address(struct MHD_Connection *connection);

/// The port of the client's address (IPv4 or IPv6), or 0.
uint16_t cmhd_connection_client_port(struct MHD_Connection *connection);

/// `MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT)->socket_context`, or NULL.
void *cmhd_connection_socket_context(struct MHD_Connection *connection);

/// `MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, seconds)`; 0 disables the idle timeout.
enum MHD_Result cmhd_connection_set_timeout(struct MHD_Connection *connection, unsigned int seconds);

/// `MHD_get_daemon_info(d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS)->num_connections`, or 0.
unsigned int cmhd_daemon_current_connections(struct MHD_Daemon *daemon);

/// `MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port`, or 0.
uint16_t cmhd_daemon_bind_port(struct MHD_Daemon *daemon);

/// `MHD_get_daemon_info(d, MHD_DAEMON_INFO_FLAGS)->flags` (effective flags), or 0.
unsigned int cmhd_daemon_flags(struct MHD_Daemon *daemon);

/// `MHD_set_response_options(r, flags, MHD_RO_END)`.
enum MHD_Result cmhd_response_set_flags(struct MHD_Response *response, enum MHD_ResponseFlags flags);

/// `MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD)->connect_fd`, or -1.
int cmhd_connection_fd(struct MHD_Connection *connection);

/// `MHD_get_connection_info(c, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE)->header_size`: the request's line and header
/// fields through the blank line, from its method; 0 before the head is parsed.
size_t cmhd_connection_header_size(struct MHD_Connection *connection);

// MARK: Heads libmicrohttpd refuses itself

/// Notes, on the connection's libmicrohttpd thread, that its request line has been read (the URI log callback).
void cmhd_pending_head_add(struct MHD_Connection *connection);

/// Its head reached the access handler, or it closed (on its thread).
void cmhd_pending_head_remove(struct MHD_Connection *connection);

/// Of the calling thread's connections noted and not removed, the one whose head libmicrohttpd has parsed and no
/// response is queued for, or NULL: from libmicrohttpd's log function, the connection whose fields it refuses now
/// (a `Content-Length` it cannot read, a `Cookie` its pool cannot copy), before it queues its own answer.
struct MHD_Connection *cmhd_pending_head_refused_by_library(void);

/// Room for a chunk's head: 16 hex digits and CRLF.
#define CMHD_CHUNK_HEAD_CAPACITY 24

/// Writes the head of an HTTP/1.1 chunk of `length` bytes, `<hex length>\r\n` (lowercase, no leading zeros), into
/// `head`; returns its length.
size_t cmhd_chunk_head(size_t length, uint8_t head[CMHD_CHUNK_HEAD_CAPACITY]);

/// Sends `length` bytes (at least one) to the socket `fd` as one HTTP/1.1 chunk, `<hex length>\r\n<bytes>\r\n`, in one
/// `sendmsg` that does not block. Returns the number of the chunk's bytes the kernel took (`*chunk_length` is all of
/// them), or `-errno`.
ssize_t cmhd_send_chunk(int fd, const uint8_t *bytes, size_t length, size_t *chunk_length);

/// Sends `length` bytes to the socket `fd` without blocking: the number the kernel took, or `-errno`.
ssize_t cmhd_send_some(int fd, const uint8_t *bytes, size_t length);

/// `shutdown(fd, SHUT_RD)` on a listening socket: on Linux it stops listening (a new connect is refused, and one
/// waiting in the listen queue is reset) while the descriptor stays open. 0, or `-errno`.
int cmhd_stop_listening(int fd);

/// Called by `cmhd_poke` with the local port its socket was bound to, before it connects.
typedef void (*cmhd_poke_bound_function)(void *context, uint16_t source_port);

/// Connects to `host`:`port` (the loopback address for a wildcard host) and closes at once, blocking at most 1 s:
/// a new connection on a listening socket wakes every libmicrohttpd worker that watches it. The socket is bound to
/// an ephemeral port first, which `bound` (if not NULL) is told before the connect. 0, or -1 with errno.
int cmhd_poke(const char *host, uint16_t port, cmhd_poke_bound_function bound, void *context);

/// Called by the accept watchdog's thread every period; returns nonzero to have the listener poked (`cmhd_poke`).
typedef int (*cmhd_watchdog_tick_function)(void *context);

struct cmhd_accept_watchdog;

/// Starts a thread that calls `tick` every `period_ms` and pokes `host`:`port` when it returns nonzero, telling
/// `bound` each poke's source port before it connects; NULL with errno on failure.
struct cmhd_accept_watchdog *cmhd_accept_watchdog_start(const char *host, uint16_t port, int period_ms,
                                                        cmhd_watchdog_tick_function tick,
                                                        cmhd_poke_bound_function bound, void *context);

/// Stops the thread (joining it) and frees the watchdog.
void cmhd_accept_watchdog_stop(struct cmhd_accept_watchdog *watchdog);

// MARK: Ticker

/// Called on the ticker's thread every period.
typedef void (*cmhd_tick_function)(void *context);

struct cmhd_ticker;

/// Starts a thread that calls `tick` with `context` every `period_ms` until `cmhd_ticker_stop`; NULL with errno on
/// failure.
struct cmhd_ticker *cmhd_ticker_start(int period_ms, cmhd_tick_function tick, void *context);

/// Stops the thread (joining it) and frees the ticker. Not from the ticker's own thread.
void cmhd_ticker_stop(struct cmhd_ticker *ticker);

// MARK: Hang-up watcher

/// Told, on the watcher's thread, the token of a watched socket whose peer hung up or that failed (`hung_up` 1), or,
/// for a socket also watched for writability, that it can take more (`hung_up` 0).
typedef void (*cmhd_hangup_function)(void *context, uint64_t token, int hung_up);

/// One epoll set and one thread that report when the peer of a watched socket closes its side
/// (`EPOLLRDHUP`, `EPOLLHUP`, `EPOLLERR`). libmicrohttpd does not watch suspended connections; this does.
struct cmhd_hangup_watcher;

/// Starts the watcher's thread; `function` is called with `context` for every hang-up, once per watch.
/// Returns NULL (with errno set) if the epoll set, the wake-up eventfd or the thread cannot be made.
struct cmhd_hangup_watcher *cmhd_hangup_watcher_start(cmhd_hangup_function function, void *context);

/// Watches `fd` under `token` (not 0) until `cmhd_hangup_watcher_remove`. A peer that already hung up
/// is reported at once. Returns 0, or -1 with errno set.
int cmhd_hangup_watcher_add(struct cmhd_hangup_watcher *watcher, int fd, uint64_t token);

/// Also reports, from now on, when the watched `fd` becomes writable (edge-triggered: after a send that found it
/// full), once at once if it is. Returns 0, or -1 with errno set.
int cmhd_hangup_watcher_watch_writable(struct cmhd_hangup_watcher *watcher, int fd, uint64_t token);

/// Stops watching `fd` (still open). A report already taken from the set may still arrive: the owner
/// matches tokens, not descriptors.
void cmhd_hangup_watcher_remove(struct cmhd_hangup_watcher *watcher, int fd);

/// Stops the thread, waits for it, and frees the watcher. Not from the watcher's own thread.
void cmhd_hangup_watcher_stop(struct cmhd_hangup_watcher *watcher);

/// The whole CPUs this process may use: its affinity mask's (taskset, a container's --cpuset-cpus), at most its
/// cgroup v2 CPU quota rounded up (a container's --cpus), at least 1.
int cmhd_available_cpus(void);

/// ThreadSanitizer's happens-before edges, for a hand-off it cannot see (Synchronization.Mutex passes a contended lock
/// over in the kernel): what a thread did before `cmhd_tsan_release(address)` happens before what another does after
/// a later `cmhd_tsan_acquire(address)`. Nothing in a build without ThreadSanitizer; Swift calls them only under
/// `THREAD_SANITIZER`.
void cmhd_tsan_release(const void *address);
void cmhd_tsan_acquire(const void *address);

#ifdef __cplusplus
}
#endif

#endif
