/* int8 kernels of the simulated NetworkRuntime library. */
#include "nr_kernels.h"

static inline int clamp(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

int32_t nr_round(float x) { return (int32_t)(x >= 0.0f ? x + 0.5f : x - 0.5f); }

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
                  int in_zp, int out_zp, int act_min, int act_max)
{
  for (int oy = 0; oy < out_h; oy++) {
    for (int ox = 0; ox < out_w; ox++) {
      for (int oc = 0; oc < out_c; oc++) {
        int32_t acc = bias ? bias[oc] : 0;
        for (int ky = 0; ky < k_h; ky++) {
          int iy = oy * stride_h - pad_top + ky;
          if (iy < 0 || iy >= in_h) continue;
          for (int kx = 0; kx < k_w; kx++) {
            int ix = ox * stride_w - pad_left + kx;
            if (ix < 0 || ix >= in_w) continue;
            const int8_t *px = in + (iy * in_w + ix) * in_c;
            const int8_t *pw = weights + ((oc * k_h + ky) * k_w + kx) * in_c;
            for (int ic = 0; ic < in_c; ic++) acc += (px[ic] - in_zp) * pw[ic];
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
                int in_zp, int out_zp, int is_max)
{
  for (int oy = 0; oy < out_h; oy++) {
    for (int ox = 0; ox < out_w; ox++) {
      for (int ch = 0; ch < c; ch++) {
        int32_t acc = is_max ? -128 : 0;
        for (int ky = 0; ky < k_h; ky++) {
          int iy = oy * stride_h - pad_top + ky;
          for (int kx = 0; kx < k_w; kx++) {
            int ix = ox * stride_w - pad_left + kx;
            int inside = iy >= 0 && iy < in_h && ix >= 0 && ix < in_w;
            int v = inside ? in[(iy * in_w + ix) * c + ch] - in_zp : 0;
            if (is_max) {
              if (inside && v + in_zp > acc) acc = v + in_zp;
            } else {
              acc += v;
            }
          }
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
  for (int i = 0; i < count; i++) out[i] = (int8_t)clamp(nr_round(in[i] / scale) + zp, -128, 127);
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
