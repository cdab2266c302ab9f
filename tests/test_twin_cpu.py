"""The DK twin's Cortex-M55 where unicorn's Cortex-M33 stops, checked against the architecture's
rules on instruction sequences assembled with arm-none-eabi-as: low-overhead loops, double-precision
VFP (arithmetic, fused and chained multiply-accumulate, compares, conversions with their rounding,
saturation and exception flags), exception entry and return (frame, alignment, EXC_RETURN, FP
context), WFE/WFI sleeping to the next event or stopping with one line, Helium carried out (the
board's executor, tests/test_mve_judge.py judges it) and a vector form it lacks stopping with one
line."""
import math
import struct

import pytest
from unicorn import arm_const
from unicorn.arm_const import UC_ARM_REG_R1, UC_ARM_REG_R2

from n6board.dk.bus import Bus
from n6board.dk.core import Core, Stop
from n6board.dk.peripherals.system_control import SystemControlSpace
from thumb import assemble

CODE, RAM, STACK_TOP = 0x1000_0000, 0x2000_0000, 0x2000_8000
START = CODE + 0x40                          # after the vector table
DATA = RAM + 0x1000
IOC, DZC, OFC, UFC, IXC = 1, 2, 4, 8, 16
RN, RP, RM, RZ = 0, 1 << 22, 2 << 22, 3 << 22
DN = 1 << 25
DEFAULT_NAN = 0x7FF8_0000_0000_0000


class Snippet:
    """One assembled snippet on a twin core: code (vector table first) at CODE, RAM at RAM, the
    System Control Space on the bus; `run` executes from `start` to the snippet's `bkpt #0`."""

    def __init__(self, tmp_path, body, handlers=""):
        source = f"""
vectors:
    .word {STACK_TOP:#x}
    .word start + 1
    .org 14 * 4
    .word pendsv + 1
    .word systick + 1
start:
{body}
    bkpt #0
pendsv:
systick:
{handlers or "    bx lr"}
    .ltorg
"""
        self.code = assemble(tmp_path, source, CODE)
        self.core = Core(function_at=lambda pc: "snippet", vtor=lambda: CODE)
        uc = self.core.uc
        uc.mem_map(CODE, 0x1_0000)
        uc.mem_map(RAM, 0x1_0000)
        uc.mem_write(CODE, self.code)
        self.scs = Bus(uc).attach(SystemControlSpace(self.core.clock, self.core.exceptions, CODE))
        self.core.reset(STACK_TOP, START)

    def run(self, max_cycles=1_000_000):
        with pytest.raises(Stop, match="breakpoint"):
            self.core.run(max_cycles=max_cycles)
        return self

    def reg(self, name):
        return self.core.uc.reg_read(getattr(arm_const, f"UC_ARM_REG_{name.upper()}"))

    def word(self, addr):
        return struct.unpack("<I", bytes(self.core.uc.mem_read(addr, 4)))[0]

    def words(self, addr, n):
        return struct.unpack(f"<{n}I", bytes(self.core.uc.mem_read(addr, 4 * n)))

    def put(self, addr, data):
        self.core.uc.mem_write(addr, data)


def bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def value(b):
    return struct.unpack("<d", struct.pack("<Q", b))[0]


def single_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


# -- low-overhead loops -------------------------------------------------------------------------
LOOPS = """
    movs r0, #0
    dls lr, r1              @ r1 iterations
1:  adds r0, r0, #3
    le lr, 1b
    mov r3, lr              @ LR as the loop left it
    wls lr, r2, 3f          @ r2 iterations; none: straight past the loop
2:  adds r0, r0, #100
    le lr, 2b
3:  nop
"""


@pytest.mark.parametrize("n, m", [(1, 0), (5, 0), (7, 3), (300, 1)])
def test_low_overhead_loops_run_their_bodies_count_times(tmp_path, n, m):
    s = Snippet(tmp_path, LOOPS)
    s.core.uc.reg_write(UC_ARM_REG_R1, n)
    s.core.uc.reg_write(UC_ARM_REG_R2, m)
    s.run()
    assert s.reg("r0") == 3 * n + 100 * m
    assert s.reg("r3") == 1           # LE leaves the loop when LR is 1, without decrementing it


