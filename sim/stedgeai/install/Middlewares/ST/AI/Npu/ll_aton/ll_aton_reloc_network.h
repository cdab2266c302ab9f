/* Relocatable ("runtime loadable") network support (simulated LL_ATON).
 *
 * Model side (BUILD_AI_NETWORK_RELOC): AI_RELOC_NETWORK() instantiates the runtime context,
 * the header entry table and the flags word that the linker script places in the image.
 * Firmware side (LL_ATON_RT_RELOC): the callback table the loader hands to the model. */
#ifndef LL_ATON_RELOC_NETWORK_H
#define LL_ATON_RELOC_NETWORK_H

#if !defined(LL_ATON_RT_RELOC) && !defined(BUILD_AI_NETWORK_RELOC)
#error "ll_aton_reloc_network.h needs LL_ATON_RT_RELOC (firmware) or BUILD_AI_NETWORK_RELOC (model)"
#endif

#include <stddef.h>
#include <stdint.h>

#include "ll_aton_NN_interface.h"
#include "ll_aton_caches_interface.h"
#include "ll_aton_lib.h"
#include "ll_aton_platform.h"

#define AI_RELOC_MAGIC 0x4E49424EU        /* "NBIN" */
#define AI_RELOC_RT_VERSION_MAJOR 8
#define AI_RELOC_RT_VERSION_MINOR 0

/* -- flags word ----------------------------------------------------------------------------- */
#define AI_RELOC_TOOLCHAIN_GCC 8
#define AI_RELOC_TOOLCHAIN_LLVM 9
#define AI_RELOC_TOOLCHAIN_ST_CLANG 10
#define AI_RELOC_CPUID_CORTEX_M55 0xD22

#if defined(__ARM_FEATURE_CMSE) && (__ARM_FEATURE_CMSE == 3)
#define AI_RELOC__SECURE 1
#else
#define AI_RELOC__SECURE 0
#endif
#if defined(LL_ATON_EB_DBG_INFO)
#define AI_RELOC__DBG_INFO 1
#else
#define AI_RELOC__DBG_INFO 0
#endif
#if LL_ATON_RT_MODE == LL_ATON_RT_ASYNC
#define AI_RELOC__ASYNC 1
#else
#define AI_RELOC__ASYNC 0
#endif
#if defined(__ARM_FP)
#define AI_RELOC__FPU 1
#else
#define AI_RELOC__FPU 0
#endif
#if defined(__ARM_PCS_VFP)
#define AI_RELOC__FLOAT_ABI 2
#elif defined(__arm__) || defined(__thumb__)
#error "relocatable networks need -mfloat-abi=hard"
#else
#define AI_RELOC__FLOAT_ABI 2   /* host builds of the tooling */
#endif
#if defined(__clang__)
#define AI_RELOC__TOOLCHAIN AI_RELOC_TOOLCHAIN_LLVM
#else
#define AI_RELOC__TOOLCHAIN AI_RELOC_TOOLCHAIN_GCC
#endif

#define AI_RELOC_FLAGS_VALUE                                                                     \
  (((uint32_t)AI_RELOC_RT_VERSION_MAJOR << 28) | ((uint32_t)AI_RELOC_RT_VERSION_MINOR << 24) |   \
   ((uint32_t)AI_RELOC__ASYNC << 22) | ((uint32_t)AI_RELOC__DBG_INFO << 21) |                     \
   ((uint32_t)AI_RELOC__SECURE << 20) | ((uint32_t)AI_RELOC__TOOLCHAIN << 16) |                  \
   ((uint32_t)AI_RELOC__FLOAT_ABI << 13) | ((uint32_t)AI_RELOC__FPU << 12) | AI_RELOC_CPUID_CORTEX_M55)

#define AI_RELOC_STRUCT_SIZES ((uint32_t)(sizeof(EpochBlock_ItemTypeDef) << 8) | sizeof(LL_Buffer_InfoTypeDef))

