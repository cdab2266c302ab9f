/* The operators of an epoch-controller epoch, run in software: the simulated install's own
 * interface (ST's runtime has no such thing; its blob loader is ecloader.h). The simulated tool
 * hands the epoch controller a blob in ST's format holding the epoch's label and its end
 * interrupt only; the epoch's work is done by its start function, through ec_run_ops().
 *
 * An operator list is an array of little-endian u64 words: word 0 holds the magic 'ECB1' in its
 * low half and the operator count in its high half; each operator is a header word (opcode in
 * bits 0-7, number of argument words in bits 8-23) followed by its arguments. Buffer operands are
 * pool references, (pool index + 1) << 32 | offset, resolved through the bases registered with
 * ec_set_pool_base() - so the lists hold no absolute address and need no relocation. */
#ifndef EC_OPS_H
#define EC_OPS_H

#include <stdint.h>

#define EC_OPS_MAGIC  0x31424345u   /* "ECB1" */
#define EC_MAX_POOLS  16

enum {
  EC_OP_CONV = 1,
  EC_OP_DENSE = 2,
  EC_OP_POOL = 3,
};

void ec_set_pool_base(uint32_t pool_index, uintptr_t base);
int ec_run_ops(const uint64_t *ops);   /* 0 on success, < 0 on a malformed list */

#endif
