#include "CMicroHTTPDShim.h"

// ThreadSanitizer's annotations, when this file is built with it (CONVEX_SANITIZE=thread); empty otherwise.
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define CMHD_THREAD_SANITIZER 1
#endif
#endif

#ifdef CMHD_THREAD_SANITIZER
// The sanitizer runtime's interface (compiler-rt's sanitizer/tsan_interface.h).
void __tsan_acquire(void *address);
void __tsan_release(void *address);

void cmhd_tsan_release(const void *address) { __tsan_release((void *)address); }
void cmhd_tsan_acquire(const void *address) { __tsan_acquire((void *)address); }
#else
void cmhd_tsan_release(const void *address) { (void)address; }
void cmhd_tsan_acquire(const void *address) { (void)address; }
#endif
