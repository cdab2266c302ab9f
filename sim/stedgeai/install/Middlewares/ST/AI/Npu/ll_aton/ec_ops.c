/* The operators of an epoch-controller epoch run in software (simulated LL_ATON), each with the
 * runtime library kernels. Format: see ec_ops.h. */
#include "ec_ops.h"
#include "nr_kernels.h"

static uintptr_t pool_base[EC_MAX_POOLS];

void ec_set_pool_base(uint32_t pool_index, uintptr_t base)
{
  if (pool_index < EC_MAX_POOLS) pool_base[pool_index] = base;
}

static void *ref(uint64_t r)
{
  uint32_t pool = (uint32_t)(r >> 32);
  return pool == 0 || pool > EC_MAX_POOLS ? (void *)0 : (void *)(pool_base[pool - 1] + (uint32_t)r);
}

static int arg(uint64_t w) { return (int)(int32_t)(uint32_t)w; }

static float f32(uint64_t w)
{
  union { uint32_t u; float f; } v = {.u = (uint32_t)w};
  return v.f;
}

int ec_run_ops(const uint64_t *ops)
{
  if ((uint32_t)ops[0] != EC_OPS_MAGIC) return -1;
  uint32_t n_cmd = (uint32_t)(ops[0] >> 32);
  const uint64_t *c = ops + 1;
  for (uint32_t i = 0; i < n_cmd; i++) {
    uint32_t op = (uint32_t)c[0] & 0xFF, n_args = ((uint32_t)c[0] >> 8) & 0xFFFF;
    const uint64_t *a = c + 1;
    switch (op) {
    case EC_OP_CONV:
      nr_conv2d_s8(ref(a[0]), ref(a[1]), ref(a[2]), ref(a[3]), ref(a[4]), arg(a[5]), arg(a[6]), arg(a[7]),
                   arg(a[8]), arg(a[9]), arg(a[10]), arg(a[11]), arg(a[12]), arg(a[13]), arg(a[14]),
                   arg(a[15]), arg(a[16]), arg(a[17]), arg(a[18]), arg(a[19]), arg(a[20]), arg(a[21]),
                   arg(a[22]), arg(a[23]));
      break;
    case EC_OP_DENSE:
      nr_dense_s8(ref(a[0]), ref(a[1]), ref(a[2]), ref(a[3]), ref(a[4]), arg(a[5]), arg(a[6]), arg(a[7]),
                  arg(a[8]), arg(a[9]), arg(a[10]));
      break;
    case EC_OP_POOL:
      nr_pool_s8(ref(a[0]), ref(a[1]), f32(a[2]), arg(a[3]), arg(a[4]), arg(a[5]), arg(a[6]), arg(a[7]),
                 arg(a[8]), arg(a[9]), arg(a[10]), arg(a[11]), arg(a[12]), arg(a[13]), arg(a[14]), arg(a[15]),
                 arg(a[16]));
      break;
    default:
      return -2;
    }
    c += 1 + n_args;
  }
  return 0;
}
