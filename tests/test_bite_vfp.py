"""The twin's double-precision VFP library judged in-process by the host's IEEE 754 arithmetic
(numpy float64 / float32: round to nearest even, gradual underflow), on random encodings and the
edges (subnormals, the largest normals, ties): add, subtract, multiply, divide, square root and
the format conversions bit for bit; IXC, UFC and OFC from the exact rational result; the directed
rounding modes as the neighbour of the nearest value on the right side; conversions to integers
at both sides of every saturation bound; flush-to-zero and NaN rules as the Armv8-M pseudocode
states them. test_twin_cpu.py runs the same instructions on the core; these take a second."""
import math
import struct
from fractions import Fraction

import numpy as np
import pytest

from n6board.dk.vfp_double import (DN, DOUBLE, DZC, FZ, IDC, IOC, IXC, OFC, RM, RN, RP, RZ, SINGLE, TIES_AWAY, UFC,
                                   Fpscr, add, compare, convert, divide, expand_immediate, from_fixed,
                                   fused_multiply_add, max_min_number, multiply, round_to_integral, square_root,
                                   to_fixed)

F64 = {"fmt": DOUBLE, "np": np.float64, "u": np.uint64}
F32 = {"fmt": SINGLE, "np": np.float32, "u": np.uint32}


def _edges(f):
    fmt = f["fmt"]
    top = (fmt.exp_max - 1) << fmt.frac_bits
    return [1, 2, 3, (1 << fmt.frac_bits) - 1, 1 << fmt.frac_bits, (1 << fmt.frac_bits) + 1, top - 1,
            top | (1 << fmt.frac_bits) - 1, fmt.bias << fmt.frac_bits, (fmt.bias << fmt.frac_bits) + 1,
            (fmt.bias - 1) << fmt.frac_bits | (1 << fmt.frac_bits) - 1]


def _operands(f, n, seed):
    """Finite non-zero encodings: random ones, ones with a narrow exponent spread (so sums round)
    and the edges, each with both signs."""
    fmt, rng = f["fmt"], np.random.default_rng(seed)
    out = _edges(f)
    for _ in range(n):
        out.append(int(rng.integers(1, fmt.exp_max << fmt.frac_bits)))
        exp = int(rng.integers(fmt.bias - 3, fmt.bias + 3))
        out.append(exp << fmt.frac_bits | int(rng.integers(0, 1 << fmt.frac_bits)))
    return [b | s * fmt.sign_bit for b in out for s in (0, 1)]


def _host(f, bits):
    return np.array([bits], f["u"]).view(f["np"])[0]


def _bits(f, value):
    return int(np.array([value], f["np"]).view(f["u"])[0])


def _exact(f, bits):
    return Fraction(float(_host(f, bits)))


def _expected_flags(f, exact, result_bits):
    """IXC, UFC, OFC of a result as IEEE defines them (tininess before rounding, as Arm does)."""
    fmt = f["fmt"]
    if exact == 0:
        return 0
    if (result_bits >> fmt.frac_bits & fmt.exp_max) == fmt.exp_max:
        return OFC | IXC
    flags = IXC if _exact(f, result_bits) != exact else 0
    if flags and abs(exact) < Fraction(2) ** (1 - fmt.bias):
        flags |= UFC
    return flags


OPS = {"add": (lambda a, b, fmt, s: add(a, b, fmt, s), lambda x, y: x + y, lambda x, y: x + y),
       "sub": (lambda a, b, fmt, s: add(a, b, fmt, s, subtract=True), lambda x, y: x - y, lambda x, y: x - y),
       "mul": (multiply, lambda x, y: x * y, lambda x, y: x * y),
       "div": (divide, lambda x, y: x / y, lambda x, y: x / y)}


@pytest.mark.parametrize("f", [F64, F32], ids=["f64", "f32"])
@pytest.mark.parametrize("op", list(OPS))
def test_arithmetic_rounds_to_nearest_like_the_host_with_the_ieee_flags(f, op):
    ours, host, exact_op = OPS[op]
    xs = _operands(f, 40, seed=1)
    with np.errstate(all="ignore"):
        for i, a in enumerate(xs):
            for b in (xs[(i * 7 + 3) % len(xs)], xs[(i * 13 + 5) % len(xs)], a, a ^ f["fmt"].sign_bit):
                fpscr = Fpscr(0)
                got = ours(a, b, f["fmt"], fpscr)
                want = _bits(f, host(_host(f, a), _host(f, b)))
                assert (got, fpscr.value) == (want, _expected_flags(f, exact_op(_exact(f, a), _exact(f, b)), want)), \
                    (op, hex(a), hex(b))


