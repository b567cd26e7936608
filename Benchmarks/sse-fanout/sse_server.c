/*
 * A plain C libmicrohttpd SSE server: the floor for the gateway's fan-out benchmark (Benchmarks/run-gateway.sh
 * fanout-c). It holds the same streams as the gateway and writes the same event bytes to each, in the same mode as
 * the MicroHTTPD wrapper: epoll internal thread pool, suspend/resume, 127.0.0.1, connection limit 20000, the
 * two-call handler convention.
 *
 * - `GET <any path>`: an event stream. It opens with the gateway's preamble and first event
 *   ("retry: 3000\n: connected\n\n" then "id: <13 digits>-<16 hex>\ndata: <count>\n\n") and is then suspended until
 *   the next change.
 * - `POST <any path>` (the body is read and ignored): one change. The count goes up by one, the answer is the new
 *   count as JSON, and a publisher thread (standing in for the gateway's upstream connection) appends the new event
 *   to every stream and resumes the suspended ones.
 *
 * Per stream: a mutex, the pending bytes, a `suspended` flag (the pattern of shared/reference/libmicrohttpd-sse.md,
 * 5.2): the reader copies pending bytes or suspends under the stream's lock, so no wake-up is lost.
 *
 * Build: gcc -O2 -Wall -o sse-server sse_server.c $(pkg-config --cflags --libs libmicrohttpd) -lpthread
 * Usage: sse-server PORT THREADS
 */
#include <arpa/inet.h>
#include <sys/socket.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EVENT_CAPACITY 256

struct stream {
    pthread_mutex_t lock;
    struct MHD_Connection *connection;
    char pending[EVENT_CAPACITY * 4];
    size_t pending_length;
    int suspended;
    struct stream *previous, *next;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stream *registry;
static long long count;

static pthread_mutex_t change_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t change_signal = PTHREAD_COND_INITIALIZER;
static long long changes_published, changes_wanted;

static const char preamble[] = "retry: 3000\n: connected\n\n";
static int marker;

/* The gateway's event bytes: a 13-digit sequence, a 16-hex-digit hash, the count as the data. */
static int format_event(char *out, long long value) {
    unsigned long long hash = (unsigned long long)value * 0x9E3779B97F4A7C15ULL;
    return snprintf(out, EVENT_CAPACITY, "id: %013lld-%016llx\ndata: %lld\n\n", 1795537195128LL + value, hash, value);
}

static ssize_t read_stream(void *cls, uint64_t position, char *buffer, size_t max) {
    (void)position;
    struct stream *stream = cls;
    pthread_mutex_lock(&stream->lock);
    if (stream->pending_length > 0) {
        size_t length = stream->pending_length < max ? stream->pending_length : max;
        memcpy(buffer, stream->pending, length);
        memmove(stream->pending, stream->pending + length, stream->pending_length - length);
        stream->pending_length -= length;
        pthread_mutex_unlock(&stream->lock);
        return (ssize_t)length;
    }
    stream->suspended = 1;
    MHD_suspend_connection(stream->connection);
    pthread_mutex_unlock(&stream->lock);
    return 0;
}

static void free_stream(void *cls) {
    struct stream *stream = cls;
    pthread_mutex_lock(&registry_lock);
    if (stream->previous) stream->previous->next = stream->next; else registry = stream->next;
    if (stream->next) stream->next->previous = stream->previous;
    pthread_mutex_unlock(&registry_lock);
    pthread_mutex_destroy(&stream->lock);
    free(stream);
}

static void append(struct stream *stream, const char *bytes, size_t length) {
    if (stream->pending_length + length <= sizeof stream->pending) {
        memcpy(stream->pending + stream->pending_length, bytes, length);
        stream->pending_length += length;
    } else { /* a reader this far behind gets the latest event only, as the gateway coalesces */
        memcpy(stream->pending, bytes, length);
        stream->pending_length = length;
    }
}

/* Writes the event of the latest count to every stream and resumes the suspended ones. */
static void *publisher(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&change_lock);
        while (changes_published == changes_wanted) pthread_cond_wait(&change_signal, &change_lock);
        changes_published = changes_wanted;
        pthread_mutex_unlock(&change_lock);
        char event[EVENT_CAPACITY];
        int length = format_event(event, __atomic_load_n(&count, __ATOMIC_ACQUIRE));
        pthread_mutex_lock(&registry_lock);
        for (struct stream *stream = registry; stream; stream = stream->next) {
            pthread_mutex_lock(&stream->lock);
            append(stream, event, (size_t)length);
            if (stream->suspended) {
                stream->suspended = 0;
                MHD_resume_connection(stream->connection);
            }
            pthread_mutex_unlock(&stream->lock);
        }
        pthread_mutex_unlock(&registry_lock);
    }
    return NULL;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *connection, const char *url, const char *method,
                               const char *version, const char *upload_data, size_t *upload_data_size,
                               void **con_cls) {
    (void)cls; (void)url; (void)version; (void)upload_data;
    if (*con_cls == NULL) {
        *con_cls = &marker;
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "POST") == 0) {
        long long value = __atomic_add_fetch(&count, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_lock(&change_lock);
        changes_wanted++;
        pthread_cond_signal(&change_signal);
        pthread_mutex_unlock(&change_lock);
        char body[32];
        int length = snprintf(body, sizeof body, "%lld", value);
        struct MHD_Response *response = MHD_create_response_from_buffer((size_t)length, body, MHD_RESPMEM_MUST_COPY);
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
        enum MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
        MHD_destroy_response(response);
        return queued;
    }
    struct stream *stream = calloc(1, sizeof *stream);
    if (stream == NULL) return MHD_NO;
    pthread_mutex_init(&stream->lock, NULL);
    stream->connection = connection;
    memcpy(stream->pending, preamble, sizeof preamble - 1);
    stream->pending_length = sizeof preamble - 1;
    pthread_mutex_lock(&registry_lock);
    /* The first event is the current count, written under the registry lock so no change is missed or doubled. */
    char event[EVENT_CAPACITY];
    int length = format_event(event, __atomic_load_n(&count, __ATOMIC_ACQUIRE));
    append(stream, event, (size_t)length);
    stream->next = registry;
    if (registry) registry->previous = stream;
    registry = stream;
    pthread_mutex_unlock(&registry_lock);
    struct MHD_Response *response = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, read_stream, stream,
                                                                      free_stream);
    MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(response, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    enum MHD_Result queued = MHD_queue_response(connection, MHD_HTTP_OK, response);
    MHD_destroy_response(response);
    return queued;
}

