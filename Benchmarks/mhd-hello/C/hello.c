/*
 * Minimal libmicrohttpd hello-world: the baseline for the HTTP-layer benchmarks.
 * Same mode as the MicroHTTPD wrapper: epoll internal thread pool, suspend/resume allowed,
 * bound to 127.0.0.1, connection limit 10000, idle timeout 30 s, two-call handler convention
 * (queue on the second call, so keep-alive is kept), the same 50-byte JSON body.
 *
 * Build: gcc -O2 -Wall -o hello hello.c $(pkg-config --cflags --libs libmicrohttpd) -lpthread
 * Usage: hello [port] [threads] [body | @file] [extra-header ...]
 *   body          the response body to serve instead of the 50-byte default (to match another server's body size);
 *                 @file serves the bytes of that file (e.g. a gzip-coded body)
 *   extra-header  more response headers, each as "Name: value" (to match another server's header bytes). With an
 *                 "ETag" among them, a request whose If-None-Match is exactly that tag gets a 304 with the same
 *                 headers but no body and no Content-Type (a second shared response), as a conditional GET would.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char default_body[] = "{\"ok\":true,\"service\":\"gateway\",\"ts\":1700000,\"v\":1}";
static struct MHD_Response *shared_response;
static struct MHD_Response *not_modified_response;
static const char *etag;
static int marker;

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size,
                               void **con_cls) {
    (void)cls; (void)url; (void)method; (void)version; (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &marker; /* first call: headers only, queue nothing */
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (etag != NULL) {
        const char *held = MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
        if (held != NULL && strcmp(held, etag) == 0)
            return MHD_queue_response(connection, MHD_HTTP_NOT_MODIFIED, not_modified_response);
    }
    return MHD_queue_response(connection, MHD_HTTP_OK, shared_response);
}

/* Reads a whole file into a new buffer; exits on failure. */
static char *read_file(const char *path, size_t *size) {
    FILE *file = fopen(path, "rb");
    if (file == NULL || fseek(file, 0, SEEK_END) != 0) {
        fprintf(stderr, "hello: cannot read %s\n", path);
        exit(2);
    }
    long length = ftell(file);
    rewind(file);
    char *bytes = malloc(length > 0 ? (size_t)length : 1);
    if (bytes == NULL || fread(bytes, 1, (size_t)length, file) != (size_t)length) {
        fprintf(stderr, "hello: cannot read %s\n", path);
        exit(2);
    }
    fclose(file);
    *size = (size_t)length;
    return bytes;
}

/* Adds "Name: value" to both responses (the 304 gets every header but Content-Type); remembers an ETag. */
static void add_header(const char *field) {
    char name[256];
    const char *colon = strchr(field, ':');
    size_t length = colon ? (size_t)(colon - field) : 0;
    if (length == 0 || length >= sizeof name) {
        fprintf(stderr, "hello: extra header must be \"Name: value\"\n");
        exit(2);
    }
    memcpy(name, field, length);
    name[length] = 0;
    const char *value = colon + 1;
    while (*value == ' ') value++;
    MHD_add_response_header(shared_response, name, value);
    MHD_add_response_header(not_modified_response, name, value);
    if (strcasecmp(name, MHD_HTTP_HEADER_ETAG) == 0) etag = value;
}

static volatile sig_atomic_t stop_requested;
static void on_signal(int signo) { (void)signo; stop_requested = 1; }

int main(int argc, char **argv) {
    unsigned short port = argc > 1 ? (unsigned short)atoi(argv[1]) : 18081;
    unsigned int threads = argc > 2 ? (unsigned int)atoi(argv[2]) : (unsigned int)sysconf(_SC_NPROCESSORS_ONLN);

    const char *body = argc > 3 ? argv[3] : default_body;
    size_t body_size = strlen(body);
    if (body[0] == '@') body = read_file(body + 1, &body_size);
    shared_response = MHD_create_response_from_buffer(body_size, (void *)body, MHD_RESPMEM_PERSISTENT);
    MHD_add_response_header(shared_response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    not_modified_response = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    for (int i = 4; i < argc; i++) add_header(argv[i]);

    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    struct MHD_OptionItem options[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &address},
        {MHD_OPTION_CONNECTION_LIMIT, 10128, NULL},
        {MHD_OPTION_CONNECTION_MEMORY_LIMIT, 16 * 1024, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, 30, NULL},
        {threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, NULL},
        {MHD_OPTION_END, 0, NULL},
    };
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, port, NULL, NULL,
        &handler, NULL, MHD_OPTION_ARRAY, options, MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "hello: could not start on 127.0.0.1:%u\n", port);
        return 1;
    }
    printf("hello (C) listening on 127.0.0.1:%u with %u threads, %zu-byte body\n", port, threads, body_size);
    fflush(stdout);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    while (!stop_requested) pause();
    MHD_stop_daemon(daemon);
    MHD_destroy_response(shared_response);
    MHD_destroy_response(not_modified_response);
    return 0;
}
