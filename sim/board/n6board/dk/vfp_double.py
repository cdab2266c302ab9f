"""Double precision for the twin's FPU. Unicorn's Cortex-M33 has a single-precision FPU, so every
F64 data-processing instruction and conversion of the Cortex-M55's FPv5 (printf("%f"), timing
maths) arrives at the invalid-instruction hook; `execute` carries it out the way the
architecture's pseudocode says (FPRound, FPProcessNaNs, FPCompare, FPToFixed): exact results
as rationals rounded by FPSCR.RMode, flush-to-zero (FZ), default NaN (DN), and the cumulative
exception flags IOC DZC OFC UFC IXC IDC. Loads, stores and moves of D registers through core
registers are single-precision-FPU instructions: unicorn executes those itself."""
import math
from dataclasses import dataclass
from fractions import Fraction

from unicorn.arm_const import (UC_ARM_REG_APSR, UC_ARM_REG_D0, UC_ARM_REG_FPSCR, UC_ARM_REG_PC, UC_ARM_REG_S0,
                               UC_ARM_REG_XPSR)

IOC, DZC, OFC, UFC, IXC, IDC = 1, 2, 4, 8, 16, 128
RN, RP, RM, RZ, TIES_AWAY = 0, 1, 2, 3, 4          # FPSCR.RMode values, and VCVTA/VRINTA's rounding
FZ, DN = 1 << 24, 1 << 25


@dataclass(frozen=True)
class Format:
    """An IEEE 754 binary format."""
    width: int
    exp_bits: int
    frac_bits: int

    @property
    def bias(self):
        return (1 << self.exp_bits - 1) - 1

    @property
    def exp_max(self):
        return (1 << self.exp_bits) - 1

    @property
    def sign_bit(self):
        return 1 << self.width - 1

    @property
    def quiet_bit(self):
        return 1 << self.frac_bits - 1

    def default_nan(self):
        return self.exp_max << self.frac_bits | self.quiet_bit

    def infinity(self, sign):
        return sign * self.sign_bit | self.exp_max << self.frac_bits

    def zero(self, sign):
        return sign * self.sign_bit

    def max_normal(self, sign):
        return sign * self.sign_bit | (self.exp_max - 1) << self.frac_bits | (1 << self.frac_bits) - 1


DOUBLE, SINGLE = Format(64, 11, 52), Format(32, 8, 23)


@dataclass(frozen=True)
class Unpacked:
    """FPUnpack: the kind, the sign and the exact value (0 for zeros, infinities and NaNs)."""
    kind: str              # zero | number | inf | qnan | snan
    sign: int
    value: Fraction
    bits: int

    @property
    def nan(self):
        return self.kind in ("qnan", "snan")


class Fpscr:
    """FPSCR as one instruction sees and changes it (cumulative flags are or-ed in)."""

    def __init__(self, value):
        self.value = value

    @property
    def mode(self):
        return self.value >> 22 & 3

    def flag(self, bit):
        self.value |= bit


def unpack(bits, fmt, fpscr):
    sign = 1 if bits & fmt.sign_bit else 0
    exp = bits >> fmt.frac_bits & fmt.exp_max
    frac = bits & (1 << fmt.frac_bits) - 1
    if exp == 0:
        if frac == 0 or fpscr.value & FZ:
            if frac:
                fpscr.flag(IDC)
            return Unpacked("zero", sign, Fraction(0), bits)
        magnitude = Fraction(frac) * Fraction(2) ** (1 - fmt.bias - fmt.frac_bits)
    elif exp == fmt.exp_max:
        kind = "inf" if frac == 0 else "qnan" if frac & fmt.quiet_bit else "snan"
        return Unpacked(kind, sign, Fraction(0), bits)
    else:
        magnitude = Fraction((1 << fmt.frac_bits) | frac) * Fraction(2) ** (exp - fmt.bias - fmt.frac_bits)
    return Unpacked("number", sign, -magnitude if sign else magnitude, bits)