# -- double-precision VFP -----------------------------------------------------------------------
VFP = """
    ldr r4, ={data:#x}
    ldr r0, [r4, #0x40]
    vmsr fpscr, r0
    ldr r0, [r4, #0x48]     @ APSR flags for conditional cases
    msr apsr_nzcvq, r0
    vldr d0, [r4]
    vldr d1, [r4, #8]
    vldr d2, [r4, #16]
    vldr d3, [r4, #24]
    {insn}
    vstr d0, [r4, #0x20]
    vmrs r0, fpscr
    str r0, [r4, #0x44]
    str r5, [r4, #0x4c]
"""


def vfp(tmp_path, insn, d0=0.0, d1=0.0, d2=0.0, s6=0, fpscr=0, apsr=0, raw=None):
    """Execute `insn` with d0..d2 (floats or bit patterns in `raw`) and s6 set; (d0 bits, FPSCR)."""
    s = Snippet(tmp_path, VFP.format(data=DATA, insn=insn))
    d = raw or [bits(x) for x in (d0, d1, d2)]
    s.put(DATA, struct.pack("<QQQII", *d, s6, 0) + bytes(0x20) + struct.pack("<IIII", fpscr, 0, apsr, 0))
    s.run()
    lo, hi = s.words(DATA + 0x20, 2)
    return lo | hi << 32, s.word(DATA + 0x44), s


@pytest.mark.parametrize("insn, a, b, expect, flags", [
    ("vadd.f64 d0, d1, d2", 1.5, 2.25, 3.75, 0),
    ("vadd.f64 d0, d1, d2", 0.1, 0.2, 0.1 + 0.2, IXC),
    ("vadd.f64 d0, d1, d2", 1e308, 1e308, math.inf, OFC | IXC),
    ("vsub.f64 d0, d1, d2", -0.0, 0.0, -0.0, 0),
    ("vmul.f64 d0, d1, d2", 3.0, -0.5, -1.5, 0),
    ("vmul.f64 d0, d1, d2", 1e-200, 1e-200, 0.0, UFC | IXC),
    ("vdiv.f64 d0, d1, d2", 1.0, 3.0, 1.0 / 3.0, IXC),
    ("vdiv.f64 d0, d1, d2", -1.0, 0.0, -math.inf, DZC),
    ("vnmul.f64 d0, d1, d2", 3.0, 0.5, -1.5, 0),
    ("vsqrt.f64 d0, d1", 2.0, 0, math.sqrt(2.0), IXC),
    ("vsqrt.f64 d0, d1", -0.0, 0, -0.0, 0),
    ("vneg.f64 d0, d1", 2.5, 0, -2.5, 0),
    ("vabs.f64 d0, d1", -2.5, 0, 2.5, 0),
    ("vmov.f64 d0, d1", 7.25, 0, 7.25, 0),
    ("vmov.f64 d0, #-1.5", 0, 0, -1.5, 0),
])
def test_double_precision_arithmetic_rounds_to_nearest_and_raises_the_ieee_flags(tmp_path, insn, a, b, expect,
                                                                                   flags):
    result, fpscr, _ = vfp(tmp_path, insn, d1=a, d2=b)
    assert result == bits(expect)
    assert fpscr & 0x9F == flags


@pytest.mark.parametrize("insn, a, b", [("vadd.f64 d0, d1, d2", math.inf, -math.inf),
                                        ("vmul.f64 d0, d1, d2", math.inf, 0.0),
                                        ("vdiv.f64 d0, d1, d2", 0.0, 0.0),
                                        ("vsqrt.f64 d0, d1", -1.0, 0.0)])
def test_invalid_operations_give_the_default_nan_and_ioc(tmp_path, insn, a, b):
    result, fpscr, _ = vfp(tmp_path, insn, d1=a, d2=b)
    assert result == DEFAULT_NAN
    assert fpscr & IOC


def test_nans_propagate_quietened_signalling_first_unless_default_nan_mode(tmp_path):
    snan, qnan = 0x7FF0_0000_0000_0001, 0xFFF8_0000_0000_0002
    result, fpscr, _ = vfp(tmp_path, "vadd.f64 d0, d1, d2", raw=[0, qnan, snan])
    assert (result, fpscr & IOC) == (snan | 1 << 51, IOC)          # the signalling NaN wins, quietened
    result, fpscr, _ = vfp(tmp_path, "vadd.f64 d0, d1, d2", raw=[0, qnan, bits(1.0)])
    assert (result, fpscr & IOC) == (qnan, 0)
    result, _, _ = vfp(tmp_path, "vadd.f64 d0, d1, d2", raw=[0, qnan, bits(1.0)], fpscr=DN)
    assert result == DEFAULT_NAN


