/* int8 kernels of the simulated NetworkRuntime library. */
#include "nr_kernels.h"

static inline int clamp(int64_t v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

static inline float fabs_f(float x) { return x < 0.0f ? -x : x; }

static int32_t nr_floor(float x)
{
  int32_t i = (int32_t)x;
  return (float)i > x ? i - 1 : i;
}

/* Nearest integer, ties to even: QuantizeLinear's and onnxruntime's requantisation rule. Only
 * exact steps (truncation, the fraction x - trunc(x), comparisons with 0.5), so -ffast-math and the
 * FPU's rounding mode cannot change the result: the host and the Cortex-M builds agree bit for bit. */
int32_t nr_round(float x)
{
  if (x >= 2147483520.0f) return 2147483647;
  if (x <= -2147483648.0f) return -2147483647 - 1;
  int32_t i = (int32_t)x;
  float frac = x - (float)i;       /* exact: |frac| < 1 */
  if (frac > 0.5f || (frac == 0.5f && (i & 1))) return i + 1;
  if (frac < -0.5f || (frac == -0.5f && (i & 1))) return i - 1;
  return i;
}

float nr_expf(float x)
{
  if (x < -87.0f) return 0.0f;
  if (x > 88.0f) x = 88.0f;
  int32_t n = nr_round(x * 1.44269504f);
  float r = x - (float)n * 0.693147181f;
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.166666667f + r * (0.0416666667f +
            r * (0.00833333333f + r * 0.00138888889f)))));
  union { float f; uint32_t u; } two_n = {.u = (uint32_t)(n + 127) << 23};
  return p * two_n.f;
}

void nr_conv2d_s8(const int8_t *in, int8_t *out, const int8_t *weights, const int32_t *bias,
                  const float *multiplier, int in_h, int in_w, int in_c, int out_h, int out_w, int out_c,
                  int k_h, int k_w, int stride_h, int stride_w, int pad_top, int pad_left,
                  int dil_h, int dil_w, int groups, int in_zp, int out_zp, int act_min, int act_max)
{
  int gc = in_c / groups, goc = out_c / groups;   /* input / output channels per group */
  for (int oy = 0; oy < out_h; oy++) {
    for (int ox = 0; ox < out_w; ox++) {
      for (int oc = 0; oc < out_c; oc++) {
        int32_t acc = bias ? bias[oc] : 0;
        int c0 = oc / goc * gc;
        for (int ky = 0; ky < k_h; ky++) {
          int iy = oy * stride_h - pad_top + ky * dil_h;
          if (iy < 0 || iy >= in_h) continue;
          for (int kx = 0; kx < k_w; kx++) {
            int ix = ox * stride_w - pad_left + kx * dil_w;
            if (ix < 0 || ix >= in_w) continue;
            const int8_t *px = in + (iy * in_w + ix) * in_c + c0;
            const int8_t *pw = weights + ((oc * k_h + ky) * k_w + kx) * gc;
            for (int ic = 0; ic < gc; ic++) acc += (px[ic] - in_zp) * pw[ic];
          }
        }
        *out++ = (int8_t)clamp(nr_round((float)acc * multiplier[oc]) + out_zp, act_min, act_max);
      }
    }
  }
}

void nr_dense_s8(const int8_t *in, int8_t *out, const int8_t *weights, const int32_t *bias,
                 const float *multiplier, int n_in, int n_out, int in_zp, int out_zp, int act_min, int act_max)
{
  for (int o = 0; o < n_out; o++) {
    int32_t acc = bias ? bias[o] : 0;
    const int8_t *w = weights + o * n_in;
    for (int i = 0; i < n_in; i++) acc += (in[i] - in_zp) * w[i];
    out[o] = (int8_t)clamp(nr_round((float)acc * multiplier[o]) + out_zp, act_min, act_max);
  }
}

