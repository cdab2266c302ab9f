/* LL_ATON library functions that live in the firmware. A relocatable model reaches them through
 * the release's callback table (ll_aton_reloc_network.h): LL_ATON_LIB_FUNCTIONS lists them in
 * table order, after the assert / error / five cache entries that every release starts with.
 * Release differences: 3.0 adds async_memcpy and pad_4loop_filling at the end; 4.0 moves
 * transpose to entry 9, replaces the pad_memset / pad_filling / async_memcpy /
 * pad_4loop_filling entries by pad_std and pad_4loop, and passes nn_instance to most calls. */
#ifndef LL_ATON_LIB_H
#define LL_ATON_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "ll_aton_NN_interface.h"

#if LL_ATON_VERSION_MICRO < 3
#define LL_ATON_RELOC_CALLBACKS_RELEASE 22        /* LL_ATON 1.1.1 (ST Edge AI 2.2) */
#elif LL_ATON_VERSION_DEV < 100
#define LL_ATON_RELOC_CALLBACKS_RELEASE 30        /* LL_ATON 1.1.3-8 (3.0) */
#else
#define LL_ATON_RELOC_CALLBACKS_RELEASE 40        /* LL_ATON 1.1.3-262 (4.0) */
#endif

/* Operand types the model only passes through. */
typedef struct ll_lib_tensor_info LL_LIB_TensorInfo_TypeDef;
typedef struct ll_pad_sw_params __ll_pad_sw_params_t;
typedef LL_Buffer_InfoTypeDef LL_LIB_Buffer;

#if LL_ATON_RELOC_CALLBACKS_RELEASE >= 40
#define LL_LIB_NN_P , const NN_Instance_TypeDef *nn_instance
#define LL_LIB_NN_A , nn_instance
#else
#define LL_LIB_NN_P
#define LL_LIB_NN_A
#endif

#define LL_LIB_TENSORS_P const LL_LIB_TensorInfo_TypeDef *inputs, unsigned int ninputs, const LL_LIB_TensorInfo_TypeDef *output
#define LL_LIB_TENSORS_A inputs, ninputs, output
#define LL_LIB_DMA_P int dma_in, int dma_out LL_LIB_NN_P
#define LL_LIB_DMA_A dma_in, dma_out LL_LIB_NN_A

/* X(table member, function, (parameters), (arguments)) */
#define LL_LIB_X_CONCAT(X) X(ll_aton_lib_concat, LL_ATON_LIB_Concat, \
  (const LL_Buffer_InfoTypeDef *inputs, unsigned int ninputs, const LL_Buffer_InfoTypeDef *output, unsigned int axis, LL_LIB_DMA_P), \
  (inputs, ninputs, output, axis, LL_LIB_DMA_A))
#define LL_LIB_X_CAST(X) X(ll_aton_lib_cast, LL_ATON_LIB_Cast, \
  (const LL_LIB_TensorInfo_TypeDef *input, const LL_LIB_TensorInfo_TypeDef *output, LL_LIB_DMA_P), (input, output, LL_LIB_DMA_A))
#define LL_LIB_X_SOFTMAX(X) X(ll_aton_lib_softmax, LL_ATON_LIB_Softmax, \
  (const LL_LIB_TensorInfo_TypeDef *input, const LL_LIB_TensorInfo_TypeDef *output, unsigned int axis, int legacy), \
  (input, output, axis, legacy))
#define LL_LIB_X_TRANSPOSE(X) X(ll_aton_lib_dma_transpose, LL_ATON_LIB_DMA_Transpose, \
  (const LL_Buffer_InfoTypeDef *input, const uint32_t *input_axes_offsets, const LL_Buffer_InfoTypeDef *output, \
   const uint32_t *output_axes_offsets, const uint8_t *target_pos, const uint8_t *perm_to_use, LL_LIB_DMA_P), \
  (input, input_axes_offsets, output, output_axes_offsets, target_pos, perm_to_use, LL_LIB_DMA_A))