@pytest.mark.parametrize("mode, expect", [(RN, 1.0 / 3.0), (RZ, 1.0 / 3.0), (RM, 1.0 / 3.0),
                                          (RP, math.nextafter(1.0 / 3.0, 1.0))])
def test_the_fpscr_rounding_mode_rounds_the_exact_result(tmp_path, mode, expect):
    result, fpscr, _ = vfp(tmp_path, "vdiv.f64 d0, d1, d2", d1=1.0, d2=3.0, fpscr=mode)
    assert result == bits(expect)
    assert fpscr & 0x9F == IXC


def test_exact_zero_sums_are_minus_zero_only_rounding_down(tmp_path):
    assert vfp(tmp_path, "vsub.f64 d0, d1, d2", d1=1.0, d2=1.0)[0] == bits(0.0)
    assert vfp(tmp_path, "vsub.f64 d0, d1, d2", d1=1.0, d2=1.0, fpscr=RM)[0] == bits(-0.0)


def test_fused_multiply_add_rounds_once_and_the_chained_one_twice(tmp_path):
    a, b = 1 + 2 ** -27, 1 - 2 ** -27               # a * b = 1 - 2^-54, a tie that rounds to 1.0
    assert vfp(tmp_path, "vfma.f64 d0, d1, d2", d0=-1.0, d1=a, d2=b)[0] == bits(-2.0 ** -54)
    assert vfp(tmp_path, "vmla.f64 d0, d1, d2", d0=-1.0, d1=a, d2=b)[0] == bits(0.0)
    assert vfp(tmp_path, "vfms.f64 d0, d1, d2", d0=1.0, d1=a, d2=b)[0] == bits(2.0 ** -54)
    assert vfp(tmp_path, "vmls.f64 d0, d1, d2", d0=10.0, d1=2.0, d2=3.0)[0] == bits(4.0)
    assert vfp(tmp_path, "vnmla.f64 d0, d1, d2", d0=10.0, d1=2.0, d2=3.0)[0] == bits(-16.0)
    assert vfp(tmp_path, "vnmls.f64 d0, d1, d2", d0=10.0, d1=2.0, d2=3.0)[0] == bits(-4.0)
    assert vfp(tmp_path, "vfnma.f64 d0, d1, d2", d0=10.0, d1=2.0, d2=3.0)[0] == bits(-16.0)
    assert vfp(tmp_path, "vfnms.f64 d0, d1, d2", d0=10.0, d1=2.0, d2=3.0)[0] == bits(-4.0)


@pytest.mark.parametrize("insn, a, b, nzcv, flags", [
    ("vcmp.f64 d1, d2", 1.0, 2.0, 0b1000, 0),
    ("vcmp.f64 d1, d2", 2.0, 2.0, 0b0110, 0),
    ("vcmp.f64 d1, d2", 3.0, 2.0, 0b0010, 0),
    ("vcmp.f64 d1, d2", math.nan, 2.0, 0b0011, 0),        # a quiet NaN: unordered, no exception
    ("vcmpe.f64 d1, d2", math.nan, 2.0, 0b0011, IOC),     # ... except for VCMPE
    ("vcmp.f64 d1, #0", -0.0, 0.0, 0b0110, 0),
])
def test_compares_set_fpscr_nzcv(tmp_path, insn, a, b, nzcv, flags):
    _, fpscr, _ = vfp(tmp_path, insn, d1=a, d2=b)
    assert (fpscr >> 28, fpscr & 0x9F) == (nzcv, flags)


