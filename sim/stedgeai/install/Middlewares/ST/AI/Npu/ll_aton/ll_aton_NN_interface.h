/* The interface between a generated network, the LL_ATON runtime and the firmware that runs
 * them (simulated LL_ATON). Every type, field, flag and code here has the name, type, order and
 * value of ST's LL_ATON 1.1.x interface, so that code built against either header reads the
 * other's tables right. The numbers are defined once more, as data, in the project's library
 * (n6/nn_interface.py); a test compiles a probe of both and compares them.
 * Sizes on Cortex-M55 GCC (short enums): LL_Buffer_InfoTypeDef 56 bytes, EpochBlock_ItemTypeDef
 * 48 bytes with LL_ATON_EB_DBG_INFO, 20 without. */
#ifndef LL_ATON_NN_INTERFACE_H
#define LL_ATON_NN_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ll_aton_platform.h"     /* the runtime-mode switches */
#include "ll_aton_util.h"
#include "ll_aton_version.h"

/* -- results and runtime events ------------------------------------------------------------- */
typedef enum LL_ATON_User_IO_Result {
  LL_ATON_User_IO_NOERROR = 0,
  LL_ATON_User_IO_WRONG_ALIGN = 1,
  LL_ATON_User_IO_WRONG_SIZE = 2,
  LL_ATON_User_IO_WRONG_INDEX = 3,
} LL_ATON_User_IO_Result_t;

typedef enum LL_ATON_RT_Callbacktype {
  LL_ATON_RT_Callbacktype_PRE_START = 0,   /* around an epoch block's start function */
  LL_ATON_RT_Callbacktype_POST_START = 1,
  LL_ATON_RT_Callbacktype_PRE_END = 2,     /* around its end function */
  LL_ATON_RT_Callbacktype_POST_END = 3,
  LL_ATON_RT_Callbacktype_NN_Init = 4,     /* network (de)initialised */
  LL_ATON_RT_Callbacktype_NN_DeInit = 5,
  LL_ATON_RT_Callbacktype_RT_Init = 6,     /* runtime (de)initialised */
  LL_ATON_RT_Callbacktype_RT_Deinit = 7,
} LL_ATON_RT_Callbacktype_t;

/* An address that a constant initialiser may hold as a pointer or as an integer. */
typedef union {
  unsigned char *p;
  uintptr_t i;
} __LL_address_t;

/* -- epoch blocks --------------------------------------------------------------------------- */
typedef void (*EpochBlock_FuncPtr_t)(const void *epoch_block);

typedef enum {
  EpochBlock_Flags_NONE = 0,
  EpochBlock_Flags_epoch_start = 1 << 0,      /* first block of its epoch */
  EpochBlock_Flags_epoch_end = 1 << 1,        /* last block of its epoch */
  EpochBlock_Flags_blob = 1 << 2,             /* an epoch-controller blob */
  EpochBlock_Flags_last_eb = 1 << 3,          /* the terminator of the array */
  EpochBlock_Flags_pure_hw = 1 << 4,          /* runs on the NPU alone */
  EpochBlock_Flags_pure_sw = 1 << 5,          /* runs on the CPU alone */
  EpochBlock_Flags_hybrid = 1 << 6,           /* both */
  EpochBlock_Flags_internal = 1 << 7,         /* added by the runtime library for hybrid epochs */
  EpochBlock_Flags_blob_encrypted = 1 << 8,   /* the blob is decrypted while it is read */
} EpochBlock_Flags_t;

typedef struct {
  EpochBlock_FuncPtr_t start_epoch_block;
  EpochBlock_FuncPtr_t end_epoch_block;
  uintptr_t blob_address;       /* the blob of an epoch-controller block */
  uint32_t wait_mask;           /* output stream engines to wait for; a blob's controller unit */
  uint16_t flags;               /* EpochBlock_Flags_t */
#ifdef LL_ATON_EB_DBG_INFO
  int16_t epoch_num;            /* first and last epoch the block covers */
  int16_t last_epoch_num;
  uint32_t in_streng_mask;      /* stream engines the epoch reads and writes with */
  uint32_t out_streng_mask;
  uint64_t estimated_npu_cycles;   /* the compiler's estimates, without and with memory stalls */
  uint64_t estimated_tot_cycles;
#endif
} EpochBlock_ItemTypeDef;
typedef EpochBlock_ItemTypeDef LL_ATON_RT_EpochBlockItem_t;