#define LL_LIB_X_BLOCKS(X) \
  X(ll_aton_lib_dma_imagetorow, LL_ATON_LIB_DMA_ImageToRow, (LL_LIB_TENSORS_P, unsigned int blocksize_h, \
    unsigned int blocksize_w, unsigned int stride_h, unsigned int stride_w, LL_LIB_DMA_P), \
    (LL_LIB_TENSORS_A, blocksize_h, blocksize_w, stride_h, stride_w, LL_LIB_DMA_A)) \
  X(ll_aton_lib_dma_spacetodepth, LL_ATON_LIB_DMA_SpaceToDepth, (LL_LIB_TENSORS_P, unsigned int blocksize_h, \
    unsigned int blocksize_w, LL_LIB_DMA_P), (LL_LIB_TENSORS_A, blocksize_h, blocksize_w, LL_LIB_DMA_A)) \
  X(ll_aton_lib_dma_rowtoimage, LL_ATON_LIB_DMA_RowToImage, (LL_LIB_TENSORS_P, unsigned int blocksize_h, \
    unsigned int blocksize_w, unsigned int stride_h, unsigned int stride_w, LL_LIB_DMA_P), \
    (LL_LIB_TENSORS_A, blocksize_h, blocksize_w, stride_h, stride_w, LL_LIB_DMA_A)) \
  X(ll_aton_lib_dma_depthtospace, LL_ATON_LIB_DMA_DepthToSpace, (LL_LIB_TENSORS_P, unsigned int blocksize_h, \
    unsigned int blocksize_w, LL_LIB_DMA_P), (LL_LIB_TENSORS_A, blocksize_h, blocksize_w, LL_LIB_DMA_A))
#define LL_LIB_X_SPLITLIKE(X) X(ll_aton_lib_dma_outputs_slice_splitlike, LL_ATON_LIB_DMA_Outputs_Slice_SplitLike, \
  (const LL_LIB_Buffer *input, const LL_LIB_Buffer *output, int32_t tot_out_size, int32_t width_in_bytes, \
   int32_t fheight, int32_t line_offset, int8_t n_bits, LL_LIB_DMA_P), \
  (input, output, tot_out_size, width_in_bytes, fheight, line_offset, n_bits, LL_LIB_DMA_A))

#if LL_ATON_RELOC_CALLBACKS_RELEASE >= 40
#define LL_LIB_INTERNAL(name) __##name
#else
#define LL_LIB_INTERNAL(name) name
#endif
#define LL_LIB_X_FLAT_COPY(X) X(ll_aton_lib_dma_outputs_flat_copy, LL_LIB_INTERNAL(LL_ATON_LIB_DMA_Outputs_Flat_Copy), \
  (const LL_LIB_Buffer *input, const LL_LIB_Buffer *outputs, unsigned int nr_of_outputs, LL_LIB_DMA_P), \
  (input, outputs, nr_of_outputs, LL_LIB_DMA_A))
#define LL_LIB_X_CHANNEL_SPLITS(X) \
  X(ll_aton_lib_dma_outputs_channel_split_aton, LL_LIB_INTERNAL(LL_ATON_LIB_DMA_Outputs_Channel_Split_Aton), \
    (const LL_LIB_Buffer *input, const LL_LIB_Buffer *outputs, unsigned int nr_of_outputs, unsigned int leading_dims, \
     LL_LIB_DMA_P), (input, outputs, nr_of_outputs, leading_dims, LL_LIB_DMA_A)) \
  X(ll_aton_lib_dma_outputs_channel_split_batched, LL_LIB_INTERNAL(LL_ATON_LIB_DMA_Outputs_Channel_Split_Batched), \
    (const LL_LIB_Buffer *input, const LL_LIB_Buffer *outputs, unsigned int nr_of_outputs, LL_LIB_DMA_P), \
    (input, outputs, nr_of_outputs, LL_LIB_DMA_A))

#if LL_ATON_RELOC_CALLBACKS_RELEASE == 30
#define LL_LIB_PAD_MEMSET_DEEP_P , bool deep_copy
#define LL_LIB_PAD_MEMSET_DEEP_A , deep_copy
#else
#define LL_LIB_PAD_MEMSET_DEEP_P
#define LL_LIB_PAD_MEMSET_DEEP_A
#endif
#define LL_LIB_X_PAD_DMA(X) \
  X(ll_aton_lib_dma_pad_memset, LL_ATON_LIB_DMA_Pad_Memset, (void *output, int32_t constant_value, size_t c, \
    __ll_pad_sw_params_t *common_params LL_LIB_PAD_MEMSET_DEEP_P), \
    (output, constant_value, c, common_params LL_LIB_PAD_MEMSET_DEEP_A)) \
  X(ll_aton_lib_dma_pad_filling, LL_ATON_LIB_DMA_Pad_Filling, (__ll_pad_sw_params_t *init_common_params), \
    (init_common_params))
