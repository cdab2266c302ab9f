/* Runtime checks (simulated LL_ATON): LL_ATON_ASSERT is the C library's assert unless NDEBUG is
 * defined; in a relocatable image a failed assert reaches the firmware through its callbacks. */
#ifndef LL_ATON_UTIL_H
#define LL_ATON_UTIL_H

#include <assert.h>

#ifndef NDEBUG
#define LL_ATON_ASSERT(...) assert(__VA_ARGS__)
#else
#define LL_ATON_ASSERT(...)
#endif

#endif
