/* Software (CPU) epochs: one parameter block per operator, consumed by ll_sw_forward_*().
 * Generated networks fill these blocks; the int8 math lives in the NetworkRuntime library. */
#ifndef LL_SW_H
#define LL_SW_H

#include <stdint.h>

typedef struct {
  const int8_t *in;
  int8_t *out;
  const int8_t *weights;      /* OHWI */
  const int32_t *bias;        /* may be NULL */
  const float *multiplier;    /* per output channel: in_scale * w_scale / out_scale */
  uint16_t in_h, in_w, in_c;
  uint16_t out_h, out_w, out_c;
  uint16_t k_h, k_w, stride_h, stride_w, pad_top, pad_left;
  uint16_t dil_h, dil_w, groups;  /* depthwise: groups == in_c */
  int8_t in_zp, out_zp, act_min, act_max;
} LL_SW_Conv_Int8_Info;

typedef struct {
  const int8_t *in;
  int8_t *out;
  const int8_t *weights;      /* [n_out][n_in] */
  const int32_t *bias;        /* may be NULL */
  const float *multiplier;    /* per output */
  uint32_t n_in, n_out;
  int8_t in_zp, out_zp, act_min, act_max;
} LL_SW_Dense_Int8_Info;

typedef struct {
  const int8_t *in;
  int8_t *out;
  float multiplier;           /* max: in/out scale; average: in/(out * window) */
  uint16_t in_h, in_w, c, out_h, out_w;
  uint16_t k_h, k_w, stride_h, stride_w, pad_top, pad_left;
  int8_t in_zp, out_zp;
  uint8_t mode;               /* NR_POOL_AVG, NR_POOL_MAX or NR_POOL_AVG_CODES */
} LL_SW_Pool_Int8_Info;

typedef struct {
  const int8_t *in;
  const int32_t *desc;        /* ndim x {count, out_stride, in_stride, start, step, bound} */
  int32_t out_offset;
  float multiplier;           /* in_scale / out_scale */
  uint8_t ndim;
  int8_t in_zp;
} LL_SW_Gather_Part;

typedef struct {             /* Transpose, Slice, Pad, Concat (one part per input), Reshape */
  int8_t *out;
  const LL_SW_Gather_Part *parts;
  uint32_t n_parts;
  int8_t out_zp, pad_value;
} LL_SW_Gather_Int8_Info;

#define LL_SW_ELTWISE_ADD 0
#define LL_SW_ELTWISE_MUL 1
#define LL_SW_ELTWISE_ADD_FIXED 2

typedef struct {             /* Add / Mul with broadcasting */
  const int8_t *a, *b;
  int8_t *out;
  const int32_t *desc;        /* ndim x {count, a_stride, b_stride} over the output */
  float mult_a, mult_b;       /* add: a_scale/out_scale, b_scale/out_scale; mul: a*b/out */
  int32_t fixed_a, fixed_b;   /* add fixed: the two ratios times 2^shift, rounded */
  uint8_t ndim, op, shift;
  int8_t a_zp, b_zp, out_zp, act_min, act_max;
} LL_SW_Eltwise_Int8_Info;

typedef struct {             /* unary operators: Sigmoid, HardSwish, LeakyRelu, PRelu, Clip, ... */
  const int8_t *in;
  int8_t *out;
  const int8_t *table;        /* n_tables x 256, indexed by input + 128 */
  uint32_t count, inner, n_tables;
} LL_SW_Lut_Int8_Info;

typedef struct {
  const int8_t *in;
  int8_t *out;
  uint16_t in_h, in_w, c, out_h, out_w;
  uint8_t bilinear, coord_mode, nearest_mode;
  float scale_h, scale_w, in_scale, out_scale;
  int8_t in_zp, out_zp;
} LL_SW_Resize_Int8_Info;

typedef struct {
  const int8_t *in;
  int8_t *out;
  float in_scale, out_scale;
  uint32_t rows, n;           /* softmax over the last axis of size n */
  int8_t in_zp, out_zp;
} LL_SW_Softmax_Int8_Info;

typedef enum {
  LL_SW_CONVERT_FLOAT_TO_INT8 = 0,
  LL_SW_CONVERT_UINT8_TO_INT8,
  LL_SW_CONVERT_INT8_TO_FLOAT,
  LL_SW_CONVERT_INT8_TO_UINT8,
} LL_SW_Convert_Mode;

typedef struct {
  const void *in;
  void *out;
  float scale;
  uint32_t count;
  int16_t zero_point;         /* of the int8 side */
  LL_SW_Convert_Mode mode;
} LL_SW_Convert_Info;

void ll_sw_forward_conv_int8(const void *sw_info);
void ll_sw_forward_dense_int8(const void *sw_info);
void ll_sw_forward_pool_int8(const void *sw_info);
void ll_sw_forward_gather_int8(const void *sw_info);
void ll_sw_forward_eltwise_int8(const void *sw_info);
void ll_sw_forward_lut_int8(const void *sw_info);
void ll_sw_forward_resize_int8(const void *sw_info);
void ll_sw_forward_softmax_int8(const void *sw_info);
void ll_sw_forward_convert(const void *sw_info);

#endif
