/* Model-side entry points of firmware services, for relocatable networks. Each forwards the
 * call through the callback table the loader stored in _network_rt_ctx.cbs, keeping the
 * model's r9 (static base) intact around the firmware call. */
#define AI_RELOC_CALLBACKS_ONLY
#include "ll_aton_reloc_network.h"

#if defined(__arm__)
#define R9_SAVE() uint32_t r9_saved; __asm volatile("mov %0, r9" : "=r"(r9_saved))
#define R9_RESTORE() __asm volatile("mov r9, %0" : : "r"(r9_saved))
#else
#define R9_SAVE() do { } while (0)
#define R9_RESTORE() do { } while (0)
#endif

#define FORWARD_VOID(member, ...) do { R9_SAVE(); _network_rt_ctx.cbs->member(__VA_ARGS__); R9_RESTORE(); } while (0)
#define FORWARD_INT(member, ...) do { R9_SAVE(); int r = _network_rt_ctx.cbs->member(__VA_ARGS__); R9_RESTORE(); return r; } while (0)

void __assert_func(const char *file, int line, const char *func, const char *expr)
{
  FORWARD_VOID(assert_func, file, line, func, expr);
  for (;;) {
  }
}

void __ll_lib_error(int err_code, int line, const char *func) { FORWARD_VOID(lib_error, err_code, line, func); }

void LL_ATON_Cache_MCU_Clean_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(cache_mcu_clean_range, a, n); }
void LL_ATON_Cache_MCU_Invalidate_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(cache_mcu_invalidate_range, a, n); }
void LL_ATON_Cache_MCU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(cache_mcu_clean_invalidate_range, a, n); }
void LL_ATON_Cache_NPU_Clean_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(cache_npu_clean_range, a, n); }
void LL_ATON_Cache_NPU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(cache_npu_clean_invalidate_range, a, n); }

int LL_ATON_LIB_Memcpy(void *dst, const void *src, uint32_t size) { FORWARD_INT(lib_memcpy, dst, src, size); }
int LL_ATON_LIB_Memset(void *dst, int value, uint32_t size) { FORWARD_INT(lib_memset, dst, value, size); }

int LL_ATON_LIB_DMA_Transpose(const LL_Buffer_InfoTypeDef *in, const LL_Buffer_InfoTypeDef *out,
                              const uint8_t *perm, int dma_in, int dma_out)
{
  FORWARD_INT(lib_dma_transpose, in, out, perm, dma_in, dma_out);
}

int LL_ATON_LIB_Concat(const LL_Buffer_InfoTypeDef *in, uint32_t n_in, const LL_Buffer_InfoTypeDef *out,
                       uint32_t axis, int dma_in, int dma_out)
{
  FORWARD_INT(lib_concat, in, n_in, out, axis, dma_in, dma_out);
}

int LL_ATON_LIB_Pad(const LL_Buffer_InfoTypeDef *in, const LL_Buffer_InfoTypeDef *out, const int32_t *pads,
                    int32_t value, int dma_in, int dma_out)
{
  FORWARD_INT(lib_pad, in, out, pads, value, dma_in, dma_out);
}

int LL_ATON_LIB_Split(const LL_Buffer_InfoTypeDef *in, const LL_Buffer_InfoTypeDef *out, uint32_t n_out,
                      uint32_t axis, int dma_in, int dma_out)
{
  FORWARD_INT(lib_split, in, out, n_out, axis, dma_in, dma_out);
}