/* -- memory-pool descriptors ------------------------------------------------------------------ */
#define AI_RELOC_MPOOL_TYPE_RELOC 1
#define AI_RELOC_MPOOL_TYPE_COPY 2
#define AI_RELOC_MPOOL_TYPE_RESET 3
#define AI_RELOC_MPOOL_DATA_PARAM 1
#define AI_RELOC_MPOOL_DATA_ACTIV 2
#define AI_RELOC_MPOOL_DATA_MIXED 3
#define AI_RELOC_MPOOL_ATTR_READ 1
#define AI_RELOC_MPOOL_ATTR_WRITE 2
#define AI_RELOC_MPOOL_ATTR_CACHEABLE 4
#define AI_RELOC_MPOOL_FLAGS(type, data, attr, id) \
  (((uint32_t)(type) << 24) | ((uint32_t)(data) << 16) | ((uint32_t)(attr) << 8) | (uint32_t)(id))

typedef struct {
  const char *name;
  uint32_t flags;
  uint32_t foff;   /* offset of the initial content from the params base */
  uint32_t dst;    /* absolute address for COPY/RESET pools, 0 for RELOC */
  uint32_t size;
} ll_aton_reloc_mem_pool_desc;

/* -- firmware services called by the model: the release's callback table ---------------------- */
#define LL_LIB_MEMBER(member, fn, params, args) int(*member) params;
struct ll_aton_reloc_callbacks {
  void (*assert_func)(const char *file, int line, const char *func, const char *expr);
  void (*ll_lib_error)(int err_code, int line, const char *func);
  void (*ll_aton_cache_mcu_clean_range)(uintptr_t addr, uint32_t size);
  void (*ll_aton_cache_mcu_invalidate_range)(uintptr_t addr, uint32_t size);
  void (*ll_aton_cache_mcu_clean_invalidate_range)(uintptr_t addr, uint32_t size);
  void (*ll_aton_cache_npu_clean_range)(uintptr_t addr, uint32_t size);
  void (*ll_aton_cache_npu_clean_invalidate_range)(uintptr_t addr, uint32_t size);
  LL_ATON_LIB_FUNCTIONS(LL_LIB_MEMBER)
};
#undef LL_LIB_MEMBER

/* -- runtime context: 17 words, build-time fields filled by AI_RELOC_NETWORK(), the rest by the loader */
struct ai_reloc_rt_ctx {
  uint32_t state;                 /* bit0 initialised, bit1 XIP */
  uint32_t file_addr;
  uint32_t ram_addr;
  uint32_t rom_addr;
  const struct ll_aton_reloc_callbacks *cbs;
  const char *c_name;
  uint32_t acts_sz;
  uint32_t params_sz;
  uint32_t ext_ram_sz;
  const char *rt_version_desc;
  uint32_t rt_version;
  uint32_t rt_version_extra;
  uint32_t params_bin_sz;
  uint32_t params_bin_crc32;
  uint32_t rt_c_struct_sizes;
  void *ll_instance;
  const NN_Interface_TypeDef *itf_network;
};

/* -- header entries (image words 13...) ------------------------------------------------------- */
struct ai_reloc_network_entries {
  bool (*ec_network_init)(void);
  bool (*ec_inference_init)(void);
  LL_ATON_User_IO_Result_t (*input_setter)(uint32_t num, void *buffer, uint32_t size);
  void *(*input_getter)(uint32_t num);
  LL_ATON_User_IO_Result_t (*output_setter)(uint32_t num, void *buffer, uint32_t size);
  void *(*output_getter)(uint32_t num);
  const EpochBlock_ItemTypeDef *(*get_epoch_items)(void);
  const LL_Buffer_InfoTypeDef *(*get_output_buffers_info)(void);
  const LL_Buffer_InfoTypeDef *(*get_input_buffers_info)(void);
  const LL_Buffer_InfoTypeDef *(*get_internal_buffers_info)(void);
#if LL_ATON_HAS_ENCRYPTION_INFO
  const LL_Streng_EncryptionTypedef *(*weight_encryption_info)(void);
  const LL_Streng_EncryptionTypedef *(*blob_encryption_info)(void);
#endif
  struct ai_reloc_rt_ctx *rt_ctx;
};