@pytest.mark.parametrize("insn, a, fpscr_in, expect, flags", [
    ("vcvt.s32.f64 s0, d1", 3.7, RN, 3, IXC),                     # VCVT: toward zero whatever RMode
    ("vcvt.s32.f64 s0, d1", -3.7, RN, -3, IXC),
    ("vcvt.s32.f64 s0, d1", 1e20, RN, 0x7FFF_FFFF, IOC),          # saturated
    ("vcvt.s32.f64 s0, d1", math.nan, RN, 0, IOC),
    ("vcvt.u32.f64 s0, d1", -1.0, RN, 0, IOC),
    ("vcvt.u32.f64 s0, d1", 4294967295.0, RN, 0xFFFF_FFFF, 0),
    ("vcvtr.s32.f64 s0, d1", 2.5, RN, 2, IXC),                    # VCVTR: FPSCR's mode, ties to even
    ("vcvtr.s32.f64 s0, d1", 3.5, RN, 4, IXC),
    ("vcvtr.s32.f64 s0, d1", -2.5, RM, -3, IXC),
    ("vcvta.s32.f64 s0, d1", 2.5, RN, 3, IXC),                    # VCVTA: ties away from zero
    ("vcvtm.s32.f64 s0, d1", -0.5, RN, -1, IXC),
])
def test_conversions_to_integers_round_saturate_and_flag(tmp_path, insn, a, fpscr_in, expect, flags):
    result, fpscr, _ = vfp(tmp_path, insn, d1=a, fpscr=fpscr_in)
    assert result & 0xFFFF_FFFF == expect & 0xFFFF_FFFF
    assert fpscr & 0x9F == flags


def test_conversions_between_formats_and_from_integers(tmp_path):
    result, fpscr, _ = vfp(tmp_path, "vcvt.f64.f32 d0, s6", s6=single_bits(0.1))
    assert (result, fpscr & 0x9F) == (bits(float(struct.unpack("<f", struct.pack("<f", 0.1))[0])), 0)
    result, fpscr, _ = vfp(tmp_path, "vcvt.f32.f64 s0, d1", d1=0.1)
    assert (result & 0xFFFF_FFFF, fpscr & 0x9F) == (single_bits(0.1), IXC)
    result, fpscr, _ = vfp(tmp_path, "vcvt.f32.f64 s0, d1", d1=1e300)
    assert (result & 0xFFFF_FFFF, fpscr & 0x9F) == (single_bits(math.inf), OFC | IXC)
    result, fpscr, _ = vfp(tmp_path, "vcvt.f64.f32 d0, s6", s6=0x7F80_0001)     # a signalling NaN
    assert (result, fpscr & IOC) == (0x7FF8_0000_2000_0000, IOC)
    assert vfp(tmp_path, "vcvt.f64.s32 d0, s6", s6=(-5) & 0xFFFF_FFFF)[0] == bits(-5.0)
    assert vfp(tmp_path, "vcvt.f64.u32 d0, s6", s6=0xFFFF_FFFF)[0] == bits(4294967295.0)
    result, _, _ = vfp(tmp_path, "vcvt.s32.f64 d0, d0, #16", d0=-1.25)           # to fixed point, 16 fraction bits
    assert result == (-(5 << 14)) & (1 << 64) - 1
    assert vfp(tmp_path, "vrinta.f64 d0, d1", d1=-2.5)[0] == bits(-3.0)
    assert vfp(tmp_path, "vmaxnm.f64 d0, d1, d2", d1=math.nan, d2=1.0)[0] == bits(1.0)


@pytest.mark.parametrize("apsr, taken", [(1 << 31, True), (0, False)])
def test_a_conditional_double_instruction_obeys_its_it_block(tmp_path, apsr, taken):
    insn = "mov r5, #0\n    itt mi\n    vsubmi.f64 d0, d1, d2\n    addmi r5, r5, #1"
    result, _, s = vfp(tmp_path, insn, d0=9.0, d1=5.0, d2=2.0, apsr=apsr)
    assert value(result) == (3.0 if taken else 9.0)
    assert s.word(DATA + 0x4C) == (1 if taken else 0)     # the IT state moved on past the emulated one


# -- exceptions ----------------------------------------------------------------------------------
EXCEPTIONS = f"""
    ldr r0, =0x11111111
    ldr r1, =0x22222222
    ldr r2, =0x33333333
    ldr r3, =0x44444444
    ldr r12, =0x55555555
    ldr r7, ={STACK_TOP - 4:#x}  @ a 4-aligned, not 8-aligned stack: the frame is realigned
    mov sp, r7
    {{fp}}
    ldr r4, =0xE000E010
    ldr r5, =999
    str r5, [r4, #4]            @ SysTick: reload 999 (a tick every 1000 cycles)
    movs r5, #0
    str r5, [r4, #8]
    movs r5, #7
    str r5, [r4]                @ enable, interrupt, processor clock
    ldr r6, ={DATA:#x}
1:  ldr r5, [r6]
    cmp r5, #3
    blt 1b
    movs r5, #0
    str r5, [r4]                @ SysTick off
"""
HANDLER = f"""
    ldr r0, ={DATA:#x}
    ldr r1, [r0]
    adds r1, r1, #1
    str r1, [r0]
    str lr, [r0, #4]            @ EXC_RETURN
    mov r2, sp
    str r2, [r0, #8]            @ where the frame is
    movs r3, #0                 @ clobber what the frame restores
    mov r12, r3
    {{fp}}
    bx lr
"""