static inline bool EpochBlock_IsLastEpochBlock(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_last_eb) != 0; }
static inline bool EpochBlock_IsEpochStart(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_epoch_start) != 0; }
static inline bool EpochBlock_IsEpochEnd(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_epoch_end) != 0; }
static inline bool EpochBlock_IsEpochBlob(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_blob) != 0; }
static inline bool EpochBlock_IsBlobEncrypted(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_blob_encrypted) != 0; }
static inline bool EpochBlock_IsEpochPureSW(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_pure_sw) != 0; }
static inline bool EpochBlock_IsEpochPureHW(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_pure_hw) != 0; }
static inline bool EpochBlock_IsEpochHybrid(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_hybrid) != 0; }
static inline bool EpochBlock_IsEpochInternal(const EpochBlock_ItemTypeDef *eb) { return (eb->flags & EpochBlock_Flags_internal) != 0; }
static inline uint32_t EpochBlock_EpochControllerUnit(const EpochBlock_ItemTypeDef *eb)
{
  LL_ATON_ASSERT(EpochBlock_IsEpochBlob(eb));
  return eb->wait_mask;
}
static inline uintptr_t EpochBlock_EpochBlobAddr(const EpochBlock_ItemTypeDef *eb)
{
  LL_ATON_ASSERT(EpochBlock_IsEpochBlob(eb));
  return eb->blob_address;
}

/* -- buffers -------------------------------------------------------------------------------- */
typedef enum {
  DataType_UNDEFINED = 0,
  DataType_FLOAT = 1,
  DataType_UINT2 = 2,
  DataType_INT2 = 3,
  DataType_UINT4 = 4,
  DataType_INT4 = 5,
  DataType_UINT8 = 6,
  DataType_INT8 = 7,
  DataType_UINT16 = 8,
  DataType_INT16 = 9,
  DataType_INT32 = 10,
  DataType_INT64 = 11,
  DataType_STRING = 12,
  DataType_BOOL = 13,
  DataType_FLOAT16 = 14,
  DataType_DOUBLE = 15,
  DataType_UINT32 = 16,
  DataType_UINT64 = 17,
  DataType_COMPLEX64 = 18,
  DataType_COMPLEX128 = 19,
  DataType_BFLOAT16 = 20,
  DataType_FXP = 100,           /* Neural-ART fixed point (Qm.Qn) */
} Buffer_DataType_TypeDef;

typedef enum {
  CHPos_UNDEFINED = 0,          /* no channel axis */
  CHPos_First = 1,              /* B C H W */
  CHPos_Last = 2,               /* B H W C */
  CHPos_Mixed = 3,              /* B C/b H W b */
} Buffer_CHPos_TypeDef;

typedef struct {
  const char *name;             /* NULL ends a table */
  __LL_address_t addr_base;     /* pool base (user-allocated: where the user's pointer is kept) */
  uint32_t offset_start;        /* the buffer is [base + start, base + end) */
  uint32_t offset_end;
  uint32_t offset_limit;        /* what the stream engines are programmed with */
  uint8_t is_user_allocated;
  uint8_t is_param;
  uint16_t epoch;
  uint32_t batch;
  const uint32_t *mem_shape;    /* the shape in memory, batch first (inputs and outputs) */
  uint16_t mem_ndims;
  Buffer_CHPos_TypeDef chpos;   /* where the channels are in mem_shape */
  Buffer_DataType_TypeDef type;
  int8_t Qm;
  int8_t Qn;
  uint8_t Qunsigned;
  uint8_t ndims;
  uint8_t nbits;
  uint8_t per_channel;          /* scale and offset hold one entry per channel */
  const uint32_t *shape;        /* ndims entries */
  const float *scale;           /* NULL for float data */
  const int16_t *offset;        /* zero points, in the quantised type's values */
} LL_Buffer_InfoTypeDef;

static inline unsigned char *LL_Buffer_addr_base(const LL_Buffer_InfoTypeDef *buf)
{
  return buf->is_user_allocated ? *(unsigned char **)buf->addr_base.p : buf->addr_base.p;
}
static inline unsigned char *LL_Buffer_addr_start(const LL_Buffer_InfoTypeDef *buf) { return LL_Buffer_addr_base(buf) + buf->offset_start; }
static inline unsigned char *LL_Buffer_addr_end(const LL_Buffer_InfoTypeDef *buf) { return LL_Buffer_addr_base(buf) + buf->offset_end; }
static inline unsigned char *LL_Buffer_addr_limit(const LL_Buffer_InfoTypeDef *buf) { return LL_Buffer_addr_base(buf) + buf->offset_limit; }
static inline uint32_t LL_Buffer_len(const LL_Buffer_InfoTypeDef *buf) { return buf->offset_end - buf->offset_start; }
static inline uint32_t LL_Buffer_bits(const LL_Buffer_InfoTypeDef *buf) { return buf->Qm + buf->Qn + (buf->Qunsigned ? 0 : 1); }

/* -- the network interface ------------------------------------------------------------------- */
#define LL_ATON_HAS_ENCRYPTION_INFO \
  ((LL_ATON_VERSION_MAJOR << 16 | LL_ATON_VERSION_MINOR << 8 | LL_ATON_VERSION_MICRO) >= 0x010103)

#if LL_ATON_HAS_ENCRYPTION_INFO
#include "ll_aton_cipher.h"
#endif

struct __nn_instance_struct;
typedef struct __nn_instance_struct NN_Instance_TypeDef;