void nr_pool_s8(const int8_t *in, int8_t *out, float multiplier, int in_h, int in_w, int c, int out_h,
                int out_w, int k_h, int k_w, int stride_h, int stride_w, int pad_top, int pad_left,
                int in_zp, int out_zp, int mode)
{
  int is_max = mode == NR_POOL_MAX;
  for (int oy = 0; oy < out_h; oy++) {
    for (int ox = 0; ox < out_w; ox++) {
      for (int ch = 0; ch < c; ch++) {
        int32_t acc = is_max ? -128 : 0, inside_cells = 0;
        for (int ky = 0; ky < k_h; ky++) {
          int iy = oy * stride_h - pad_top + ky;
          for (int kx = 0; kx < k_w; kx++) {
            int ix = ox * stride_w - pad_left + kx;
            int inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
            int v = inside ? in[(iy * in_w + ix) * c + ch] - in_zp : 0;
            inside_cells += inside;
            if (is_max) {
              if (inside && v + in_zp > acc) acc = v + in_zp;
            } else {
              acc += v;
            }
          }
        }
        if (mode == NR_POOL_AVG_CODES) {
          int32_t sum = acc + inside_cells * in_zp;
          *out++ = (int8_t)clamp(sum > 0 ? (sum + inside_cells / 2) / inside_cells
                                         : (sum - inside_cells / 2) / inside_cells, -128, 127);
          continue;
        }
        if (is_max) acc -= in_zp;
        *out++ = (int8_t)clamp(nr_round((float)acc * multiplier) + out_zp, -128, 127);
      }
    }
  }
}

void nr_softmax_s8(const int8_t *in, int8_t *out, float in_scale, float out_scale, int rows, int n,
                   int in_zp, int out_zp)
{
  for (int r = 0; r < rows; r++, in += n, out += n) {
    int max = in[0];
    for (int i = 1; i < n; i++) if (in[i] > max) max = in[i];
    float sum = 0.0f;
    for (int i = 0; i < n; i++) sum += nr_expf((float)(in[i] - max) * in_scale);
    float k = 1.0f / (sum * out_scale);
    for (int i = 0; i < n; i++)
      out[i] = (int8_t)clamp(nr_round(nr_expf((float)(in[i] - max) * in_scale) * k) + out_zp, -128, 127);
  }
}

void nr_quantize_f32(const float *in, int8_t *out, int count, float scale, int zp)
{
  for (int i = 0; i < count; i++) out[i] = (int8_t)clamp((int64_t)nr_round(in[i] / scale) + zp, -128, 127);
}

void nr_dequantize_s8(const int8_t *in, float *out, int count, float scale, int zp)
{
  for (int i = 0; i < count; i++) out[i] = (float)(in[i] - zp) * scale;
}

void nr_shift_u8_s8(const uint8_t *in, int8_t *out, int count)
{
  for (int i = 0; i < count; i++) out[i] = (int8_t)(in[i] ^ 0x80u);
}

void nr_shift_s8_u8(const int8_t *in, uint8_t *out, int count)
{
  for (int i = 0; i < count; i++) out[i] = (uint8_t)in[i] ^ 0x80u;
}

/* Walks `ndim` nested counters (last fastest); returns 0 once every index wrapped. */
static int next_index(int32_t *idx, const int32_t *desc, int ndim, int stride_words)
{
  for (int d = ndim - 1; d >= 0; d--) {
    if (++idx[d] < desc[d * stride_words]) return 1;
    idx[d] = 0;
  }
  return 0;
}

void nr_eltwise_s8(const int8_t *a, const int8_t *b, int8_t *out, int ndim, const int32_t *desc, int op,
                   float mult_a, float mult_b, int32_t fixed_a, int32_t fixed_b, int shift, int a_zp, int b_zp,
                   int out_zp, int act_min, int act_max)
{
  int32_t idx[NR_MAX_DIMS] = {0};
  /* fixed: out = (rounding - fixed_a * a_zp - fixed_b * b_zp + fixed_a * a + fixed_b * b) >> shift, in int32
   * (multipliers below 2^21, so no overflow); the shift is arithmetic, the bias rounds half up */
  int32_t bias = op == NR_ELTWISE_ADD_FIXED ? (INT32_C(1) << (shift - 1)) - fixed_a * a_zp - fixed_b * b_zp : 0;
  do {
    int32_t ia = 0, ib = 0;
    for (int d = 0; d < ndim; d++) {
      ia += idx[d] * desc[d * 3 + 1];    /* count, a_stride, b_stride */
      ib += idx[d] * desc[d * 3 + 2];
    }
    int32_t q;
    if (op == NR_ELTWISE_ADD_FIXED)
      q = (bias + fixed_a * a[ia] + fixed_b * b[ib]) >> shift;
    else if (op == NR_ELTWISE_MUL)
      q = nr_round((float)((a[ia] - a_zp) * (b[ib] - b_zp)) * mult_a);
    else
      q = nr_round((float)(a[ia] - a_zp) * mult_a + (float)(b[ib] - b_zp) * mult_b);
    *out++ = (int8_t)clamp(q + out_zp, act_min, act_max);
  } while (next_index(idx, desc, ndim, 3));
}

