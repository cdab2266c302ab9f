/* NPU cache (CACHEAXI) maintenance prototypes (implemented by the firmware). */
#ifndef NPU_CACHE_H
#define NPU_CACHE_H
#include <stdint.h>
void npu_cache_clean_range(uint32_t start_addr, uint32_t end_addr);
void npu_cache_clean_invalidate_range(uint32_t start_addr, uint32_t end_addr);
#endif