def test_exception_entry_pushes_the_frame_and_return_restores_it(tmp_path):
    s = Snippet(tmp_path, EXCEPTIONS.format(fp=""), HANDLER.format(fp="")).run()
    assert s.word(DATA) == 3
    assert s.word(DATA + 4) == 0xFFFF_FFF9                  # thread mode, main stack, basic frame
    frame = s.word(DATA + 8)
    assert frame == STACK_TOP - 4 - 8 * 4 - 4                 # realigned to 8 bytes
    r0, r1, r2, r3, r12, lr, pc, xpsr = s.words(frame, 8)
    assert (r0, r1, r2, r3, r12) == (0x11111111, 0x22222222, 0x33333333, 0x44444444, 0x55555555)
    assert CODE <= pc < CODE + len(s.code) and xpsr & 1 << 24 and xpsr & 1 << 9
    assert [s.reg(r) for r in ("r0", "r1", "r2", "r3", "r12")] == [0x11111111, 0x22222222, 0x33333333,
                                                                   0x44444444, 0x55555555]
    assert s.reg("sp") == STACK_TOP - 4
    assert 3000 <= s.core.clock.now() < 3100                 # the third tick, counted in cycles


def test_an_interrupted_fp_context_gets_the_extended_frame(tmp_path):
    s = Snippet(tmp_path, EXCEPTIONS.format(fp="vmov.f32 s0, #1.0\n    vmov.f32 s15, #3.0"),
                HANDLER.format(fp="vmov.f32 s0, #2.0\n    vmov.f32 s15, #2.0")).run()
    assert s.word(DATA + 4) == 0xFFFF_FFE9                  # FType 0: S0-S15 and FPSCR stacked
    assert (s.reg("s0"), s.reg("s15")) == (single_bits(1.0), single_bits(3.0))
    assert s.reg("control") & 1 << 2                        # FPCA as the thread had it


# -- sleeping ------------------------------------------------------------------------------------
def systick_every(cycles):
    """Code that starts SysTick with an interrupt every `cycles`."""
    return f"""
    ldr r4, =0xE000E010
    ldr r5, ={cycles - 1}
    str r5, [r4, #4]
    movs r5, #7
    str r5, [r4]
"""


def test_wfe_and_wfi_sleep_until_the_next_event(tmp_path):
    body = systick_every(100_000) + """
    wfe
    wfi
    """
    handler = f"    ldr r0, ={DATA:#x}\n    ldr r1, [r0]\n    adds r1, r1, #1\n    str r1, [r0]\n    bx lr"
    s = Snippet(tmp_path, body, handler).run()
    assert s.word(DATA) == 2                                  # one tick woke each
    assert s.core.clock.now() >= 200_000 and s.core.clock.instructions < 100


def test_wfe_falls_through_when_an_event_is_latched_and_a_hopeless_sleep_stops_with_one_line(tmp_path):
    body = """
    ldr r4, =0xE000ED04
    ldr r5, =0x10000000
    str r5, [r4]                @ PendSV: its entry and return latch an event
    isb
    wfe                         @ consumes it
    nop
    wfe                         @ nothing will ever wake this one
    """
    s = Snippet(tmp_path, body)
    with pytest.raises(Stop) as e:
        s.core.run(max_cycles=100_000)
    second = s.code.rfind(b"\x20\xbf")
    assert str(e.value) == ("WFE with no interrupt pending and no timed event: the core would sleep forever at pc "
                            f"0x{CODE + second:08X} in snippet")
    assert s.core.clock.slept == 0


def test_helium_runs_on_the_twin_with_the_boards_executor(tmp_path):
    """A tail-predicated loop of vector loads, adds and stores: 7 words, the last pass with 3 lanes
    (the word after them untouched); the executor is the simulated board's (judged by QEMU)."""
    s = Snippet(tmp_path, f"""
    ldr r0, ={DATA:#x}
    add r1, r0, #64
    movs r2, #7
    movs r3, #5
    dlstp.32 lr, r2
1:  vldrw.u32 q0, [r0], #16
    vadd.i32 q0, q0, r3
    vstrw.32 q0, [r1], #16
    letp lr, 1b
""")
    s.put(DATA, struct.pack("<8I", *range(10, 18)))
    s.put(DATA + 64, struct.pack("<8I", *[0xEEEE_EEEE] * 8))
    s.run()
    assert s.words(DATA + 64, 8) == (15, 16, 17, 18, 19, 20, 21, 0xEEEE_EEEE)


