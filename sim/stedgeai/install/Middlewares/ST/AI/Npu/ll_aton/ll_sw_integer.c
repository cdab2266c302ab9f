/* int8 software epochs: unpack the parameter block, call the runtime library kernel. */
#include "ll_sw.h"
#include "nr_kernels.h"

void ll_sw_forward_conv_int8(const void *sw_info)
{
  const LL_SW_Conv_Int8_Info *p = sw_info;
  nr_conv2d_s8(p->in, p->out, p->weights, p->bias, p->multiplier, p->in_h, p->in_w, p->in_c, p->out_h,
               p->out_w, p->out_c, p->k_h, p->k_w, p->stride_h, p->stride_w, p->pad_top, p->pad_left,
               p->dil_h, p->dil_w, p->groups, p->in_zp, p->out_zp, p->act_min, p->act_max);
}

void ll_sw_forward_dense_int8(const void *sw_info)
{
  const LL_SW_Dense_Int8_Info *p = sw_info;
  nr_dense_s8(p->in, p->out, p->weights, p->bias, p->multiplier, p->n_in, p->n_out, p->in_zp, p->out_zp,
              p->act_min, p->act_max);
}

void ll_sw_forward_pool_int8(const void *sw_info)
{
  const LL_SW_Pool_Int8_Info *p = sw_info;
  nr_pool_s8(p->in, p->out, p->multiplier, p->in_h, p->in_w, p->c, p->out_h, p->out_w, p->k_h, p->k_w,
             p->stride_h, p->stride_w, p->pad_top, p->pad_left, p->in_zp, p->out_zp, p->mode);
}

void ll_sw_forward_softmax_int8(const void *sw_info)
{
  const LL_SW_Softmax_Int8_Info *p = sw_info;
  nr_softmax_s8(p->in, p->out, p->in_scale, p->out_scale, p->rows, p->n, p->in_zp, p->out_zp);
}

void ll_sw_forward_eltwise_int8(const void *sw_info)
{
  const LL_SW_Eltwise_Int8_Info *p = sw_info;
  nr_eltwise_s8(p->a, p->b, p->out, p->ndim, p->desc, p->op, p->mult_a, p->mult_b, p->fixed_a, p->fixed_b,
                p->shift, p->a_zp, p->b_zp, p->out_zp, p->act_min, p->act_max);
}

void ll_sw_forward_lut_int8(const void *sw_info)
{
  const LL_SW_Lut_Int8_Info *p = sw_info;
  nr_lut_s8(p->in, p->out, p->table, p->count, p->inner, p->n_tables);
}

void ll_sw_forward_resize_int8(const void *sw_info)
{
  const LL_SW_Resize_Int8_Info *p = sw_info;
  nr_resize_s8(p->in, p->out, p->in_h, p->in_w, p->c, p->out_h, p->out_w, p->bilinear, p->coord_mode,
               p->nearest_mode, p->scale_h, p->scale_w, p->in_scale, p->out_scale, p->in_zp,
               p->out_zp);
}
