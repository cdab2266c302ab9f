/* Types shared by generated networks and the runtime: buffer descriptions, epoch blocks and
 * the network interface (simulated LL_ATON). Layouts: LL_Buffer_InfoTypeDef is 56 bytes and
 * EpochBlock_ItemTypeDef 48 bytes with LL_ATON_EB_DBG_INFO (20 without) on Cortex-M55 GCC. */
#ifndef LL_ATON_NN_INTERFACE_H
#define LL_ATON_NN_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ll_aton_version.h"

typedef enum {
  DataType_UNDEFINED = 0,
  DataType_FLOAT,
  DataType_INT8,
  DataType_UINT8,
  DataType_INT16,
  DataType_UINT16,
  DataType_INT32,
  DataType_FXP,
} Buffer_DataType_TypeDef;

typedef enum {
  CHPos_First = 0,
  CHPos_Last,
  CHPos_Mixed,
} Buffer_ChPos_TypeDef;

typedef union {
  unsigned char *p;
  uintptr_t i;
} LL_Address_TypeDef;

typedef struct {
  const char *name;
  LL_Address_TypeDef addr_base;   /* pool base */
  uint32_t offset_start;          /* buffer = [base + start, base + end) */
  uint32_t offset_end;
  uint32_t offset_limit;
  const uint32_t *shape;          /* logical shape, ndims entries */
  const uint32_t *mem_shape;      /* memory layout, mem_ndims entries */
  float scale;                    /* per-tensor quantisation */
  int16_t offset;                 /* zero point */
  uint16_t batch;
  int16_t epoch;
  uint8_t ndims;
  uint8_t mem_ndims;
  int8_t Qm;
  int8_t Qn;
  uint8_t Qunsigned;
  uint8_t nbits;
  Buffer_DataType_TypeDef type;
  Buffer_ChPos_TypeDef chpos;
  uint8_t is_user_allocated;
  uint8_t is_param;
  const float *per_channel_scale;    /* NULL unless quantised per channel */
  const int16_t *per_channel_offset;
} LL_Buffer_InfoTypeDef;

enum {
  EpochBlock_Flags_NONE = 0,
  EpochBlock_Flags_epoch_start = 1 << 0,
  EpochBlock_Flags_epoch_end = 1 << 1,
  EpochBlock_Flags_last_eb = 1 << 2,
  EpochBlock_Flags_pure_hw = 1 << 3,
  EpochBlock_Flags_pure_sw = 1 << 4,
  EpochBlock_Flags_hybrid = 1 << 5,
  EpochBlock_Flags_blob = 1 << 6,
  EpochBlock_Flags_blob_encrypted = 1 << 7,
  EpochBlock_Flags_internal = 1 << 8,
};

typedef struct {
  void (*start_epoch_block)(const void *epoch_block);
  void (*end_epoch_block)(const void *epoch_block);
  const uint64_t *blob_address;
  uint32_t wait_mask;
  uint32_t flags;
#if defined(LL_ATON_EB_DBG_INFO)
  int32_t epoch_num;
  int32_t last_epoch_num;
  uint32_t in_streng_mask;
  uint32_t out_streng_mask;
  uint32_t estimated_npu_cycles;
  uint32_t estimated_tot_cycles;
  const char *label;
#endif
} EpochBlock_ItemTypeDef;

typedef enum {
  LL_ATON_User_IO_NOERROR = 0,
  LL_ATON_User_IO_WRONG_ALIGNMENT,
  LL_ATON_User_IO_WRONG_SIZE,
  LL_ATON_User_IO_WRONG_INDEX,
} LL_ATON_User_IO_Result_t;

typedef struct {
  uint32_t enable;
  uint32_t key_lo;
  uint32_t key_hi;
} LL_Streng_EncryptionTypedef;

#define LL_ATON_HAS_ENCRYPTION_INFO \
  ((LL_ATON_VERSION_MAJOR << 16 | LL_ATON_VERSION_MINOR << 8 | LL_ATON_VERSION_MICRO) >= 0x010103)

typedef struct {
  const char *network_name;
  bool (*ec_network_init)(void);
  bool (*ec_inference_init)(void);
  LL_ATON_User_IO_Result_t (*input_setter)(uint32_t num, void *buffer, uint32_t size);
  void *(*input_getter)(uint32_t num);
  LL_ATON_User_IO_Result_t (*output_setter)(uint32_t num, void *buffer, uint32_t size);
  void *(*output_getter)(uint32_t num);
  const EpochBlock_ItemTypeDef *(*epoch_block_items)(void);
  const LL_Buffer_InfoTypeDef *(*output_buffers_info)(void);
  const LL_Buffer_InfoTypeDef *(*input_buffers_info)(void);
  const LL_Buffer_InfoTypeDef *(*internal_buffers_info)(void);
#if LL_ATON_HAS_ENCRYPTION_INFO
  const LL_Streng_EncryptionTypedef *(*weight_encryption_info)(void);
  const LL_Streng_EncryptionTypedef *(*blob_encryption_info)(void);
#endif
} NN_Interface_TypeDef;

#define LL_ATON__FN(prefix, name) prefix##name
#if LL_ATON_HAS_ENCRYPTION_INFO
#define LL_ATON__ENC_MEMBERS(name) \
  .weight_encryption_info = LL_ATON_WeightEncryption_Info_##name, \
  .blob_encryption_info = LL_ATON_BlobEncryption_Info_##name,
#else
#define LL_ATON__ENC_MEMBERS(name)
#endif

/* Declares NN_Interface_<name> pointing at the functions a generated network exports. */
#define LL_ATON_DECLARE_NAMED_NN_INTERFACE(name) \
  const NN_Interface_TypeDef NN_Interface_##name = { \
    .network_name = #name, \
    .ec_network_init = LL_ATON_EC_Network_Init_##name, \
    .ec_inference_init = LL_ATON_EC_Inference_Init_##name, \
    .input_setter = LL_ATON_Set_User_Input_Buffer_##name, \
    .input_getter = LL_ATON_Get_User_Input_Buffer_##name, \
    .output_setter = LL_ATON_Set_User_Output_Buffer_##name, \
    .output_getter = LL_ATON_Get_User_Output_Buffer_##name, \
    .epoch_block_items = LL_ATON_EpochBlockItems_##name, \
    .output_buffers_info = LL_ATON_Output_Buffers_Info_##name, \
    .input_buffers_info = LL_ATON_Input_Buffers_Info_##name, \
    .internal_buffers_info = LL_ATON_Internal_Buffers_Info_##name, \
    LL_ATON__ENC_MEMBERS(name) \
  }

#endif
