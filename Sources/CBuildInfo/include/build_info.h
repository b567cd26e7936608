#ifndef CONVEX_GATEWAY_BUILD_INFO_H
#define CONVEX_GATEWAY_BUILD_INFO_H

/// The commit this build was made from: the value of CONVEX_GATEWAY_COMMIT when the package was built (Package.swift
/// passes it here as a define after checking that it is a hexadecimal commit name), or "unknown".
const char *convex_gateway_build_commit(void);

#endif