void nr_lut_s8(const int8_t *in, int8_t *out, const int8_t *table, int count, int inner, int n_tables)
{
  for (int i = 0; i < count; i++)
    out[i] = table[(i / inner) % n_tables * 256 + in[i] + 128];
}

/* Source coordinate of output index x (ONNX coordinate_transformation_mode). */
static float source_coord(int x, float scale, int in_len, int out_len, int mode)
{
  switch (mode) {
  case NR_COORD_ASYMMETRIC: return (float)x / scale;
  case NR_COORD_ALIGN_CORNERS: return out_len > 1 ? (float)x * (float)(in_len - 1) / (float)(out_len - 1) : 0.0f;
  case NR_COORD_PYTORCH_HALF_PIXEL: return out_len > 1 ? ((float)x + 0.5f) / scale - 0.5f : 0.0f;
  default: return ((float)x + 0.5f) / scale - 0.5f;
  }
}

static int nearest(float v, int mode, int len)
{
  int32_t f = nr_floor(v);
  int i;
  switch (mode) {
  case NR_NEAREST_FLOOR: i = f; break;
  case NR_NEAREST_CEIL: i = (float)f == v ? f : f + 1; break;
  case NR_NEAREST_ROUND_PREFER_CEIL: i = v - (float)f >= 0.5f ? f + 1 : f; break;
  default: i = v - (float)f > 0.5f ? f + 1 : f; break;
  }
  return clamp(i, 0, len - 1);
}

/* onnxruntime's Resize on the dequantised floats, step for step (DQ -> Resize -> Q): the source
 * coordinate clamped to the input, weights dx1 = |x - x1|, dx2 = |x - x2| (0.5 each on the border),
 * out = dx2*dy2*X11 + dx1*dy2*X21 + dx2*dy1*X12 + dx1*dy1*X22, then QuantizeLinear (x / scale). */
static void bilinear_axis(float s, int len, int *i1, int *i2, float *d1, float *d2)
{
  s = s < 0.0f ? 0.0f : (s > (float)(len - 1) ? (float)(len - 1) : s);
  *i1 = (int)s < len - 1 ? (int)s : len - 1;
  *i2 = *i1 + 1 < len - 1 ? *i1 + 1 : len - 1;
  *d1 = *i1 == *i2 ? 0.5f : fabs_f(s - (float)*i1);
  *d2 = *i1 == *i2 ? 0.5f : fabs_f(s - (float)*i2);
}

static inline int8_t quantize(float v, float out_scale, int out_zp)
{
  return (int8_t)clamp(nr_round(v / out_scale) + out_zp, -128, 127);
}

void nr_resize_s8(const int8_t *in, int8_t *out, int in_h, int in_w, int c, int out_h, int out_w, int bilinear,
                  int coord_mode, int nearest_mode, float scale_h, float scale_w, float in_scale, float out_scale,
                  int in_zp, int out_zp)
{
  for (int oy = 0; oy < out_h; oy++) {
    float sy = source_coord(oy, scale_h, in_h, out_h, coord_mode);
    for (int ox = 0; ox < out_w; ox++) {
      float sx = source_coord(ox, scale_w, in_w, out_w, coord_mode);
      if (!bilinear) {
        const int8_t *p = in + (nearest(sy, nearest_mode, in_h) * in_w + nearest(sx, nearest_mode, in_w)) * c;
        for (int ch = 0; ch < c; ch++) *out++ = quantize((float)(p[ch] - in_zp) * in_scale, out_scale, out_zp);
        continue;
      }
      int y1, y2, x1, x2;
      float dy1, dy2, dx1, dx2;
      bilinear_axis(sy, in_h, &y1, &y2, &dy1, &dy2);
      bilinear_axis(sx, in_w, &x1, &x2, &dx1, &dx2);
      const int8_t *p11 = in + (y1 * in_w + x1) * c, *p21 = in + (y1 * in_w + x2) * c;
      const int8_t *p12 = in + (y2 * in_w + x1) * c, *p22 = in + (y2 * in_w + x2) * c;
      float w11 = dx2 * dy2, w21 = dx1 * dy2, w12 = dx2 * dy1, w22 = dx1 * dy1;
      for (int ch = 0; ch < c; ch++) {
        float v = w11 * ((float)(p11[ch] - in_zp) * in_scale) + w21 * ((float)(p21[ch] - in_zp) * in_scale) +
                  w12 * ((float)(p12[ch] - in_zp) * in_scale) + w22 * ((float)(p22[ch] - in_zp) * in_scale);
        *out++ = quantize(v, out_scale, out_zp);
      }
    }
  }
}
