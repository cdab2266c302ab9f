/* Layout operators run on the CPU: requantising copies (reshape, flatten, stand-alone ReLU). */
#include "ll_sw.h"
#include "nr_kernels.h"

void ll_sw_forward_requant_int8(const void *sw_info)
{
  const LL_SW_Requant_Int8_Info *p = sw_info;
  nr_requant_s8(p->in, p->out, p->multiplier, p->h, p->w, p->c, p->to_chw, p->in_zp, p->out_zp, p->act_min,
                p->act_max);
}
