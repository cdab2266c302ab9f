"""The Helium executor's boundaries (n6board.dk.mve) that the QEMU judge's inputs do not reach:
shift amounts at and past the lane size, UNDEFINED encodings next to decoded ones, infinities in
the single-rounding shortcut. Written against the survivors of tools/mutate.py (target `mve`)."""
import struct

import pytest

from n6board.dk import mve
from thumb import assemble


@pytest.mark.parametrize("value, amount, size, rounding, want", [
    (1, 7, 8, False, 0x80),            # left by size - 1
    (1, 8, 8, False, 0),               # left by size: all out
    (0x80, -7, 8, True, 1),            # rounding right by size - 1: 0x80 + 0x40 >> 7
    (0x80, -8, 8, True, 1),            # rounding right by size: 0x80 + 0x80 >> 8 (the carry stays)
    (0x80, -9, 8, True, 0),            # rounding right past size
    (-1, -8, 8, False, -1),            # plain right shifts saturate the amount at size
    (-1, -9, 8, False, -1),
])
def test_shift_amount_bounds(value, amount, size, rounding, want):
    assert mve._shift(value, amount, size, rounding) == want


@pytest.mark.parametrize("hw1, hw2, helium", [
    (0xED90, 0x0E00, True),            # coprocessor 14 space (vector load/store)
    (0xED90, 0x0F00, True),            # coprocessor 15
    (0xED90, 0x0A00, False),           # coprocessor 10: VLDR s0, [r0] is VFP
    (0xED90, 0x0B00, False),           # coprocessor 11: VLDR d0, [r0]
])
def test_coprocessor_space(hw1, hw2, helium):
    assert mve.is_helium(hw1, hw2) is helium


@pytest.mark.parametrize("bits", [0x7F800000, 0xFF800000])
def test_single_shortcut_leaves_infinities_to_the_full_path(bits):
    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    assert mve._single(value, 0.0, None) is None


def _encoding(tmp_path, text):
    a, b = struct.unpack("<HH", assemble(tmp_path, text + "\n", 0))
    return a << 16 | b


def test_vqmovn_size_3_is_undefined(tmp_path):
    insn = _encoding(tmp_path, "vqmovnb.s16 q0, q1")         # size field 00
    assert mve.decode(insn).name == "VQMOVN"
    assert mve.decode(insn | 1 << 18).name == "VQMOVN"       # 01: .s32
    assert mve.decode(insn | 2 << 18) is None                # 10: UNDEFINED


def test_interleaving_stage_past_the_pattern_is_undefined(tmp_path):
    insn = _encoding(tmp_path, "vld21.32 {q0, q1}, [r0]")    # stage 1 of 2
    assert (insn >> 5 & 3, mve.decode(insn).name) == (1, "VLD2/VLD4, VST2/VST4 (interleaving)")
    assert mve.decode(insn & ~(3 << 5) | 2 << 5) is None      # stage 2 of a 2-stage load
    assert insn >> 7 & 3 == 2 and mve.decode(insn | 3 << 7) is None   # size 11: UNDEFINED


ONE, TWO, QNAN = 0x3F800000, 0x40000000, 0x7FC00000


@pytest.mark.parametrize("cond, a, b, want", [
    ("eq", ONE, ONE, True), ("ne", ONE, ONE, False), ("ne", ONE, TWO, True), ("ne", QNAN, ONE, True),
    ("eq", QNAN, QNAN, False), ("ge", TWO, ONE, True), ("ge", ONE, ONE, True), ("ge", ONE, TWO, False),
    ("lt", ONE, TWO, True), ("lt", ONE, ONE, False), ("gt", TWO, ONE, True), ("gt", ONE, ONE, False),
    ("le", ONE, ONE, True), ("le", TWO, ONE, False),
])
def test_float_compare_conditions(cond, a, b, want):
    assert mve._fp_condition(cond, a, b, mve.fp.Fpscr(0)) is want


class Lanes:
    """What vcmp reads of the executor: Q registers, R registers, the predicate; where it writes P0."""

    def __init__(self, q, r):
        self.qs, self.rs = q, r
        self.state = type("State", (), {"p0": 0, "vpt_mask": 0})()

    def q(self, n):
        return self.qs[n]

    def r(self, n):
        return self.rs[n]

    def element_mask(self):
        return 0xFFFF


@pytest.mark.parametrize("text, rm, want", [
    ("vcmp.u8 cs, q0, r1", 0xFF, 0b0001),        # unsigned: 0xFF >= 0xFF only
    ("vcmp.u8 hi, q0, r1", 0x7F, 0b0011),        # 0xFF, 0x80 > 0x7F
    ("vcmp.s8 gt, q0, r1", 0x7F, 0b0000),        # signed: nothing above 127
    ("vcmp.s8 ge, q0, r1", 0x7F, 0b0100),        # 0x7F itself
    ("vcmp.s8 le, q0, r1", 0xFF, 0b0011),        # -1 and -128 <= -1
])
def test_integer_compare_with_a_scalar(tmp_path, text, rm, want):
    """Lanes 0xFF, 0x80, 0x7F, 0x00 (then 12 zeros, below every Rm here) against Rm's low byte:
    unsigned conditions read Rm as 0..255, signed ones as -128..127; GT and LE are told from GE and
    LT by bit 5."""
    x = Lanes({0: 0x00_7F_80_FF, 1: 0}, {1: 0xABCD_EF00 | rm})
    mve.vcmp(x, _encoding(tmp_path, text), 0)
    assert x.state.p0 == want


def test_fpscr_adds_qc_and_ltpsize_to_unicorns_bits_and_nothing_else():
    from unicorn.arm_const import UC_ARM_REG_FPSCR

    class Core:
        regs = {UC_ARM_REG_FPSCR: 0x8000_0010}                # N and IXC as unicorn keeps them

        def reg_read(self, reg):
            return self.regs[reg]

        def reg_write(self, reg, value):
            self.regs[reg] = value
    unit = mve.Helium(Core())
    unit.state.qc, unit.state.ltpsize = False, 4
    assert unit.fpscr() == 0x8000_0010 | 4 << 16
    unit.set_fpscr(0x8800_0010 | 2 << 16)                      # QC and LTPSIZE 2 go to the unit's state
    assert (unit.state.qc, unit.state.ltpsize, Core.regs[UC_ARM_REG_FPSCR]) == (True, 2, 0x8000_0010)
    assert unit.fpscr() == 0x8800_0010 | 2 << 16