@pytest.mark.parametrize("f", [F64, F32], ids=["f64", "f32"])
def test_square_root_and_conversions_round_like_the_host(f):
    with np.errstate(all="ignore"):
        for a in _operands(f, 80, seed=2):
            fpscr = Fpscr(0)
            got = square_root(a, f["fmt"], fpscr)
            if a & f["fmt"].sign_bit:
                assert (got, fpscr.value) == (f["fmt"].default_nan(), IOC)
                continue
            want = _bits(f, np.sqrt(_host(f, a)))
            root = _exact(f, want)
            assert got == want and fpscr.value == (0 if root * root == _exact(f, a) else IXC), hex(a)
    for a in _operands(F64, 80, seed=3):
        fpscr = Fpscr(0)
        with np.errstate(all="ignore"):
            want = _bits(F32, np.float32(_host(F64, a)))
        assert (convert(a, DOUBLE, SINGLE, fpscr), fpscr.value) == (want, _expected_flags(F32, _exact(F64, a), want))
    for a in _operands(F32, 80, seed=4):
        fpscr = Fpscr(0)
        assert (convert(a, SINGLE, DOUBLE, fpscr), fpscr.value) == (_bits(F64, np.float64(_host(F32, a))), 0)


def _directed(f, exact, mode):
    """The value IEEE's directed rounding gives: the nearest one, or its neighbour toward the mode."""
    t = f["np"]
    with np.errstate(all="ignore"):
        near = t(float(exact)) if f is F64 else t(np.float64(float(exact)))
        if f is F32 and Fraction(float(np.float64(float(exact)))) != exact:   # double rounding: redo exactly
            near = t(_nearest_single(exact))
    if Fraction(float(near)) == exact if np.isfinite(near) else False:
        return near
    toward = {RZ: t(0) if exact > 0 else t(-0.0), RP: t(np.inf), RM: t(-np.inf)}[mode]
    bigger = not np.isfinite(near) or Fraction(float(near)) > exact
    if mode == RZ:
        return np.nextafter(near, toward) if (bigger if exact > 0 else not bigger) else near
    return np.nextafter(near, toward) if (mode == RP) != bigger else near


def _nearest_single(exact):
    lo = np.float32(float(exact))
    candidates = [np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))]
    return min(candidates, key=lambda c: (abs(Fraction(float(c)) - exact), int(np.array([c]).view(np.uint32)[0]) & 1))


@pytest.mark.parametrize("mode", [RZ, RP, RM])
@pytest.mark.parametrize("op", ["add", "mul", "div"])
def test_directed_rounding_gives_the_neighbour_on_the_modes_side(op, mode):
    ours, _, exact_op = OPS[op]
    xs = [a for a in _operands(F64, 25, seed=5) if (a >> 52 & 0x7FF) not in (0, 0x7FE)]   # no overflow, no tiny
    for i, a in enumerate(xs):
        b = xs[(i * 11 + 1) % len(xs)]
        exact = exact_op(_exact(F64, a), _exact(F64, b))
        if exact == 0 or not Fraction(2) ** -1000 < abs(exact) < Fraction(2) ** 1000:
            continue
        fpscr = Fpscr(mode << 22)
        want = _bits(F64, _directed(F64, exact, mode))
        assert ours(a, b, DOUBLE, fpscr) == want, (op, mode, hex(a), hex(b))
        assert fpscr.value == mode << 22 | (IXC if _exact(F64, want) != exact else 0)


@pytest.mark.parametrize("mode, positive, negative", [(RN, "inf", "-inf"), (RZ, "max", "-max"), (RP, "inf", "-max"),
                                                      (RM, "max", "-inf")])
