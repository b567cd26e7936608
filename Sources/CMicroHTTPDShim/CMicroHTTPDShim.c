#include "CMicroHTTPDShim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <unistd.h>

static void cmhd_log_trampoline(void *cls, const char *format, va_list ap) {
    const struct cmhd_logger *logger = cls;
    char message[1024];
    int length = vsnprintf(message, sizeof message, format, ap);
    if (length < 0) {
        return;
    }
    size_t end = (size_t)length < sizeof message ? (size_t)length : sizeof message - 1;
    while (end > 0 && (message[end - 1] == '\n' || message[end - 1] == '\r')) {
        message[--end] = '\0';
    }
    logger->function(logger->context, message);
}

struct MHD_Daemon *cmhd_start_daemon(unsigned int flags,
                                     uint16_t port,
                                     MHD_AccessHandlerCallback handler,
                                     void *handler_cls,
                                     const struct MHD_OptionItem *options,
                                     const struct cmhd_logger *logger) {
    if (logger != NULL && logger->function != NULL) {
        return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                                MHD_OPTION_EXTERNAL_LOGGER, cmhd_log_trampoline, (void *)logger,
                                MHD_OPTION_ARRAY, options,
                                MHD_OPTION_END);
    }
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

int cmhd_make_sockaddr(const char *host, uint16_t port, struct sockaddr_storage *out) {
    memset(out, 0, sizeof *out);
    struct sockaddr_in *v4 = (struct sockaddr_in *)out;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(port);
        return 4;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)out;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(port);
        return 6;
    }
    return 0;
}

int cmhd_format_sockaddr(const struct sockaddr *address, char *buffer, size_t buffer_size, uint16_t *port) {
    if (address == NULL || buffer == NULL || buffer_size == 0) {
        return 0;
    }
    if (address->sa_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)address;
        if (inet_ntop(AF_INET, &v4->sin_addr, buffer, (socklen_t)buffer_size) == NULL) {
            return 0;
        }
        *port = ntohs(v4->sin_port);
        return 1;
    }
    if (address->sa_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)address;
        if (inet_ntop(AF_INET6, &v6->sin6_addr, buffer, (socklen_t)buffer_size) == NULL) {
            return 0;
        }
        *port = ntohs(v6->sin6_port);
        return 1;
    }
    return 0;
}

const struct sockaddr *cmhd_connection_client_address(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

uint16_t cmhd_connection_client_port(struct MHD_Connection *connection) {
    const struct sockaddr *address = cmhd_connection_client_address(connection);
    if (address == NULL) {
        return 0;
    }
    if (address->sa_family == AF_INET) {
        return ntohs(((const struct sockaddr_in *)address)->sin_port);
    }
    if (address->sa_family == AF_INET6) {
        return ntohs(((const struct sockaddr_in6 *)address)->sin6_port);
    }
    return 0;
}

void *cmhd_connection_socket_context(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

enum MHD_Result cmhd_connection_set_timeout(struct MHD_Connection *connection, unsigned int seconds) {
    return MHD_set_connection_option(connection, MHD_CONNECTION_OPTION_TIMEOUT, seconds);
}

unsigned int cmhd_daemon_current_connections(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
    return info == NULL ? 0 : info->num_connections;
}

uint16_t cmhd_daemon_bind_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

unsigned int cmhd_daemon_flags(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_FLAGS);
    return info == NULL ? 0 : (unsigned int)info->flags;
}

enum MHD_Result cmhd_response_set_flags(struct MHD_Response *response, enum MHD_ResponseFlags flags) {
    return MHD_set_response_options(response, flags, MHD_RO_END);
}

int cmhd_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

size_t cmhd_chunk_head(size_t length, uint8_t head[CMHD_CHUNK_HEAD_CAPACITY]) {
    static const char digits[] = "0123456789abcdef";
    size_t head_length = 0;
    for (int shift = 60; shift >= 0; shift -= 4) {
        unsigned digit = (unsigned)(length >> shift) & 0xf;
        if (digit != 0 || head_length > 0 || shift == 0) {
            head[head_length++] = (uint8_t)digits[digit];
        }
    }
    head[head_length++] = '\r';
    head[head_length++] = '\n';
    return head_length;
}

ssize_t cmhd_send_chunk(int fd, const uint8_t *bytes, size_t length, size_t *chunk_length) {
    uint8_t head[CMHD_CHUNK_HEAD_CAPACITY];
    size_t head_length = cmhd_chunk_head(length, head);
    char tail[2] = {'\r', '\n'};
    struct iovec parts[3] = {
        {.iov_base = head, .iov_len = head_length},
        {.iov_base = (void *)bytes, .iov_len = length},
        {.iov_base = tail, .iov_len = sizeof tail},
    };
    struct msghdr message = {.msg_iov = parts, .msg_iovlen = 3};
    *chunk_length = head_length + length + sizeof tail;
    ssize_t sent = sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    return sent < 0 ? -errno : sent;
}

ssize_t cmhd_send_some(int fd, const uint8_t *bytes, size_t length) {
    ssize_t sent = send(fd, bytes, length, MSG_DONTWAIT | MSG_NOSIGNAL);
    return sent < 0 ? -errno : sent;
}

int cmhd_poke(const char *host, uint16_t port, cmhd_poke_bound_function bound, void *context) {
    struct sockaddr_storage address;
    int family = cmhd_make_sockaddr(host, port, &address);
    socklen_t length;
    if (family == 4) {
        struct sockaddr_in *v4 = (struct sockaddr_in *)&address;
        if (v4->sin_addr.s_addr == htonl(INADDR_ANY)) {
            v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        }
        length = sizeof *v4;
    } else if (family == 6) {
        struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&address;
        if (IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr)) {
            v6->sin6_addr = in6addr_loopback;
        }
        length = sizeof *v6;
    } else {
        return -1;
    }
    int fd = socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    // Bound to an ephemeral port before connecting, so that the server can tell this connection from a client's
    // when it accepts it.
    struct sockaddr_storage local;
    memset(&local, 0, sizeof local);
    local.ss_family = address.ss_family;
    socklen_t local_length = length;
    if (bind(fd, (struct sockaddr *)&local, local_length) == 0 &&
        getsockname(fd, (struct sockaddr *)&local, &local_length) == 0 && bound != NULL) {
        uint16_t source_port = family == 4 ? ntohs(((struct sockaddr_in *)&local)->sin_port)
                                           : ntohs(((struct sockaddr_in6 *)&local)->sin6_port);
        bound(context, source_port);
    }
    struct timeval timeout = {.tv_sec = 1, .tv_usec = 0};
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
    int result = connect(fd, (struct sockaddr *)&address, length);
    close(fd);
    return result;
}

int cmhd_stop_listening(int fd) {
    return shutdown(fd, SHUT_RD) == 0 ? 0 : -errno;
}
