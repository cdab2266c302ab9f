/* MCU and NPU cache maintenance, provided by the firmware (reached through callbacks in a
 * relocatable model). */
#ifndef LL_ATON_CACHES_INTERFACE_H
#define LL_ATON_CACHES_INTERFACE_H
#include <stdint.h>

void LL_ATON_Cache_MCU_Clean_Range(uintptr_t virtual_addr, uint32_t size);
void LL_ATON_Cache_MCU_Invalidate_Range(uintptr_t virtual_addr, uint32_t size);
void LL_ATON_Cache_MCU_Clean_Invalidate_Range(uintptr_t virtual_addr, uint32_t size);
void LL_ATON_Cache_NPU_Clean_Range(uintptr_t virtual_addr, uint32_t size);
void LL_ATON_Cache_NPU_Clean_Invalidate_Range(uintptr_t virtual_addr, uint32_t size);

#endif