def test_a_vector_access_to_unmapped_memory_stops_with_one_line(tmp_path):
    s = Snippet(tmp_path, "    ldr r0, =0x60000000\n    vldrw.u32 q0, [r0]")
    with pytest.raises(Stop) as e:
        s.core.run(max_cycles=1000)
    assert str(e.value).startswith("bus fault: vector read of unmapped address 0x60000000 at pc ")


def test_a_helium_instruction_stops_with_one_line(tmp_path):
    s = Snippet(tmp_path, "    nop\n    vrmlalvh.s32 r0, r1, q0, q1")      # a form the twin does not carry out
    with pytest.raises(Stop) as e:
        s.core.run(max_cycles=1000)
    assert str(e.value) == f"Helium (MVE) instruction ee80 0f02: not emulated by the twin at pc 0x{START + 2:08X} " \
                           "in snippet"
    assert "\n" not in str(e.value)


def test_an_error_handlers_endless_loop_stops_with_one_line(tmp_path):
    s = Snippet(tmp_path, "    nop\n1:  b 1b")
    with pytest.raises(Stop, match=r"^the firmware loops forever \(an error handler's `b \.`\) at pc 0x10000042 "
                                   r"in snippet$"):
        s.core.run(max_cycles=10_000_000)


def test_a_sleep_only_timers_wake_stops_with_what_it_waits_for(tmp_path):
    body = systick_every(800_000) + """
1:  wfe                         @ waits for a flag an interrupt handler would set: no device ever does
    b 1b
    """
    s = Snippet(tmp_path, body)
    s.core.awaited = lambda: "the interrupt it waits for is never raised"
    with pytest.raises(Stop, match=r"^WFE woken only by timers for 1,600,000,000 cycles: the interrupt it waits for "
                                   r"is never raised at pc 0x1000004A in snippet$"):
        s.core.run()
    assert s.core.exceptions.taken[15] == 2000


@pytest.mark.parametrize("value, saturates", [(0x7FFF_FFF0, True), (0x1000, False)])
def test_saturation_sets_the_cumulative_flag(tmp_path, value, saturates):
    """VQADD beyond the lane's range sets QC (kept by the executor: unicorn's FPSCR has no such bit,
    so the QEMU judge cannot compare it); within range it stays clear."""
    s = Snippet(tmp_path, f"    ldr r0, ={value:#x}\n    vdup.32 q0, r0\n    vqadd.s32 q1, q0, q0")
    s.run()
    assert s.core.helium.state.qc is saturates


# -- an interrupt inside a vector loop ----------------------------------------------------------
VECTOR_LOOP = """
    ldr r0, ={src:#x}
    ldr r1, ={dst:#x}
    ldr r2, ={n}
    movs r3, #1
    dlstp.8 lr, r2              @ tail-predicated: LTPSIZE 0, LR counts bytes
1:  vldrb.u8 q0, [r0], #16
    vpt.i8 eq, q0, r3           @ VPR: the lanes holding 1 ...
    vaddt.i8 q0, q0, r3         @ ... become 2
    vstrb.8 q0, [r1], #16
    letp lr, 1b
    ldr r4, =0xE000E010
    movs r5, #0
    str r5, [r4]                @ SysTick off
"""
VECTOR_HANDLER = """
    push {{r4, lr}}
    ldr r4, ={count:#x}
    ldr r0, [r4]
    adds r0, r0, #1
    str r0, [r4]
    ldr r0, ={scratch:#x}
    movs r2, #5
    movs r3, #0x55
    vdup.8 q0, r3               @ Q0 as the interrupted loop never had it
    vqadd.s8 q1, q0, q0         @ saturates: QC in the handler's FPSCR
    dlstp.8 lr, r2              @ a tail-predicated loop of its own, which ends with LTPSIZE 4
2:  vstrb.8 q0, [r0], #16
    letp lr, 2b
    pop {{r4, pc}}
"""


