#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

// microhttpd.h expects size_t, ssize_t, struct sockaddr, fd_set, uint64_t etc. to be declared first.
#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#if !__has_include(<microhttpd.h>)
#error "libmicrohttpd's headers are missing: scripts/gateway and scripts/test install them (Debian: apt-get install libmicrohttpd-dev zlib1g-dev pkg-config)"
#endif
#include <microhttpd.h>

#endif
