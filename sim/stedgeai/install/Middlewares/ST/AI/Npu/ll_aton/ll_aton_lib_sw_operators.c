/* Layout operators run on the CPU by LL_ATON itself: requantising copies (reshape, flatten,
 * stand-alone ReLU), optionally reordering channel-last memory to channel-first. */
#include "ll_sw.h"

static int requant(int v, float multiplier, int in_zp, int out_zp, int lo, int hi)
{
  float x = (float)(v - in_zp) * multiplier;
  int r = (int)(x >= 0.0f ? x + 0.5f : x - 0.5f) + out_zp;
  return r < lo ? lo : (r > hi ? hi : r);
}

void ll_sw_forward_requant_int8(const void *sw_info)
{
  const LL_SW_Requant_Int8_Info *p = sw_info;
  for (int y = 0; y < p->h; y++)
    for (int x = 0; x < p->w; x++)
      for (int ch = 0; ch < p->c; ch++) {
        int src = (y * p->w + x) * p->c + ch;
        int dst = p->to_chw ? (ch * p->h + y) * p->w + x : src;
        p->out[dst] = (int8_t)requant(p->in[src], p->multiplier, p->in_zp, p->out_zp, p->act_min, p->act_max);
      }
}
