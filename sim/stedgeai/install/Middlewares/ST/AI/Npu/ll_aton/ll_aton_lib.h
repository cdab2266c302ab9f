/* LL_ATON library helpers that live in the firmware. A relocatable model reaches them through
 * the callback table of ll_aton_reloc_network.h. */
#ifndef LL_ATON_LIB_H
#define LL_ATON_LIB_H

#include <stdint.h>
#include "ll_aton_NN_interface.h"

int LL_ATON_LIB_Memcpy(void *dst, const void *src, uint32_t size);
int LL_ATON_LIB_Memset(void *dst, int value, uint32_t size);
int LL_ATON_LIB_DMA_Transpose(const LL_Buffer_InfoTypeDef *in, const LL_Buffer_InfoTypeDef *out,
                              const uint8_t *perm, int dma_in, int dma_out);
int LL_ATON_LIB_Concat(const LL_Buffer_InfoTypeDef *in, uint32_t n_in, const LL_Buffer_InfoTypeDef *out,
                       uint32_t axis, int dma_in, int dma_out);
int LL_ATON_LIB_Pad(const LL_Buffer_InfoTypeDef *in, const LL_Buffer_InfoTypeDef *out, const int32_t *pads,
                    int32_t value, int dma_in, int dma_out);
int LL_ATON_LIB_Split(const LL_Buffer_InfoTypeDef *in, const LL_Buffer_InfoTypeDef *out, uint32_t n_out,
                      uint32_t axis, int dma_in, int dma_out);

#endif