def round_to_format(value, fmt, fpscr, mode=None):
    """FPRound of a non-zero exact `value` into `fmt` under `mode` (default: FPSCR.RMode)."""
    mode = fpscr.mode if mode is None else mode
    sign = 1 if value < 0 else 0
    mantissa = abs(value)
    exponent = _floor_log2(mantissa)
    mantissa /= Fraction(2) ** exponent                    # 1 <= mantissa < 2
    minimum_exp = 1 - fmt.bias
    if fpscr.value & FZ and exponent < minimum_exp:
        fpscr.flag(UFC)
        return fmt.zero(sign)
    biased = max(exponent - minimum_exp + 1, 0)
    if biased == 0:
        mantissa /= Fraction(2) ** (minimum_exp - exponent)
    scaled = mantissa * (1 << fmt.frac_bits)
    int_mant = math.floor(scaled)
    error = scaled - int_mant
    if biased == 0 and error:
        fpscr.flag(UFC)
    if mode == RN:
        up = error > Fraction(1, 2) or (error == Fraction(1, 2) and int_mant & 1)
    elif mode == TIES_AWAY:
        up = error >= Fraction(1, 2)
    else:
        up = error != 0 and (mode == RP and not sign or mode == RM and sign)
    if up:
        int_mant += 1
        if int_mant == 1 << fmt.frac_bits:              # a subnormal rounded up to the smallest normal
            biased = 1
        if int_mant == 2 << fmt.frac_bits:              # carried into the next binade
            biased += 1
            int_mant >>= 1
    if biased >= fmt.exp_max:
        fpscr.flag(OFC | IXC)
        to_infinity = mode in (RN, TIES_AWAY) or mode == RP and not sign or mode == RM and sign
        return fmt.infinity(sign) if to_infinity else fmt.max_normal(sign)
    if error:
        fpscr.flag(IXC)
    return sign * fmt.sign_bit | biased << fmt.frac_bits | int_mant & (1 << fmt.frac_bits) - 1


def _floor_log2(x):
    """floor(log2(x)) of a positive rational, exactly."""
    e = x.numerator.bit_length() - x.denominator.bit_length()
    if Fraction(2) ** e > x:
        e -= 1
    return e


def _result(value, sign_if_zero, fmt, fpscr):
    return fmt.zero(sign_if_zero) if value == 0 else round_to_format(value, fmt, fpscr)


def process_nans(ops, fmt, fpscr):
    """FPProcessNaNs over operands in priority order: the first signalling NaN (invalid), else
    the first quiet NaN; quietened, or the default NaN under FPSCR.DN. None when no NaN."""
    chosen = next((op for op in ops if op.kind == "snan"), None) or next((op for op in ops if op.kind == "qnan"), None)
    if chosen is None:
        return None
    if chosen.kind == "snan":
        fpscr.flag(IOC)
    return fmt.default_nan() if fpscr.value & DN else chosen.bits | fmt.quiet_bit


def _invalid(fmt, fpscr):
    fpscr.flag(IOC)
    return fmt.default_nan()


def _zero_sum_sign(fpscr):
    return 1 if fpscr.mode == RM else 0


# -- arithmetic ---------------------------------------------------------------------------------
def add(a, b, fmt, fpscr, subtract=False):
    """FPAdd / FPSub of two encodings."""
    x, y, nan = _operands(a, b, fmt, fpscr)
    if nan is not None:
        return nan
    y_sign = y.sign ^ subtract
    if x.kind == "inf" and y.kind == "inf" and x.sign != y_sign:
        return _invalid(fmt, fpscr)
    if x.kind == "inf" or y.kind == "inf":
        return fmt.infinity(x.sign if x.kind == "inf" else y_sign)
    if x.kind == "zero" and y.kind == "zero" and x.sign == y_sign:
        return fmt.zero(x.sign)
    return _result(x.value - y.value if subtract else x.value + y.value, _zero_sum_sign(fpscr), fmt, fpscr)


def _operands(a, b, fmt, fpscr):
    """Both operands unpacked, and the NaN result if either is a NaN."""
    x, y = unpack(a, fmt, fpscr), unpack(b, fmt, fpscr)
    return x, y, process_nans((x, y), fmt, fpscr)


def multiply(a, b, fmt, fpscr):
    x, y, nan = _operands(a, b, fmt, fpscr)
    if nan is not None:
        return nan
    sign = x.sign ^ y.sign
    if {x.kind, y.kind} == {"inf", "zero"}:
        return _invalid(fmt, fpscr)
    if "inf" in (x.kind, y.kind):
        return fmt.infinity(sign)
    if "zero" in (x.kind, y.kind):
        return fmt.zero(sign)
    return round_to_format(x.value * y.value, fmt, fpscr)


