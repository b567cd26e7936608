#include "build_info.h"

#ifndef CONVEX_GATEWAY_COMMIT
#define CONVEX_GATEWAY_COMMIT "unknown"
#endif

const char *convex_gateway_build_commit(void) { return CONVEX_GATEWAY_COMMIT; }
