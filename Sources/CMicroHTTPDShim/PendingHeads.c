#include "CMicroHTTPDShim.h"

#include <pthread.h>
#include <stdlib.h>

// The connections of the calling thread whose request line libmicrohttpd has read and whose head has not reached the
// access handler. Per thread: a connection is handled by one libmicrohttpd worker from its accept to its close, and
// libmicrohttpd logs on the thread of the connection it is processing.
static _Thread_local struct MHD_Connection **heads;
static _Thread_local size_t head_count;
static _Thread_local size_t head_capacity;

// Frees a worker's list when its thread ends.
static pthread_key_t heads_key;
static pthread_once_t heads_key_once = PTHREAD_ONCE_INIT;

static void make_heads_key(void) {
    (void)pthread_key_create(&heads_key, free);
}

void cmhd_pending_head_add(struct MHD_Connection *connection) {
    if (head_count == head_capacity) {
        size_t capacity = head_capacity == 0 ? 8 : head_capacity * 2;
        struct MHD_Connection **grown = realloc(heads, capacity * sizeof *grown);
        if (grown == NULL) {
            return;  // Not tracked: libmicrohttpd answers a head it refuses itself, as it would without the list.
        }
        if (heads == NULL) {
            (void)pthread_once(&heads_key_once, make_heads_key);
        }
        heads = grown;
        head_capacity = capacity;
        (void)pthread_setspecific(heads_key, heads);
    }
    heads[head_count++] = connection;
}

void cmhd_pending_head_remove(struct MHD_Connection *connection) {
    for (size_t index = head_count; index > 0; index--) {
        if (heads[index - 1] == connection) {
            heads[index - 1] = heads[--head_count];
        }
    }
}

struct MHD_Connection *cmhd_pending_head_refused_by_library(void) {
    for (size_t index = 0; index < head_count; index++) {
        struct MHD_Connection *connection = heads[index];
        // Its head parsed (the header size is known from then on) and no response queued: libmicrohttpd is refusing it
        // now, from the fields it has just read, before the access handler (which would have taken it off the list).
        if (MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE) != NULL &&
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_HTTP_STATUS) == NULL) {
            return connection;
        }
    }
    return NULL;
}

size_t cmhd_connection_header_size(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_REQUEST_HEADER_SIZE);
    return info == NULL ? 0 : info->header_size;
}
