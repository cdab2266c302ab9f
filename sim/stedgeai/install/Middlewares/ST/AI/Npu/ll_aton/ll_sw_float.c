/* Conversions at the graph boundary (--input-data-type / --output-data-type). */
#include "ll_sw.h"
#include "nr_kernels.h"

void ll_sw_forward_convert(const void *sw_info)
{
  const LL_SW_Convert_Info *p = sw_info;
  switch (p->mode) {
  case LL_SW_CONVERT_FLOAT_TO_INT8: nr_quantize_f32(p->in, p->out, p->count, p->scale, p->zero_point); break;
  case LL_SW_CONVERT_INT8_TO_FLOAT: nr_dequantize_s8(p->in, p->out, p->count, p->scale, p->zero_point); break;
  case LL_SW_CONVERT_UINT8_TO_INT8: nr_shift_u8_s8(p->in, p->out, p->count); break;
  case LL_SW_CONVERT_INT8_TO_UINT8: nr_shift_s8_u8(p->in, p->out, p->count); break;
  }
}
