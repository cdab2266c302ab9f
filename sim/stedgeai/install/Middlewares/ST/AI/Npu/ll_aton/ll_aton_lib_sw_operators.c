/* Layout operators run on the CPU by LL_ATON itself: requantising strided copies (Transpose,
 * Slice, Pad, Concat, Reshape across the channel-last layout). */
#include "ll_sw.h"

int32_t nr_round(float x);   /* the runtime library's rounding (ties to even) */

#define MAX_DIMS 6

static int8_t requant(int v, float multiplier, int out_zp)
{
  int r = nr_round((float)v * multiplier) + out_zp;
  return (int8_t)(r < -128 ? -128 : (r > 127 ? 127 : r));
}

/* desc: ndim x {count, out_stride, in_stride, start, step, bound}; an input index outside
 * [0, bound) writes the pad value. */
static void gather(const LL_SW_Gather_Part *p, int8_t *out, int out_zp, int pad_value)
{
  int32_t idx[MAX_DIMS] = {0};
  const int32_t *desc = p->desc;
  int copy = p->multiplier == 1.0f && p->in_zp == out_zp;
  for (int d = 0; d < p->ndim; d++)
    if (desc[d * 6] == 0) return;
  for (;;) {
    int32_t ioff = 0, ooff = 0, inside = 1;
    for (int d = 0; d < p->ndim; d++) {
      const int32_t *e = desc + d * 6;
      int32_t i = e[3] + idx[d] * e[4];
      inside &= i >= 0 && i < e[5];
      ioff += i * e[2];
      ooff += idx[d] * e[1];
    }
    if (!inside) out[ooff] = (int8_t)pad_value;
    else out[ooff] = copy ? p->in[ioff] : requant(p->in[ioff] - p->in_zp, p->multiplier, out_zp);
    int d = p->ndim - 1;
    for (; d >= 0; d--) {
      if (++idx[d] < desc[d * 6]) break;
      idx[d] = 0;
    }
    if (d < 0) return;
  }
}

void ll_sw_forward_gather_int8(const void *sw_info)
{
  const LL_SW_Gather_Int8_Info *p = sw_info;
  for (uint32_t i = 0; i < p->n_parts; i++) gather(&p->parts[i], p->out + p->parts[i].out_offset, p->out_zp,
                                                   p->pad_value);
}