def test_overflow_goes_to_infinity_or_the_largest_normal_by_mode(mode, positive, negative):
    big = DOUBLE.max_normal(0)
    named = {"inf": DOUBLE.infinity(0), "-inf": DOUBLE.infinity(1), "max": big, "-max": DOUBLE.max_normal(1)}
    for a, want in ((big, named[positive]), (big | DOUBLE.sign_bit, named[negative])):
        fpscr = Fpscr(mode << 22)
        assert multiply(a, 0x4000000000000000, DOUBLE, fpscr) == want and fpscr.value == mode << 22 | OFC | IXC
    half_ulp = 0x7C90000000000000               # 2**970: the largest normal plus it is a tie
    fpscr = Fpscr(RZ << 22)                     # RZ truncates to the largest normal: no overflow
    assert add(big, half_ulp, DOUBLE, fpscr) == big and fpscr.value == RZ << 22 | IXC
    fpscr = Fpscr(RN << 22)                     # RN's tie goes to the even 2**1024: overflow
    assert add(big, half_ulp, DOUBLE, fpscr) == DOUBLE.infinity(0) and fpscr.value == RN << 22 | OFC | IXC


def test_ties_round_to_even_and_away_from_zero():
    half_ulp = 0x3CA0000000000000                  # 2**-53: half an ulp of 1.0
    one, next_one = 0x3FF0000000000000, 0x3FF0000000000001
    for mode, base, want in ((RN, one, one), (RN, next_one, 0x3FF0000000000002)):
        fpscr = Fpscr(mode << 22)
        assert add(base, half_ulp, DOUBLE, fpscr) == want and fpscr.value == mode << 22 | IXC
    assert round_to_integral(0x4004000000000000, DOUBLE, Fpscr(0), TIES_AWAY, False) == 0x4008000000000000   # 2.5 → 3
    assert round_to_integral(0x4004000000000000, DOUBLE, Fpscr(0), RN, False) == 0x4000000000000000          # 2.5 → 2
    assert round_to_integral(0xC004000000000000, DOUBLE, Fpscr(0), TIES_AWAY, False) == 0xC008000000000000   # -2.5 → -3


