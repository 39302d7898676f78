// Which sanitizer the current translation unit is compiled with, for both compilers.
//
// FAIRSCHED_ASAN is defined (to 1) under AddressSanitizer and FAIRSCHED_TSAN under
// ThreadSanitizer; neither is defined otherwise. gcc announces a sanitizer through
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, clang 14 defines neither of those and answers
// only __has_feature, so code that asks gcc's macro alone silently takes the
// uninstrumented branch under clang (the soak tool once sized its rounds for a plain build
// under clang's TSan and its leak check saw no round end). Ask these instead.
// FAIRSCHED_UBSAN is set by the build itself (--config=ubsan), as no compiler announces it.
#ifndef FAIRSCHED_SYNC_SANITIZERS_H_
#define FAIRSCHED_SYNC_SANITIZERS_H_

#if defined(__SANITIZE_ADDRESS__)
#define FAIRSCHED_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FAIRSCHED_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define FAIRSCHED_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FAIRSCHED_TSAN 1
#endif
#endif

#endif  // FAIRSCHED_SYNC_SANITIZERS_H_