/* libmicrohttpd's epoll loop can sleep with up to 128 accepted connections unread (MHD_epoll repeats a blocking
 * epoll_wait while one returns exactly 128 events; see Sources/MicroHTTPD/AcceptStallWatchdog.swift). A connection to
 * our own port wakes every worker: the gateway does it when a connection waits a whole 250 ms period unread; this
 * floor does it every 250 ms, which costs it about four accepts a second and keeps its runs from hanging. */
static struct sockaddr_in listen_address;

static void *poker(void *unused) {
    (void)unused;
    for (;;) {
        usleep(250000);
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) continue;
        (void)connect(fd, (struct sockaddr *)&listen_address, sizeof listen_address);
        close(fd);
    }
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: sse-server PORT THREADS\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[1]))};
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    unsigned int threads = (unsigned int)atoi(argv[2]);
    pthread_t thread;
    pthread_create(&thread, NULL, publisher, NULL);
    struct MHD_Daemon *daemon = MHD_start_daemon(
        MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0, NULL, NULL, handler, NULL,
        MHD_OPTION_SOCK_ADDR, &address, MHD_OPTION_CONNECTION_LIMIT, 20000u, MHD_OPTION_CONNECTION_TIMEOUT, 0u,
        threads > 1 ? MHD_OPTION_THREAD_POOL_SIZE : MHD_OPTION_END, threads, MHD_OPTION_END);
    if (daemon == NULL) {
        fprintf(stderr, "sse-server: cannot start on port %s\n", argv[1]);
        return 1;
    }
    listen_address = address;
    pthread_t poke_thread;
    pthread_create(&poke_thread, NULL, poker, NULL);
    printf("listening on %s\n", argv[1]);
    fflush(stdout);
    pause();
    return 0;
}