@pytest.mark.parametrize("period", range(24, 38))
def test_an_interrupt_inside_a_vector_loop_leaves_the_loops_state_as_it_was(tmp_path, period):
    """SysTick every `period` cycles lands at every point of a tail-predicated, VPT-predicated copy
    loop of pure Helium (no scalar FP instruction: the vector instructions alone make the FP
    context), and its handler runs vector code of its own. The copy must come out exact and stop
    at its end: Q0-Q3, FPSCR (LTPSIZE, QC) and VPR are the interrupted code's again after return,
    as a Cortex-M55 keeps them in the extended frame. (Without: the handler's LETP leaves LTPSIZE
    4, the loop counts bytes one by one and copies 16 times too far; its Q0 and VPT mask leak.)"""
    n, src, dst, scratch, count = 400, DATA, DATA + 0x400, DATA + 0x800, DATA + 0x900
    s = Snippet(tmp_path, systick_every(period) + VECTOR_LOOP.format(src=src, dst=dst, n=n),
                VECTOR_HANDLER.format(count=count, scratch=scratch))
    data = bytes((7 * i) % 5 for i in range(n))
    s.put(src, data + bytes(range(200, 228)))
    s.put(dst, b"\xEE" * 0x200)
    s.run()
    assert s.word(count) >= 3                                          # it did land in the loop
    assert bytes(s.core.uc.mem_read(dst, n)) == bytes(2 if b == 1 else b for b in data)
    assert bytes(s.core.uc.mem_read(dst + n, 0x200 - n)) == b"\xEE" * (0x200 - n)
    assert s.core.helium.state.qc is False and s.core.helium.state.ltpsize == 4
    assert s.reg("control") & 1 << 2                                   # the vector code made an FP context


def test_an_interrupt_between_an_it_instruction_and_its_block_across_a_1k_page_runs_its_handler_whole(tmp_path):
    """unicorn (QEMU) ends a translated block at each 1 KiB page, so an `ittt` whose block starts
    a new page can be interrupted before its conditional instructions: SysTick lands there with
    EQ false. The handler (SysTick_Handler's shape in ST's firmware: a tail call to HAL_IncTick)
    starts outside the IT block (EPSR.IT cleared at entry); the block's rest is still skipped
    after return (the frame's xPSR kept it). Without the clear, the handler's first three
    instructions are skipped and it increments the word at the interrupted code's r0: ST's
    firmware then faulted in memcpy on a pointer corrupted so (pb_field_iter_next's
    `ittt eq` at 0x34015BFE)."""
    count, sentinel = DATA, DATA + 0x100
    body = systick_every(97) + f"""
    ldr r0, ={sentinel:#x}
    movs r5, #0
    movs r1, #0
    movs r2, #0
    movs r3, #0
    ldr r6, =3000
    b 2f
    .p2align 10
    .space 1020
2:  cmp r5, #1
    ittt eq                     @ the last halfword of a page
    moveq r1, #1                @ the next page: a new translated block
    moveq r2, #2
    moveq r3, #3
    subs r6, r6, #1
    bne 2b
    ldr r4, =0xE000E010
    str r5, [r4]                @ SysTick off
"""
    handler = f"""
    b.w 3f
    movs r0, r0
3:  ldr r0, ={count:#x}
    ldr r1, [r0]
    adds r1, r1, #1
    str r1, [r0]
    bx lr
"""
    s = Snippet(tmp_path, body, handler)
    boundary = s.code.index(bytes.fromhex("012d02bf")) + 4           # cmp r5, #1; ittt eq
    assert (CODE + boundary) % 1024 == 0
    s.run()
    assert s.word(sentinel) == 0
    assert s.word(count) == s.core.exceptions.taken[15] > 100
    assert (s.reg("r1"), s.reg("r2"), s.reg("r3")) == (0, 0, 0)


def test_fpccr_aspen_clear_leaves_vector_code_without_fp_context(tmp_path):
    """FPCCR reads ASPEN and LSPEN set at reset; the firmware clearing ASPEN, a vector instruction
    makes no FP context (CONTROL.FPCA stays clear, interrupts stack the basic frame)."""
    s = Snippet(tmp_path, "    ldr r0, =0xE000EF34\n    ldr r1, [r0]\n    movs r2, #0\n    str r2, [r0]\n"
                          "    vdup.32 q0, r2", "    bx lr")
    s.run()
    assert s.reg("r1") == 0xC000_0000 and not s.reg("control") & 1 << 2
