/* Buffer-description helpers (simulated LL_ATON). */
#include "ll_aton_util.h"

unsigned char *LL_Buffer_addr_start(const LL_Buffer_InfoTypeDef *buf) { return buf->addr_base.p + buf->offset_start; }

unsigned char *LL_Buffer_addr_end(const LL_Buffer_InfoTypeDef *buf) { return buf->addr_base.p + buf->offset_end; }

uint32_t LL_Buffer_len(const LL_Buffer_InfoTypeDef *buf) { return buf->offset_end - buf->offset_start; }

uint32_t LL_Buffer_bits(const LL_Buffer_InfoTypeDef *buf) { return buf->nbits; }

const LL_Buffer_InfoTypeDef *LL_Buffer_find(const LL_Buffer_InfoTypeDef *table, const char *name)
{
  for (; table && table->name; table++) {
    const char *a = table->name, *b = name;
    while (*a && *a == *b) a++, b++;
    if (*a == *b) return table;
  }
  return NULL;
}
