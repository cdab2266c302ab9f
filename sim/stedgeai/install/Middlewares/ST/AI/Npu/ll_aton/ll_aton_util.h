/* Buffer-description helpers (simulated LL_ATON). */
#ifndef LL_ATON_UTIL_H
#define LL_ATON_UTIL_H

#include <stdint.h>
#include "ll_aton_NN_interface.h"

unsigned char *LL_Buffer_addr_start(const LL_Buffer_InfoTypeDef *buf);
unsigned char *LL_Buffer_addr_end(const LL_Buffer_InfoTypeDef *buf);
uint32_t LL_Buffer_len(const LL_Buffer_InfoTypeDef *buf);
uint32_t LL_Buffer_bits(const LL_Buffer_InfoTypeDef *buf);
const LL_Buffer_InfoTypeDef *LL_Buffer_find(const LL_Buffer_InfoTypeDef *table, const char *name);

#endif
