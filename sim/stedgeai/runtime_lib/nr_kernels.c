/* int8 kernels of the simulated NetworkRuntime library. */
#include "nr_kernels.h"

/* The simulated board emulates every instruction these kernels execute: -O2 keeps their loop
 * variables in registers (-Os, the library's flag, spills them to the stack in every iteration),
 * without auto-vectorised Helium or low-overhead loops, which the board carries out one by one
 * in Python (sim/board/n6board/dk/mve.py). */
#pragma GCC optimize ("O2", "no-tree-vectorize", "no-branch-count-reg")

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

/* Four int8 pairs at a time, as two halfword lanes each: SXTAB16 sign-extends bytes 0 and 2 (or,
 * rotated by 8, bytes 1 and 3) and adds minus the zero point to both lanes (x - zp fits in 16 bits),
 * SMLAD adds both lanes' products to the accumulator. Integer arithmetic throughout: the Cortex-M
 * build (the instructions) and the host build (the same lanes in C) give the same sums. */
#if defined(__ARM_FEATURE_SIMD32) && defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
static inline uint32_t sxtb16(uint32_t x) { uint32_t r; __asm__("sxtb16 %0, %1" : "=r"(r) : "r"(x)); return r; }
static inline uint32_t sxtb16_hi(uint32_t x)
{
  uint32_t r;
  __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
  return r;
}
static inline uint32_t sxtab16(uint32_t a, uint32_t x)
{
  uint32_t r;
  __asm__("sxtab16 %0, %1, %2" : "=r"(r) : "r"(a), "r"(x));
  return r;
}
static inline uint32_t sxtab16_hi(uint32_t a, uint32_t x)
{
  uint32_t r;
  __asm__("sxtab16 %0, %1, %2, ror #8" : "=r"(r) : "r"(a), "r"(x));
  return r;
}
static inline int32_t smlad(uint32_t a, uint32_t b, int32_t acc)
{
  int32_t r;
  __asm__("smlad %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(acc));
  return r;
}
#else
static inline uint32_t lanes(int32_t lo, int32_t hi) { return ((uint32_t)lo & 0xFFFFu) | ((uint32_t)hi << 16); }
static inline uint32_t sxtb16(uint32_t x) { return lanes((int8_t)x, (int8_t)(x >> 16)); }
static inline uint32_t sxtb16_hi(uint32_t x) { return lanes((int8_t)(x >> 8), (int8_t)(x >> 24)); }
static inline uint32_t sxtab16(uint32_t a, uint32_t x) { return lanes((int16_t)a + (int8_t)x, (int16_t)(a >> 16) + (int8_t)(x >> 16)); }
static inline uint32_t sxtab16_hi(uint32_t a, uint32_t x) { return sxtab16(a, x >> 8); }
static inline int32_t smlad(uint32_t a, uint32_t b, int32_t acc)
{
  return (int32_t)((uint32_t)acc + (uint32_t)((int16_t)a * (int16_t)b) +
                   (uint32_t)((int16_t)(a >> 16) * (int16_t)(b >> 16)));
}
#endif

static inline uint32_t load4(const int8_t *p)
{
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

/* Both halfword lanes of minus the zero point: what sxtab16 adds. */
static inline uint32_t minus_zp2(int zp) { return (uint32_t)(uint16_t)(-zp) * 0x10001u; }

/* acc + the sum over i < n of (x[i] - zp) * w[i] */
static int32_t dot_s8(const int8_t *x, const int8_t *w, int n, int zp, int32_t acc)
{
  uint32_t nzp = minus_zp2(zp);
  for (; n >= 4; n -= 4, x += 4, w += 4) {
    uint32_t xv = load4(x), wv = load4(w);
    acc = smlad(sxtab16(nzp, xv), sxtb16(wv), acc);
    acc = smlad(sxtab16_hi(nzp, xv), sxtb16_hi(wv), acc);
  }
  for (; n > 0; n--) acc += (*x++ - zp) * *w++;
  return acc;
}

/* dot_s8 of one input run with two weight runs n bytes apart (two output channels): the input's
 * lanes are made once for both. acc[0], acc[1] in and out. */
__attribute__((noinline)) static void dot2_s8(const int8_t *x, const int8_t *w, int n, int stride, int zp, int32_t *acc)
{
  uint32_t nzp = minus_zp2(zp);
  const int8_t *w1 = w + stride, *end = x + (n & ~3);
  int32_t a0 = acc[0], a1 = acc[1];
  while (x != end) {
    uint32_t xv = load4(x), v0 = load4(w), v1 = load4(w1);
    uint32_t xa = sxtab16(nzp, xv), xb = sxtab16_hi(nzp, xv);
    a0 = smlad(xb, sxtb16_hi(v0), smlad(xa, sxtb16(v0), a0));
    a1 = smlad(xb, sxtb16_hi(v1), smlad(xa, sxtb16(v1), a1));
    x += 4;
    w += 4;
    w1 += 4;
  }
  for (n &= 3; n > 0; n--, x++) {
    a0 += (*x - zp) * *w++;
    a1 += (*x - zp) * *w1++;
  }
  acc[0] = a0;
  acc[1] = a1;
}

/* Nearest integer, ties to even, of a value already in the float32 grid of a product: adding and
 * taking off 1.5 * 2^23 leaves x rounded as the FPU rounds (to nearest, ties to even, as the product
 * before it) for |x| < 2^22; beyond, the output clamp decides. */
static inline int8_t requantize(int32_t acc, float multiplier, int out_zp, int act_min, int act_max)
{
  float x = (float)acc * multiplier;
  if (x <= -4194304.0f) return (int8_t)act_min;
  if (x >= 4194304.0f) return (int8_t)act_max;
  int32_t q = (int32_t)((x + 12582912.0f) - 12582912.0f) + out_zp;
  return (int8_t)(q < act_min ? act_min : (q > act_max ? act_max : q));
}

/* The first and one past the last kernel tap whose input index o + k * dil lies in [0, len). */
static void taps_inside(int o, int dil, int k, int len, int *first, int *end)
{
  int a = 0, b = k;
  while (a < k && o + a * dil < 0) a++;
  while (b > a && o + (b - 1) * dil >= len) b--;
  *first = a;
  *end = b;
}

/* What one output pixel reads: ny kernel rows dy bytes apart in the input (`row` weights apart),
 * nx taps dx bytes apart in each, gc channels per tap; `runs`: a row's taps are one run in memory. */
struct window {
  int ny, nx, dy, dx, row, gc, zp, runs;
};

__attribute__((noinline)) static int32_t window_dot(const int8_t *px, const int8_t *w, const struct window *v, int32_t acc)
{
  int zp = v->zp;
  for (int ky = 0; ky < v->ny; ky++, px += v->dy, w += v->row) {
    if (v->runs) {
      acc = dot_s8(px, w, v->nx * v->gc, zp, acc);
    } else if (v->gc == 1) {     /* depthwise: one weight per tap */
      const int8_t *p = px;
      int dx = v->dx;
      for (int kx = 0; kx < v->nx; kx++, p += dx) acc += (*p - zp) * w[kx];
    } else {
      for (int kx = 0; kx < v->nx; kx++) acc = dot_s8(px + kx * v->dx, w + kx * v->gc, v->gc, zp, acc);
    }
  }
  return acc;
}

/* Channel-last convolution. A kernel row's taps of one output channel are read as one run when the
 * channels of neighbouring taps follow each other in memory (one group, no horizontal dilation):
 * the padding only shortens the run; a pixel read as one run (1x1 kernels) feeds two output
 * channels at a time. */
void nr_conv2d_s8(const int8_t *in, int8_t *out, const int8_t *weights, const int32_t *bias,
                  const float *multiplier, int in_h, int in_w, int in_c, int out_h, int out_w, int out_c,
                  int k_h, int k_w, int stride_h, int stride_w, int pad_top, int pad_left,
                  int dil_h, int dil_w, int groups, int in_zp, int out_zp, int act_min, int act_max)
{
  int gc = in_c / groups, goc = out_c / groups;   /* input / output channels per group */
  struct window v = {0, 0, dil_h * in_w * in_c, dil_w * in_c, k_w * gc, gc, in_zp, groups == 1 && dil_w == 1};
  int kernel = k_h * v.row;                         /* weights of one output channel */
  for (int oy = 0; oy < out_h; oy++) {
    int iy0 = oy * stride_h - pad_top, ky0, ky1;
    taps_inside(iy0, dil_h, k_h, in_h, &ky0, &ky1);
    v.ny = ky1 - ky0;
    for (int ox = 0; ox < out_w; ox++) {
      int ix0 = ox * stride_w - pad_left, kx0, kx1;
      taps_inside(ix0, dil_w, k_w, in_w, &kx0, &kx1);
      v.nx = kx1 - kx0;
      const int8_t *px = in + ((iy0 + ky0 * dil_h) * in_w + ix0 + kx0 * dil_w) * in_c;
      const int8_t *w = weights + ky0 * v.row + kx0 * gc;
      int oc = 0;
      if (v.runs && v.ny == 1) {
        for (; oc + 1 < out_c; oc += 2, w += 2 * kernel) {
          int32_t acc[2] = {bias ? bias[oc] : 0, bias ? bias[oc + 1] : 0};
          dot2_s8(px, w, v.nx * gc, kernel, in_zp, acc);
          *out++ = requantize(acc[0], multiplier[oc], out_zp, act_min, act_max);
          *out++ = requantize(acc[1], multiplier[oc + 1], out_zp, act_min, act_max);
        }
      }
      for (; oc < out_c; oc++, w += kernel) {
        int32_t acc = window_dot(px + oc / goc * gc, w, &v, bias ? bias[oc] : 0);
        *out++ = requantize(acc, multiplier[oc], out_zp, act_min, act_max);
      }
    }
  }
}

void nr_dense_s8(const int8_t *in, int8_t *out, const int8_t *weights, const int32_t *bias,
                 const float *multiplier, int n_in, int n_out, int in_zp, int out_zp, int act_min, int act_max)
{
  for (int o = 0; o < n_out; o++) {
    int32_t acc = dot_s8(in, weights + o * n_in, n_in, in_zp, bias ? bias[o] : 0);
    out[o] = requantize(acc, multiplier[o], out_zp, act_min, act_max);
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