def _d(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


@pytest.mark.parametrize("value, mode, unsigned, want, flags", [
    (2147483647.0, RZ, False, 0x7FFFFFFF, 0), (2147483648.0, RZ, False, 0x7FFFFFFF, IOC),
    (-2147483648.0, RZ, False, 0x80000000, 0), (-2147483649.0, RZ, False, 0x80000000, IOC),
    (4294967295.0, RZ, True, 0xFFFFFFFF, 0), (4294967296.0, RZ, True, 0xFFFFFFFF, IOC),
    (0.0, RZ, True, 0, 0), (-1.0, RZ, True, 0, IOC), (-0.5, RZ, True, 0, IXC),
    (2.5, RN, False, 2, IXC), (3.5, RN, False, 4, IXC), (-2.5, TIES_AWAY, False, 0xFFFFFFFD, IXC),
    (2.25, RP, False, 3, IXC), (-2.25, RP, False, 0xFFFFFFFE, IXC), (2.75, RM, False, 2, IXC),
    (-2.25, RM, False, 0xFFFFFFFD, IXC), (-2.75, RZ, False, 0xFFFFFFFE, IXC), (2.5, TIES_AWAY, False, 3, IXC),
    (2.4, TIES_AWAY, False, 2, IXC), (math.inf, RZ, False, 0x7FFFFFFF, IOC), (-math.inf, RZ, True, 0, IOC),
    (math.nan, RZ, False, 0, IOC)])
def test_conversion_to_integers_saturates_at_both_sides_of_each_bound(value, mode, unsigned, want, flags):
    fpscr = Fpscr(0)
    assert (to_fixed(_d(value), DOUBLE, fpscr, unsigned, mode), fpscr.value) == (want, flags)


def test_fixed_point_conversions():
    fpscr = Fpscr(0)
    assert to_fixed(_d(1.75), DOUBLE, fpscr, False, RZ, fraction_bits=2, width=16) == 7 and fpscr.value == 0
    assert to_fixed(_d(-1.0), DOUBLE, fpscr, False, RZ, fraction_bits=4, width=16) == 0xFFF0
    assert to_fixed(_d(2048.0), DOUBLE, fpscr, False, RZ, fraction_bits=4, width=16) == 0x7FFF and fpscr.value == IOC
    assert from_fixed(0xFFF0, DOUBLE, Fpscr(0), False, 4, 16) == _d(-1.0)
    assert from_fixed(0xFFF0, DOUBLE, Fpscr(0), True, 4, 16) == _d(4095.0)
    assert from_fixed(0x80000000, DOUBLE, Fpscr(0), False) == _d(-2147483648.0)
    assert from_fixed(0, DOUBLE, Fpscr(0), False) == 0
    fpscr = Fpscr(0)
    assert from_fixed(0x7FFFFFFF, SINGLE, fpscr, False) == 0x4F000000 and fpscr.value == IXC   # 2**31 - 1 → 2**31


def test_flush_to_zero_and_nan_rules():
    tiny = 0x0000000000000003
    fpscr = Fpscr(FZ)
    assert add(tiny, 0, DOUBLE, fpscr) == 0 and fpscr.value == FZ | IDC
    fpscr = Fpscr(FZ)
    assert multiply(0x0010000000000000, 0x3FE0000000000000, DOUBLE, fpscr) == 0 and fpscr.value == FZ | UFC
    snan, qnan = 0x7FF0000000000001, 0x7FF8000000000002
    fpscr = Fpscr(0)
    assert add(qnan, snan, DOUBLE, fpscr) == snan | 1 << 51 and fpscr.value == IOC      # the signalling one first
    fpscr = Fpscr(0)
    assert add(0x3FF0000000000000, qnan, DOUBLE, fpscr) == qnan and fpscr.value == 0
    fpscr = Fpscr(DN)
    assert add(qnan, 0, DOUBLE, fpscr) == DOUBLE.default_nan() and fpscr.value == DN
    inf = DOUBLE.infinity(0)
    for result, flags in ((add(inf, inf | DOUBLE.sign_bit, DOUBLE, f := Fpscr(0)), f),
                          (multiply(inf, 0, DOUBLE, g := Fpscr(0)), g), (divide(0, 0, DOUBLE, h := Fpscr(0)), h)):
        assert result == DOUBLE.default_nan() and flags.value == IOC
    fpscr = Fpscr(0)
    assert divide(0x3FF0000000000000, DOUBLE.sign_bit, DOUBLE, fpscr) == DOUBLE.infinity(1) and fpscr.value == DZC
    assert convert(0x7FC00001, SINGLE, DOUBLE, Fpscr(0)) == 0x7FF8000020000000
    assert convert(0xFFF8000020000001, DOUBLE, SINGLE, Fpscr(0)) == 0xFFC00001


def test_exact_zero_sums_and_fused_multiply_add():
    one = 0x3FF0000000000000
    assert add(one, one | DOUBLE.sign_bit, DOUBLE, Fpscr(0)) == 0
    assert add(one, one | DOUBLE.sign_bit, DOUBLE, Fpscr(RM << 22)) == DOUBLE.sign_bit
    assert add(DOUBLE.sign_bit, DOUBLE.sign_bit, DOUBLE, Fpscr(0)) == DOUBLE.sign_bit
    eps = 0x3CB0000000000000                       # 2**-52
    a = one | 1                                    # 1 + 2**-52
    fpscr = Fpscr(0)                               # (1 + e)(1 + e) - 1 - 2e = e**2, kept by the single rounding
    assert fused_multiply_add(_d(-1.0 - 2 * 2 ** -52), a, a, DOUBLE, fpscr) == _d(2.0 ** -104) and fpscr.value == 0
    assert fused_multiply_add(0, eps, eps, DOUBLE, Fpscr(0)) == _d(2.0 ** -104)
    assert fused_multiply_add(DOUBLE.default_nan(), DOUBLE.infinity(0), 0, DOUBLE, f := Fpscr(0)) == \
        DOUBLE.default_nan() and f.value == IOC


@pytest.mark.parametrize("a, b, nzcv", [(1.0, 2.0, 0b1000), (2.0, 1.0, 0b0010), (0.0, -0.0, 0b0110),
                                        (-math.inf, -1e308, 0b1000), (math.inf, math.inf, 0b0110),
                                        (math.nan, 1.0, 0b0011)])
def test_compare_sets_nzcv(a, b, nzcv):
    fpscr = Fpscr(0)
    assert compare(_d(a), _d(b), DOUBLE, fpscr, signal_quiet_nans=True) == nzcv
    assert fpscr.value == (IOC if math.isnan(a) else 0)
    assert compare(_d(math.nan), _d(1.0), DOUBLE, f := Fpscr(0), signal_quiet_nans=False) == 0b0011 and f.value == 0


def test_max_and_min_numbers():
    one, two = _d(1.0), _d(2.0)
    assert (max_min_number(one, two, DOUBLE, Fpscr(0), False), max_min_number(one, two, DOUBLE, Fpscr(0), True)) == \
        (two, one)
    assert max_min_number(_d(math.nan), two, DOUBLE, Fpscr(0), True) == two
    assert max_min_number(two, _d(math.nan), DOUBLE, Fpscr(0), False) == two
    assert max_min_number(0, DOUBLE.sign_bit, DOUBLE, Fpscr(0), True) == DOUBLE.sign_bit
    assert max_min_number(0, DOUBLE.sign_bit, DOUBLE, Fpscr(0), False) == 0
    assert max_min_number(DOUBLE.infinity(1), one, DOUBLE, Fpscr(0), True) == DOUBLE.infinity(1)
    assert max_min_number(two, DOUBLE.infinity(0), DOUBLE, Fpscr(0), False) == DOUBLE.infinity(0)
    assert max_min_number(two, DOUBLE.infinity(1), DOUBLE, Fpscr(0), True) == DOUBLE.infinity(1)
    assert max_min_number(two, DOUBLE.infinity(1), DOUBLE, Fpscr(0), False) == two


def test_immediates_expand_as_vfpexpandimm():
    assert [expand_immediate(i) for i in (0x70, 0x00, 0xF0, 0x60, 0x1F)] == [
        _d(1.0), _d(2.0), _d(-1.0), _d(0.5), _d(7.75)]


# -- decoding on a core: GNU as encodes, unicorn holds the registers -------------------------------

INSNS = ("vcvt.f64.f32 d2, s3", "vcvt.f32.f64 s5, d1", "vseleq.f64 d0, d1, d2", "vselvs.f64 d0, d1, d2",
         "vselge.f64 d0, d1, d2", "vselgt.f64 d0, d1, d2", "vcvt.s32.f64 s3, d1")


@pytest.fixture(scope="module")
def encoded(tmp_path_factory):
    """Each instruction's two halfwords as the GNU assembler encodes them for the Cortex-M55."""
    from thumb import assemble
    code = assemble(tmp_path_factory.mktemp("vfp"), "\n".join(INSNS) + "\n", 0x1000_0000)
    return {insn: (int.from_bytes(code[4 * k:4 * k + 2], "little"), int.from_bytes(code[4 * k + 2:4 * k + 4], "little"))
            for k, insn in enumerate(INSNS)}


@pytest.fixture
def core():
    from unicorn import UC_ARCH_ARM, UC_MODE_MCLASS, UC_MODE_THUMB, Uc
    from unicorn.arm_const import UC_CPU_ARM_CORTEX_M33
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_M33)
    return uc