def divide(a, b, fmt, fpscr):
    x, y, nan = _operands(a, b, fmt, fpscr)
    if nan is not None:
        return nan
    sign = x.sign ^ y.sign
    if x.kind == y.kind and x.kind in ("inf", "zero"):
        return _invalid(fmt, fpscr)
    if x.kind == "inf" or y.kind == "zero":
        if y.kind == "zero":
            fpscr.flag(DZC)
        return fmt.infinity(sign)
    if x.kind == "zero" or y.kind == "inf":
        return fmt.zero(sign)
    return round_to_format(x.value / y.value, fmt, fpscr)


def fused_multiply_add(addend, a, b, fmt, fpscr):
    """FPMulAdd: addend + a * b, rounded once."""
    z, x, y = unpack(addend, fmt, fpscr), unpack(a, fmt, fpscr), unpack(b, fmt, fpscr)
    inf_times_zero = {x.kind, y.kind} == {"inf", "zero"}
    nan = process_nans((z, x, y), fmt, fpscr)
    if z.kind == "qnan" and inf_times_zero:
        return _invalid(fmt, fpscr)
    if nan is not None:
        return nan
    product_sign = x.sign ^ y.sign
    product_inf = "inf" in (x.kind, y.kind)
    if inf_times_zero or z.kind == "inf" and product_inf and z.sign != product_sign:
        return _invalid(fmt, fpscr)
    if z.kind == "inf" or product_inf:
        return fmt.infinity(z.sign if z.kind == "inf" else product_sign)
    product_zero = "zero" in (x.kind, y.kind)
    if z.kind == "zero" and product_zero and z.sign == product_sign:
        return fmt.zero(z.sign)
    return _result(z.value + x.value * y.value, _zero_sum_sign(fpscr), fmt, fpscr)


