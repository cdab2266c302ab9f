/* int8 kernels of the simulated NetworkRuntime library (NetworkRuntime<ver>_CM55_GCC_PIC.a).
 * Activations are channel-last; requantisation rounds to nearest, ties to even
 * (as QuantizeLinear does). */
#ifndef NR_KERNELS_H
#define NR_KERNELS_H

#include <stdint.h>

#define NR_MAX_DIMS 6
/* nr_pool_s8 modes. NR_POOL_AVG_CODES is TFLite's AVERAGE_POOL_2D: the codes themselves averaged
 * over the window's inside cells, rounded half away from zero (input and output share one grid). */
#define NR_POOL_AVG 0
#define NR_POOL_MAX 1
#define NR_POOL_AVG_CODES 2
#define NR_ELTWISE_ADD 0
#define NR_ELTWISE_MUL 1
#define NR_ELTWISE_ADD_FIXED 2   /* Add with integer multipliers and a shift: LiteRT's arithmetic */
#define NR_COORD_HALF_PIXEL 0
#define NR_COORD_ASYMMETRIC 1
#define NR_COORD_ALIGN_CORNERS 2
#define NR_COORD_PYTORCH_HALF_PIXEL 3
#define NR_NEAREST_ROUND_PREFER_FLOOR 0
#define NR_NEAREST_ROUND_PREFER_CEIL 1
#define NR_NEAREST_FLOOR 2
#define NR_NEAREST_CEIL 3

int32_t nr_round(float x);
float nr_expf(float x);

void nr_conv2d_s8(const int8_t *in, int8_t *out, const int8_t *weights, const int32_t *bias,
                  const float *multiplier, int in_h, int in_w, int in_c, int out_h, int out_w, int out_c,
                  int k_h, int k_w, int stride_h, int stride_w, int pad_top, int pad_left,
                  int dil_h, int dil_w, int groups, int in_zp, int out_zp, int act_min, int act_max);
void nr_dense_s8(const int8_t *in, int8_t *out, const int8_t *weights, const int32_t *bias,
                 const float *multiplier, int n_in, int n_out, int in_zp, int out_zp, int act_min, int act_max);
void nr_pool_s8(const int8_t *in, int8_t *out, float multiplier, int in_h, int in_w, int c, int out_h,
                int out_w, int k_h, int k_w, int stride_h, int stride_w, int pad_top, int pad_left,
                int in_zp, int out_zp, int mode);
void nr_softmax_s8(const int8_t *in, int8_t *out, float in_scale, float out_scale, int rows, int n,
                   int in_zp, int out_zp);
/* Broadcasting Add/Mul: desc holds ndim x {count, a_stride, b_stride}; output contiguous.
 * NR_ELTWISE_ADD_FIXED uses fixed_a, fixed_b and shift instead of mult_a, mult_b. */
void nr_eltwise_s8(const int8_t *a, const int8_t *b, int8_t *out, int ndim, const int32_t *desc, int op,
                   float mult_a, float mult_b, int32_t fixed_a, int32_t fixed_b, int shift, int a_zp, int b_zp,
                   int out_zp, int act_min, int act_max);
/* Unary operators as 256-entry tables; table (i / inner) % n_tables serves element i. */
void nr_lut_s8(const int8_t *in, int8_t *out, const int8_t *table, int count, int inner, int n_tables);
void nr_resize_s8(const int8_t *in, int8_t *out, int in_h, int in_w, int c, int out_h, int out_w, int bilinear,
                  int coord_mode, int nearest_mode, float scale_h, float scale_w, float in_scale, float out_scale,
                  int in_zp, int out_zp);
void nr_quantize_f32(const float *in, int8_t *out, int count, float scale, int zp);
void nr_dequantize_s8(const int8_t *in, float *out, int count, float scale, int zp);
void nr_shift_u8_s8(const uint8_t *in, int8_t *out, int count);
void nr_shift_s8_u8(const int8_t *in, uint8_t *out, int count);

#endif