extern struct ai_reloc_rt_ctx _network_rt_ctx;

/* The model configuration is needed only where AI_RELOC_NETWORK() is expanded. */
#if defined(BUILD_AI_NETWORK_RELOC) && !defined(AI_RELOC_CALLBACKS_ONLY)
#include MODEL_CONF

#define AI_RELOC__FN3(fn, suffix) fn##_##suffix
#define AI_RELOC__FN2(fn, suffix) AI_RELOC__FN3(fn, suffix)
#define AI_RELOC_FN(fn) AI_RELOC__FN2(fn, C_FCT_SUFFIX)

#if defined(INCLUDE_INTERNAL_BUFFERS)
#define AI_RELOC__INTERNAL_BUFFERS AI_RELOC_FN(LL_ATON_Internal_Buffers_Info)
#else
#define AI_RELOC__INTERNAL_BUFFERS ai_reloc_no_internal_buffers
#endif
#if LL_ATON_HAS_ENCRYPTION_INFO
#define AI_RELOC__ENC_ENTRIES \
  .weight_encryption_info = AI_RELOC_FN(LL_ATON_WeightEncryption_Info), \
  .blob_encryption_info = AI_RELOC_FN(LL_ATON_BlobEncryption_Info),
#else
#define AI_RELOC__ENC_ENTRIES
#endif

#define AI_RELOC_NETWORK()                                                                        \
  static const LL_Buffer_InfoTypeDef *ai_reloc_no_internal_buffers(void) { return NULL; }         \
  const NN_Interface_TypeDef _itf_network = {.network_name = C_NAME};                             \
  __attribute__((section(".network_rt_ctx"), used)) struct ai_reloc_rt_ctx _network_rt_ctx = {   \
      .c_name = C_NAME,                                                                           \
      .acts_sz = ACTS_SZ,                                                                         \
      .params_sz = PARAMS_SZ,                                                                     \
      .ext_ram_sz = EXT_RAM_SZ,                                                                   \
      .rt_version_desc = RUNTIME_DESC,                                                            \
      .rt_version = RUNTIME_VERSION,                                                              \
      .rt_version_extra = RUNTIME_VERSION_DEV,                                                    \
      .params_bin_sz = PARAMS_BIN_SZ,                                                             \
      .params_bin_crc32 = PARAMS_BIN_CRC32,                                                       \
      .rt_c_struct_sizes = AI_RELOC_STRUCT_SIZES,                                                 \
      .itf_network = &_itf_network,                                                               \
  };                                                                                              \
  __attribute__((section(".network_entries"), used, visibility("default")))                      \
  const struct ai_reloc_network_entries _network_entries = {                                      \
      .ec_network_init = AI_RELOC_FN(LL_ATON_EC_Network_Init),                                    \
      .ec_inference_init = AI_RELOC_FN(LL_ATON_EC_Inference_Init),                                \
      .input_setter = AI_RELOC_FN(LL_ATON_Set_User_Input_Buffer),                                 \
      .input_getter = AI_RELOC_FN(LL_ATON_Get_User_Input_Buffer),                                 \
      .output_setter = AI_RELOC_FN(LL_ATON_Set_User_Output_Buffer),                               \
      .output_getter = AI_RELOC_FN(LL_ATON_Get_User_Output_Buffer),                               \
      .get_epoch_items = AI_RELOC_FN(LL_ATON_EpochBlockItems),                                    \
      .get_output_buffers_info = AI_RELOC_FN(LL_ATON_Output_Buffers_Info),                        \
      .get_input_buffers_info = AI_RELOC_FN(LL_ATON_Input_Buffers_Info),                          \
      .get_internal_buffers_info = AI_RELOC__INTERNAL_BUFFERS,                                    \
      AI_RELOC__ENC_ENTRIES                                                                       \
      .rt_ctx = &_network_rt_ctx,                                                                 \
  };                                                                                              \
  __attribute__((section(".network_flags"), used)) const uint32_t _network_flags = AI_RELOC_FLAGS_VALUE

#endif /* BUILD_AI_NETWORK_RELOC */

#endif