def _run(core, encoded, insn):
    from n6board.dk.vfp_double import execute
    assert execute(core, *encoded[insn])


def test_conversions_between_formats_use_odd_single_registers(core, encoded):
    from unicorn.arm_const import UC_ARM_REG_D0, UC_ARM_REG_S0
    core.reg_write(UC_ARM_REG_S0 + 2, 0xDEADBEEF)
    core.reg_write(UC_ARM_REG_S0 + 3, 0x3FC00000)                     # 1.5f in s3
    _run(core, encoded, "vcvt.f64.f32 d2, s3")
    assert core.reg_read(UC_ARM_REG_D0 + 2) == _d(1.5)
    core.reg_write(UC_ARM_REG_D0 + 1, _d(-2.5))
    _run(core, encoded, "vcvt.f32.f64 s5, d1")
    assert core.reg_read(UC_ARM_REG_S0 + 5) == 0xC0200000 and core.reg_read(UC_ARM_REG_D0 + 2) & 0xFFFFFFFF == 0
    _run(core, encoded, "vcvt.s32.f64 s3, d1")
    assert core.reg_read(UC_ARM_REG_S0 + 3) == 0xFFFFFFFE and core.reg_read(UC_ARM_REG_S0 + 2) == 0


@pytest.mark.parametrize("nzcv", range(16))
def test_vsel_takes_the_first_register_when_its_condition_holds(core, encoded, nzcv):
    from unicorn.arm_const import UC_ARM_REG_APSR, UC_ARM_REG_D0
    n, z, v = nzcv >> 3 & 1, nzcv >> 2 & 1, nzcv & 1
    for insn, holds in (("vseleq.f64 d0, d1, d2", z), ("vselvs.f64 d0, d1, d2", v),
                        ("vselge.f64 d0, d1, d2", n == v), ("vselgt.f64 d0, d1, d2", not z and n == v)):
        core.reg_write(UC_ARM_REG_APSR, nzcv << 28)
        core.reg_write(UC_ARM_REG_D0 + 1, _d(1.0))
        core.reg_write(UC_ARM_REG_D0 + 2, _d(2.0))
        _run(core, encoded, insn)
        assert core.reg_read(UC_ARM_REG_D0) == _d(1.0 if holds else 2.0), insn