#define LL_LIB_X_ASYNC_4LOOP(X) \
  X(ll_aton_lib_async_memcpy, LL_ATON_LIB_Async_Memcpy, (unsigned char *input_start, unsigned char *input_end, \
    unsigned char *input_limit, unsigned char *output_start, int dma_in, int dma_out), \
    (input_start, input_end, input_limit, output_start, dma_in, dma_out)) \
  X(ll_aton_lib_dma_pad_4loop_filling, LL_ATON_LIB_DMA_Pad_4Loop_Filling, (__ll_pad_sw_params_t *common_params), \
    (common_params))
#define LL_LIB_X_PAD_40(X) \
  X(ll_aton_lib_pad_std, LL_ATON_LIB_Pad_Standard, (unsigned char *input, unsigned char *output, \
    unsigned char *input_limit, unsigned char *output_limit, const uint32_t *min_shape, uint8_t mode, uint8_t nbytes, \
    uint32_t out_elems, int32_t constant_value, uint32_t consecutive_axis, uint32_t consecutive_elems, \
    const int32_t *pad_in_offsets_start, const int32_t *pad_in_offsets_end, const int32_t *pad_out_offsets_start, \
    const int32_t *pad_out_offsets_end, const int32_t *out_shape, const int32_t *out_offsets, size_t tensor_rank, \
    LL_LIB_DMA_P), (input, output, input_limit, output_limit, min_shape, mode, nbytes, out_elems, constant_value, \
    consecutive_axis, consecutive_elems, pad_in_offsets_start, pad_in_offsets_end, pad_out_offsets_start, \
    pad_out_offsets_end, out_shape, out_offsets, tensor_rank, LL_LIB_DMA_A)) \
  X(ll_aton_lib_pad_4loop, LL_ATON_LIB_Pad_4Loop, (unsigned char *input_start, unsigned char *input_end, \
    unsigned char *input_limit, unsigned char *output_start, unsigned char *output_end, unsigned char *output_limit, \
    int32_t constant_value, uint8_t nbytes, uint32_t *negative_4loop, uint32_t *positive_4loop, LL_LIB_DMA_P), \
    (input_start, input_end, input_limit, output_start, output_end, output_limit, constant_value, nbytes, \
     negative_4loop, positive_4loop, LL_LIB_DMA_A))

#if LL_ATON_RELOC_CALLBACKS_RELEASE >= 40
#define LL_ATON_LIB_FUNCTIONS(X) LL_LIB_X_CONCAT(X) LL_LIB_X_CAST(X) LL_LIB_X_TRANSPOSE(X) LL_LIB_X_SOFTMAX(X) \
  LL_LIB_X_BLOCKS(X) LL_LIB_X_SPLITLIKE(X) LL_LIB_X_PAD_40(X) LL_LIB_X_FLAT_COPY(X) LL_LIB_X_CHANNEL_SPLITS(X)
#else
#define LL_ATON_LIB_FUNCTIONS_22(X) LL_LIB_X_CONCAT(X) LL_LIB_X_CAST(X) LL_LIB_X_SOFTMAX(X) LL_LIB_X_BLOCKS(X) \
  LL_LIB_X_FLAT_COPY(X) LL_LIB_X_SPLITLIKE(X) LL_LIB_X_CHANNEL_SPLITS(X) LL_LIB_X_PAD_DMA(X) LL_LIB_X_TRANSPOSE(X)
#if LL_ATON_RELOC_CALLBACKS_RELEASE == 30
#define LL_ATON_LIB_FUNCTIONS(X) LL_ATON_LIB_FUNCTIONS_22(X) LL_LIB_X_ASYNC_4LOOP(X)
#else
#define LL_ATON_LIB_FUNCTIONS(X) LL_ATON_LIB_FUNCTIONS_22(X)
#endif
#endif

#define LL_LIB_DECLARE(member, fn, params, args) int fn params;
LL_ATON_LIB_FUNCTIONS(LL_LIB_DECLARE)
#undef LL_LIB_DECLARE

#endif