#if LL_ATON_HAS_ENCRYPTION_INFO
#define LL_ATON__ENCRYPTION_PROTOS(name) \
  extern const LL_Streng_EncryptionTypedef *LL_ATON_WeightEncryption_Info_##name(void); \
  extern const LL_Streng_EncryptionTypedef *LL_ATON_BlobEncryption_Info_##name(void);
#else
#define LL_ATON__ENCRYPTION_PROTOS(name)
#endif

/* Declares the functions a generated network exports for the interface of network `name`. */
#define LL_ATON_DECLARE_NAMED_NN_PROTOS(name) \
  extern bool LL_ATON_EC_Network_Init_##name(void); \
  extern bool LL_ATON_EC_Inference_Init_##name(void); \
  extern LL_ATON_User_IO_Result_t LL_ATON_Set_User_Input_Buffer_##name(uint32_t num, void *buffer, uint32_t size); \
  extern void *LL_ATON_Get_User_Input_Buffer_##name(uint32_t num); \
  extern LL_ATON_User_IO_Result_t LL_ATON_Set_User_Output_Buffer_##name(uint32_t num, void *buffer, uint32_t size); \
  extern void *LL_ATON_Get_User_Output_Buffer_##name(uint32_t num); \
  extern const EpochBlock_ItemTypeDef *LL_ATON_EpochBlockItems_##name(void); \
  extern const LL_Buffer_InfoTypeDef *LL_ATON_Output_Buffers_Info_##name(void); \
  extern const LL_Buffer_InfoTypeDef *LL_ATON_Input_Buffers_Info_##name(void); \
  extern const LL_Buffer_InfoTypeDef *LL_ATON_Internal_Buffers_Info_##name(void); \
  LL_ATON__ENCRYPTION_PROTOS(name)

typedef bool (*NN_EC_Hook_TypeDef)(void);
typedef LL_ATON_User_IO_Result_t (*NN_InputSetter_TypeDef)(uint32_t num, void *buffer, uint32_t size);
typedef void *(*NN_InputGetter_TypeDef)(uint32_t num);
typedef LL_ATON_User_IO_Result_t (*NN_OutputSetter_TypeDef)(uint32_t num, void *buffer, uint32_t size);
typedef void *(*NN_OutputGetter_TypeDef)(uint32_t num);
typedef const EpochBlock_ItemTypeDef *(*NN_EpochBlockItems_TypeDef)(void);
typedef const LL_Buffer_InfoTypeDef *(*NN_Buffers_Info_TypeDef)(void);
#if LL_ATON_HAS_ENCRYPTION_INFO
typedef const LL_Streng_EncryptionTypedef *(*NN_Encryption_Info_TypeDef)(void);
#endif

typedef void (*TraceRuntime_FuncPtr_t)(LL_ATON_RT_Callbacktype_t ctype);
typedef void (*TraceEpochBlock_FuncPtr_t)(LL_ATON_RT_Callbacktype_t ctype, const NN_Instance_TypeDef *nn_instance,
                                          const EpochBlock_ItemTypeDef *epoch_block);

typedef struct {
  const char *network_name;
  NN_EC_Hook_TypeDef ec_network_init;
  NN_EC_Hook_TypeDef ec_inference_init;
  NN_InputSetter_TypeDef input_setter;
  NN_InputGetter_TypeDef input_getter;
  NN_OutputSetter_TypeDef output_setter;
  NN_OutputGetter_TypeDef output_getter;
  NN_EpochBlockItems_TypeDef epoch_block_items;
  NN_Buffers_Info_TypeDef output_buffers_info;
  NN_Buffers_Info_TypeDef input_buffers_info;
#if LL_ATON_HAS_ENCRYPTION_INFO
  NN_Encryption_Info_TypeDef blob_encryption_info;
  NN_Encryption_Info_TypeDef weight_encryption_info;
#endif
  NN_Buffers_Info_TypeDef internal_buffers_info;
} NN_Interface_TypeDef;

/* Where the runtime is in the execution of one network instance. */
typedef struct {
  const EpochBlock_ItemTypeDef *volatile current_epoch_block;
  const EpochBlock_ItemTypeDef *volatile first_epoch_block;
  const EpochBlock_ItemTypeDef *volatile next_epoch_block;
  const EpochBlock_ItemTypeDef *volatile saved_current_epoch_block;
  const EpochBlock_ItemTypeDef *volatile saved_first_epoch_block;
  bool inference_started;
#if (LL_ATON_RT_MODE == LL_ATON_RT_ASYNC)
  volatile uint32_t triggered_events;
  volatile bool current_epoch_block_started;
#endif
#ifndef NDEBUG
  volatile uint32_t nr_of_epoch_blocks;         /* the terminator included */
  volatile uint32_t saved_nr_of_epoch_blocks;
#endif
  TraceEpochBlock_FuncPtr_t epoch_callback_function;
#if defined(LL_ATON_RT_RELOC)
  uint32_t inst_reloc;                          /* the installed relocatable image, if any */
#endif
} NN_Execution_State_TypeDef;

struct __nn_instance_struct {
  const NN_Interface_TypeDef *network;
  NN_Execution_State_TypeDef exec_state;
};

#endif