@pytest.mark.parametrize("state, after", [(0b0000_0100, 0b0000_1000), (0b1000_1000, 0), (0b0001_1010, 0b0001_0100),
                                          (0b1110_0101, 0b1110_1010), (0b0000_0011, 0b0000_0110)])
def test_an_executed_instruction_advances_the_it_state(core, state, after):
    """ITSTATE is xPSR[15:10]:xPSR[26:25]; ITAdvance shifts its low five bits, or ends the block."""
    from unicorn.arm_const import UC_ARM_REG_XPSR
    from n6board.dk.vfp_double import advance_it

    def xpsr(it):
        return 1 << 24 | 1 << 31 | (it >> 2) << 10 | (it & 3) << 25      # T and N set too
    core.reg_write(UC_ARM_REG_XPSR, xpsr(state))
    advance_it(core)
    assert core.reg_read(UC_ARM_REG_XPSR) & 0xFFFF_FFF0 == xpsr(after)


SPECIALS = (0, DOUBLE.sign_bit, DOUBLE.infinity(0), DOUBLE.infinity(1), _d(1.5), _d(-3.0), DOUBLE.max_normal(0), 1)


@pytest.mark.parametrize("op", list(OPS))
def test_zeros_and_infinities_combine_like_the_hosts(op):
    ours = OPS[op][0]
    with np.errstate(all="ignore"):
        for a in SPECIALS:
            for b in SPECIALS:
                fpscr = Fpscr(0)
                got = ours(a, b, DOUBLE, fpscr)
                want = OPS[op][1](_host(F64, a), _host(F64, b))
                if np.isnan(want):                                  # invalid: Arm's default NaN
                    assert (got, fpscr.value) == (DOUBLE.default_nan(), IOC), (op, hex(a), hex(b))
                else:
                    assert got == _bits(F64, want), (op, hex(a), hex(b))


def test_infinities_in_fused_multiply_add_square_root_and_rounding():
    inf, two = DOUBLE.infinity(0), _d(2.0)
    assert fused_multiply_add(_d(1.0), inf, two, DOUBLE, Fpscr(0)) == inf
    assert fused_multiply_add(_d(1.0), two, DOUBLE.infinity(1), DOUBLE, Fpscr(0)) == DOUBLE.infinity(1)
    assert fused_multiply_add(DOUBLE.infinity(1), two, two, DOUBLE, Fpscr(0)) == DOUBLE.infinity(1)
    assert square_root(inf, DOUBLE, f := Fpscr(0)) == inf and f.value == 0
    assert square_root(DOUBLE.sign_bit, DOUBLE, Fpscr(0)) == DOUBLE.sign_bit
    for a in (inf, DOUBLE.infinity(1)):
        assert round_to_integral(a, DOUBLE, Fpscr(0), RN, True) == a
    assert round_to_integral(_d(0.5), DOUBLE, Fpscr(0), TIES_AWAY, False) == _d(1.0)
    assert round_to_integral(_d(-0.5), DOUBLE, Fpscr(0), TIES_AWAY, False) == _d(-1.0)
    assert to_fixed(_d(0.5), DOUBLE, Fpscr(0), False, TIES_AWAY) == 1


@pytest.mark.parametrize("a, b", [(1.0, -math.inf), (1.0, math.inf), (2.0, math.inf), (-math.inf, 1.0),
                                  (math.inf, -math.inf), (-1e308, -math.inf)])
def test_comparisons_with_infinities_order_like_the_host(a, b):
    want = 0b0110 if a == b else 0b1000 if a < b else 0b0010
    assert compare(_d(a), _d(b), DOUBLE, Fpscr(0), signal_quiet_nans=False) == want
    assert compare(_d(b), _d(a), DOUBLE, Fpscr(0), signal_quiet_nans=False) == \
        (0b0110 if a == b else 0b0010 if a < b else 0b1000)