def square_root(a, fmt, fpscr):
    x = unpack(a, fmt, fpscr)
    nan = process_nans((x,), fmt, fpscr)
    if nan is not None:
        return nan
    if x.kind == "zero":
        return fmt.zero(x.sign)
    if x.sign:
        return _invalid(fmt, fpscr)
    if x.kind == "inf":
        return fmt.infinity(0)
    n, d = x.value.numerator, x.value.denominator
    k = fmt.frac_bits + 8 + max(0, (d.bit_length() - n.bit_length()) // 2 + 1)
    scaled = n * d << 2 * k
    root = math.isqrt(scaled)
    exact = Fraction(root, d << k)
    if root * root != scaled:        # between root and root+1: a sticky half keeps the rounding right
        exact = Fraction(2 * root + 1, d << k + 1)
    return round_to_format(exact, fmt, fpscr)


def negate(a, fmt):
    return a ^ fmt.sign_bit


def absolute(a, fmt):
    return a & ~fmt.sign_bit


def compare(a, b, fmt, fpscr, signal_quiet_nans):
    """FPCompare → the NZCV nibble (equal 0110, less 1000, greater 0010, unordered 0011)."""
    x, y = unpack(a, fmt, fpscr), unpack(b, fmt, fpscr)
    if x.nan or y.nan:
        if x.kind == "snan" or y.kind == "snan" or signal_quiet_nans:
            fpscr.flag(IOC)
        return 0b0011
    xv = x.value if x.kind != "inf" else (-1 if x.sign else 1) * Fraction(2) ** 4096
    yv = y.value if y.kind != "inf" else (-1 if y.sign else 1) * Fraction(2) ** 4096
    return 0b0110 if xv == yv else 0b1000 if xv < yv else 0b0010


def max_min_number(a, b, fmt, fpscr, minimum):
    """FPMaxNum / FPMinNum (VMAXNM, VMINNM): a quiet NaN loses against a number."""
    x, y = unpack(a, fmt, fpscr), unpack(b, fmt, fpscr)
    if x.kind == "qnan" and not y.nan:
        return b
    if y.kind == "qnan" and not x.nan:
        return a
    nan = process_nans((x, y), fmt, fpscr)
    if nan is not None:
        return nan
    if x.kind == "zero" and y.kind == "zero" and x.sign != y.sign:
        return fmt.zero(1 if minimum else 0)
    xv = x.value if x.kind != "inf" else (-1 if x.sign else 1) * Fraction(2) ** 4096
    yv = y.value if y.kind != "inf" else (-1 if y.sign else 1) * Fraction(2) ** 4096
    pick_x = xv < yv if minimum else xv > yv
    chosen = x if pick_x or xv == yv else y
    return fmt.infinity(chosen.sign) if chosen.kind == "inf" else chosen.bits if chosen.kind == "zero" \
        else round_to_format(chosen.value, fmt, fpscr)


# -- conversions --------------------------------------------------------------------------------
def convert(a, src, dst, fpscr):
    """FPConvert between formats (VCVT.F64.F32, VCVT.F32.F64)."""
    x = unpack(a, src, fpscr)
    if x.nan:
        if x.kind == "snan":
            fpscr.flag(IOC)
        if fpscr.value & DN:
            return dst.default_nan()
        frac = a & (1 << src.frac_bits) - 1
        frac = frac << dst.frac_bits - src.frac_bits if dst.frac_bits > src.frac_bits \
            else frac >> src.frac_bits - dst.frac_bits
        return x.sign * dst.sign_bit | dst.exp_max << dst.frac_bits | dst.quiet_bit | frac
    if x.kind == "inf":
        return dst.infinity(x.sign)
    if x.kind == "zero":
        return dst.zero(x.sign)
    return round_to_format(x.value, dst, fpscr)


def round_to_integer(value, mode):
    """The integer nearest `value` under `mode` (RN ties to even, TIES_AWAY, RP, RM, RZ)."""
    floor = math.floor(value)
    error = value - floor
    if mode == RN:
        up = error > Fraction(1, 2) or (error == Fraction(1, 2) and floor & 1)
    elif mode == TIES_AWAY:
        up = error > Fraction(1, 2) or (error == Fraction(1, 2) and value > 0)
    elif mode == RP:
        up = error != 0
    elif mode == RM:
        up = False
    else:
        up = error != 0 and value < 0
    return floor + 1 if up else floor


def to_fixed(a, fmt, fpscr, unsigned, mode, fraction_bits=0, width=32):
    """FPToFixed: the encoding as a `width`-bit integer with `fraction_bits`, saturated."""
    x = unpack(a, fmt, fpscr)
    if x.nan:
        fpscr.flag(IOC)
        return 0
    if x.kind == "inf":
        value = (-1 if x.sign else 1) * Fraction(2) ** (width + 1)          # beyond any width: saturates
    else:
        value = x.value * (1 << fraction_bits)
    result = round_to_integer(value, mode)
    lo, hi = (0, (1 << width) - 1) if unsigned else (-(1 << width - 1), (1 << width - 1) - 1)
    if result < lo or result > hi:
        fpscr.flag(IOC)
        result = max(lo, min(hi, result))
    elif result != value:
        fpscr.flag(IXC)
    return result & (1 << width) - 1


def from_fixed(integer, fmt, fpscr, unsigned, fraction_bits=0, width=32):
    """FixedToFP: a `width`-bit integer (two's complement unless `unsigned`) to `fmt`."""
    integer &= (1 << width) - 1
    if not unsigned and integer >> width - 1:
        integer -= 1 << width
    return _result(Fraction(integer, 1 << fraction_bits), 0, fmt, fpscr)


def round_to_integral(a, fmt, fpscr, mode, signal_inexact):
    """FPRoundInt (VRINT*): an integral value in the same format."""
    x = unpack(a, fmt, fpscr)
    nan = process_nans((x,), fmt, fpscr)
    if nan is not None:
        return nan
    if x.kind in ("inf", "zero"):
        return a if x.kind == "inf" else fmt.zero(x.sign)
    result = round_to_integer(x.value, mode)
    if signal_inexact and result != x.value:
        fpscr.flag(IXC)
    return fmt.zero(x.sign) if result == 0 else round_to_format(Fraction(result), fmt, fpscr)


def expand_immediate(imm8):
    """VFPExpandImm for a double: sign, NOT(b):bbbbbbbb:cd exponent, efgh fraction."""
    b = imm8 >> 6 & 1
    exp = (b ^ 1) << 10 | (0xFF if b else 0) << 2 | imm8 >> 4 & 3
    return (imm8 >> 7) << 63 | exp << 52 | (imm8 & 0xF) << 48


# -- decoding and execution ---------------------------------------------------------------------
class Registers:
    """The FP registers of a unicorn core, as encodings."""

    def __init__(self, uc):
        self.uc = uc

    def d(self, n):
        return self.uc.reg_read(UC_ARM_REG_D0 + n) & (1 << 64) - 1

    def set_d(self, n, value):
        self.uc.reg_write(UC_ARM_REG_D0 + n, value & (1 << 64) - 1)

    def s(self, n):
        return self.uc.reg_read(UC_ARM_REG_S0 + n) & 0xFFFFFFFF

    def set_s(self, n, value):
        self.uc.reg_write(UC_ARM_REG_S0 + n, value & 0xFFFFFFFF)


XPSR_IT = (0xFC << 8) | (3 << 25)


def step(uc, pc, hw1, hw2):
    """Carry out the instruction hw1:hw2 at `pc` when it is one of execute()'s and end it as an
    executed instruction ends: the IT state advanced, the PC past it. True when it was one."""
    if not execute(uc, hw1, hw2):
        return False
    advance_it(uc)
    uc.reg_write(UC_ARM_REG_PC, (pc + 4) | 1)
    return True


def advance_it(uc):
    """Move the IT block state on by one instruction (ITAdvance), as an executed one would."""
    xpsr = uc.reg_read(UC_ARM_REG_XPSR)
    it = (xpsr >> 8 & 0xFC) | (xpsr >> 25 & 3)
    if not it:
        return
    it = 0 if it & 7 == 0 else (it & 0xE0) | (it << 1 & 0x1F)
    uc.reg_write(UC_ARM_REG_XPSR, xpsr & ~XPSR_IT | (it & 0xFC) << 8 | (it & 3) << 25)


def execute(uc, hw1, hw2):
    """Execute the T32 instruction hw1:hw2 when it is a double-precision VFP data-processing
    instruction or conversion: True, else False (nothing changed)."""
    regs = Registers(uc)
    fpscr = Fpscr(uc.reg_read(UC_ARM_REG_FPSCR))
    done = _execute(hw1 << 16 | hw2, regs, fpscr)
    if done:
        uc.reg_write(UC_ARM_REG_FPSCR, fpscr.value)
    return done


def _execute(insn, regs, fpscr):
    if insn >> 24 & 0xF != 0xE or insn >> 9 & 7 != 0b101 or insn & 0x10:
        return False
    double = insn >> 8 & 1
    vd, vn, vm = insn >> 12 & 0xF, insn >> 16 & 0xF, insn & 0xF
    d_bit, n_bit, m_bit = insn >> 22 & 1, insn >> 7 & 1, insn >> 5 & 1
    dd, dn, dm = d_bit << 4 | vd, n_bit << 4 | vn, m_bit << 4 | vm      # D-register numbers
    sd, sm = vd << 1 | d_bit, vm << 1 | m_bit                            # S-register numbers
    if insn >> 28 == 0xF:                                                # Armv8 additions (unconditional)
        return double and _execute_v8(insn, regs, fpscr, dd, dn, dm, sd)
    opc1, op6 = insn >> 20 & 0b1011, insn >> 6 & 1
    if opc1 == 0b1011:
        return _execute_other(insn, regs, fpscr, double, dd, dm, sd, sm)
    if not double:
        return False
    n, m, d = regs.d(dn), regs.d(dm), regs.d(dd)
    f = DOUBLE
    if opc1 == 0b0000:                                                   # VMLA / VMLS
        product = multiply(n, m, f, fpscr)
        result = add(d, negate(product, f) if op6 else product, f, fpscr)
    elif opc1 == 0b0001:                                                 # VNMLS / VNMLA
        product = multiply(n, m, f, fpscr)
        result = add(negate(d, f), negate(product, f) if op6 else product, f, fpscr)
    elif opc1 == 0b0010:                                                 # VMUL / VNMUL
        result = multiply(n, m, f, fpscr)
        result = negate(result, f) if op6 else result
    elif opc1 == 0b0011:                                                 # VADD / VSUB
        result = add(n, m, f, fpscr, subtract=bool(op6))
    elif opc1 == 0b1000 and not op6:                                     # VDIV
        result = divide(n, m, f, fpscr)
    elif opc1 == 0b1001:                                                 # VFNMS / VFNMA
        result = fused_multiply_add(negate(d, f), negate(n, f) if op6 else n, m, f, fpscr)
    elif opc1 == 0b1010:                                                 # VFMA / VFMS
        result = fused_multiply_add(d, negate(n, f) if op6 else n, m, f, fpscr)
    else:
        return False
    regs.set_d(dd, result)
    return True


def _execute_other(insn, regs, fpscr, double, dd, dm, sd, sm):
    """The opc1 = 1x11 group: moves, unary operations, compares and conversions."""
    opc2, opc3 = insn >> 16 & 0xF, insn >> 6 & 3
    op7 = insn >> 7 & 1
    f = DOUBLE
    if not opc3 & 1:                                                     # VMOV (immediate)
        if not double:
            return False
        regs.set_d(dd, expand_immediate((insn >> 16 & 0xF) << 4 | insn & 0xF))
        return True
    if opc2 == 0b0111 and opc3 == 0b11:                                  # VCVT between F64 and F32
        if double:
            regs.set_s(sd, convert(regs.d(dm), DOUBLE, SINGLE, fpscr))
        else:
            regs.set_d(dd, convert(regs.s(sm), SINGLE, DOUBLE, fpscr))
        return True
    if not double:
        return False
    m = regs.d(dm)
    if opc2 == 0b0000:                                                   # VMOV (register) / VABS
        regs.set_d(dd, absolute(m, f) if op7 else m)
    elif opc2 == 0b0001:                                                 # VNEG / VSQRT
        regs.set_d(dd, square_root(m, f, fpscr) if op7 else negate(m, f))
    elif opc2 in (0b0100, 0b0101):                                       # VCMP{E} (with zero)
        other = 0 if opc2 == 0b0101 else m
        nzcv = compare(regs.d(dd), other, f, fpscr, signal_quiet_nans=bool(op7))
        fpscr.value = fpscr.value & 0x0FFFFFFF | nzcv << 28
    elif opc2 == 0b0110:                                                 # VRINTR / VRINTZ
        regs.set_d(dd, round_to_integral(m, f, fpscr, RZ if op7 else fpscr.mode, False))
    elif opc2 == 0b0111:                                                 # VRINTX
        regs.set_d(dd, round_to_integral(m, f, fpscr, fpscr.mode, True))
    elif opc2 == 0b1000:                                                 # VCVT.F64.{S32,U32}
        regs.set_d(dd, from_fixed(regs.s(sm), f, fpscr, unsigned=not op7))
    elif opc2 in (0b1100, 0b1101):                                       # VCVT{R}.{U32,S32}.F64
        regs.set_s(sd, to_fixed(m, f, fpscr, unsigned=opc2 == 0b1100, mode=RZ if op7 else fpscr.mode))
    elif opc2 & 0b1010 == 0b1010:                                        # VCVT between F64 and fixed point
        unsigned, width = bool(opc2 & 1), 32 if op7 else 16
        fraction_bits = width - ((insn & 0xF) << 1 | insn >> 5 & 1)
        if opc2 & 0b0100:                                                # to fixed, toward zero
            value = to_fixed(regs.d(dd), f, fpscr, unsigned, RZ, fraction_bits, width)
            if not unsigned and value >> width - 1:
                value |= (1 << 64) - (1 << width)                        # sign-extended into the register
            regs.set_d(dd, value)
        else:
            regs.set_d(dd, from_fixed(regs.d(dd), f, fpscr, unsigned, fraction_bits, width))
    else:
        return False
    return True


def _execute_v8(insn, regs, fpscr, dd, dn, dm, sd):
    """VSEL, VMAXNM/VMINNM, VRINT{A,N,P,M}, VCVT{A,N,P,M} (F64)."""
    f, op6 = DOUBLE, insn >> 6 & 1
    rounding = (TIES_AWAY, RN, RP, RM)[insn >> 16 & 3]
    if insn >> 23 & 1 == 0 and not op6:                                   # VSEL<cc>
        n, z, _, v = _apsr(regs)
        chosen = (z, v, n == v, not z and n == v)[insn >> 20 & 3]           # EQ, VS, GE, GT
        regs.set_d(dd, regs.d(dn) if chosen else regs.d(dm))
    elif insn >> 20 & 0b1011 == 0b1000:                                   # VMAXNM / VMINNM
        regs.set_d(dd, max_min_number(regs.d(dn), regs.d(dm), f, fpscr, minimum=bool(op6)))
    elif insn >> 18 & 0b101111 == 0b101110 and op6:                       # VRINT{A,N,P,M}
        regs.set_d(dd, round_to_integral(regs.d(dm), f, fpscr, rounding, False))
    elif insn >> 18 & 0b101111 == 0b101111 and op6:                       # VCVT{A,N,P,M}
        regs.set_s(sd, to_fixed(regs.d(dm), f, fpscr, unsigned=not insn >> 7 & 1, mode=rounding))
    else:
        return False
    return True


def _apsr(regs):
    """(N, Z, C, V) of the core's APSR."""
    apsr = regs.uc.reg_read(UC_ARM_REG_APSR)
    return tuple(bool(apsr >> bit & 1) for bit in (31, 30, 29, 28))
