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

void __assert_func(const char *file, int line, const char *func, const char *expr)
{
  FORWARD_VOID(assert_func, file, line, func, expr);
  for (;;) {
  }
}

void __ll_lib_error(int err_code, int line, const char *func) { FORWARD_VOID(ll_lib_error, err_code, line, func); }

void LL_ATON_Cache_MCU_Clean_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(ll_aton_cache_mcu_clean_range, a, n); }
void LL_ATON_Cache_MCU_Invalidate_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(ll_aton_cache_mcu_invalidate_range, a, n); }
void LL_ATON_Cache_MCU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(ll_aton_cache_mcu_clean_invalidate_range, a, n); }
void LL_ATON_Cache_NPU_Clean_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(ll_aton_cache_npu_clean_range, a, n); }
void LL_ATON_Cache_NPU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { FORWARD_VOID(ll_aton_cache_npu_clean_invalidate_range, a, n); }

/* One forwarder per LL_ATON_LIB function of the release; -1 when the firmware left the entry empty. */
#define LL_LIB_FORWARD(member, fn, params, args)                                        \
  int fn params                                                                         \
  {                                                                                     \
    if (!_network_rt_ctx.cbs->member) return -1;                                        \
    R9_SAVE();                                                                          \
    int r = _network_rt_ctx.cbs->member args;                                           \
    R9_RESTORE();                                                                       \
    return r;                                                                           \
  }
LL_ATON_LIB_FUNCTIONS(LL_LIB_FORWARD)
