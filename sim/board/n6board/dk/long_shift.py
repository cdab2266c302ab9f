"""The Armv8.1-M scalar shifts of a 64-bit register pair (LSLL, LSRL, ASRL; immediate and register
forms) for unicorn's Cortex-M33, which has none: it decodes them as ORRS with Rm = SP or PC and
runs them silently wrong (no invalid-instruction exception reaches us). ST's compiled runtime
uses them (LL_ATON_getbits' 64-bit masks, the software kernels' 64-bit products): so the code a
board loads is scanned for their encodings and each site gets a code hook that carries the shift
out and steps over it. The saturating and rounding forms (UQSHLL, SQRSHRL, ...) stop the run in
one line until needed. tests/test_mve_judge.py judges the forms against QEMU's Cortex-M55.

Encodings (first halfword 0xEA5x, RdaLo in bits 3:1, bit 0 the saturating family; second: RdaHi
in bits 11:9, bit 8 set, then): immediate `0 imm3 RdaHi 1 imm2 op 1111` (op 0 LSLL, 1 LSRL, 2 ASRL;
amount imm3:imm2, 0 meaning 32); register `Rm RdaHi 1 00 op 1101` (op 0 LSLL, 2 ASRL; the amount
is Rm's signed low byte, a negative amount shifting the other way)."""
import struct

from unicorn import UC_HOOK_CODE
from unicorn.arm_const import UC_ARM_REG_LR, UC_ARM_REG_PC, UC_ARM_REG_R0, UC_ARM_REG_SP

MASK64 = (1 << 64) - 1
LSLL, LSRL, ASRL = 0, 1, 2
REGS = [UC_ARM_REG_R0 + i for i in range(13)] + [UC_ARM_REG_SP, UC_ARM_REG_LR, UC_ARM_REG_PC]


def sites(code, base):
    """Addresses of the halfword-aligned scalar-shift encodings in `code` loaded at `base`."""
    out = []
    at = code.find(b"\xea", 1)
    while at >= 0:
        if (base + at - 1) % 2 == 0 and at + 2 < len(code):
            hw1, hw2 = struct.unpack_from("<HH", code, at - 1)
            if decode(hw1, hw2) is not None:
                out.append(base + at - 1)
        at = code.find(b"\xea", at + 1)
    return out


def decode(hw1, hw2):
    """(op, RdaLo, RdaHi, amount or None, Rm or None, saturating) of a scalar shift, else None."""
    if hw1 & 0xFFF0 != 0xEA50 or not hw2 & 0x100:
        return None
    lo, hi, saturating = (hw1 >> 1 & 7) * 2, (hw2 >> 9 & 7) * 2 + 1, bool(hw1 & 1)
    if hw2 & 0xF == 0xF and not hw2 & 0x8000:
        amount = (hw2 >> 12 & 7) << 2 | hw2 >> 6 & 3
        return hw2 >> 4 & 3, lo, hi, amount or 32, None, saturating
    if hw2 & 0xDF == 0x0D:
        return hw2 >> 4 & 3, lo, hi, None, hw2 >> 12, saturating
    return None


def shift(op, value, amount):
    """The 64-bit result of `op` on `value` by `amount` (negative: the other direction)."""
    signed = value - (1 << 64) if value >> 63 else value
    if op == ASRL:
        return (signed >> min(amount, 64) if amount >= 0 else value << min(-amount, 64)) & MASK64
    if op == LSRL:
        return value >> amount if amount < 64 else 0
    return (value << amount if amount >= 0 else value >> min(-amount, 64)) & MASK64


def hook(uc, base, code, stop):
    """Hook every scalar shift of `code` loaded at `base`; `stop(line, pc)` for a form not
    emulated. Returns the number of sites."""
    found = sites(code, base)
    for address in found:
        uc.hook_add(UC_HOOK_CODE, _run, (stop,), begin=address, end=address)
    return len(found)


def _run(uc, address, size, user):
    stop, = user
    hw1, hw2 = struct.unpack("<HH", uc.mem_read(address, 4))
    op, lo, hi, amount, rm, saturating = decode(hw1, hw2)
    if saturating or op == 3 or hi == 15:
        stop(f"the scalar shift {hw1:04x} {hw2:04x} (saturating or rounding) is not emulated", address)
        return
    if rm is not None:
        amount = uc.reg_read(REGS[rm]) & 0xFF
        amount -= (amount & 0x80) << 1
    value = uc.reg_read(REGS[hi]) << 32 | uc.reg_read(REGS[lo])
    result = shift(op, value, amount)
    uc.reg_write(REGS[lo], result & 0xFFFF_FFFF)
    uc.reg_write(REGS[hi], result >> 32)
    uc.reg_write(UC_ARM_REG_PC, (address + 4) | 1)
