"""The twin's exception unit in-process, on a bare unicorn core: the architecture's numbers and
EXC_RETURN values, priority bits and grouping at each PRIGROUP boundary, execution priority from
active exceptions, FAULTMASK, PRIMASK and BASEPRI, which pending exception is taken (ties, equal
priority), level-sensitive lines, the FP context, and the exact words of basic and extended frames
pushed on entry and popped on return (test_twin_cpu.py runs the same on assembled code)."""
import struct

import pytest
from unicorn import UC_ARCH_ARM, UC_MODE_MCLASS, UC_MODE_THUMB, Uc
from unicorn.arm_const import (UC_ARM_REG_BASEPRI, UC_ARM_REG_CONTROL, UC_ARM_REG_FAULTMASK, UC_ARM_REG_LR,
                               UC_ARM_REG_PC, UC_ARM_REG_PRIMASK, UC_ARM_REG_R0, UC_ARM_REG_R12, UC_ARM_REG_S0,
                               UC_ARM_REG_SP, UC_ARM_REG_XPSR, UC_CPU_ARM_CORTEX_M33)

from n6board.dk.exceptions import (BASIC_FRAME, EXTENDED_FRAME, FPCCR_ASPEN, FPCCR_LSPACT, FPCCR_LSPEN,
                                   FPDSCR_RESET, HARDFAULT, IRQ0, NMI, PENDSV, SVCALL, SYSTICK, ExceptionUnit,
                                   exc_return, exception_name)

VTOR, RAM, TOP = 0x1000_0000, 0x2000_0000, 0x2000_1000
CORE = (UC_ARM_REG_R0, UC_ARM_REG_R0 + 1, UC_ARM_REG_R0 + 2, UC_ARM_REG_R0 + 3, UC_ARM_REG_R12, UC_ARM_REG_LR)


class Helium:
    """The vector unit's FPSCR and VPR, as the exception unit reads and sets them."""
    def __init__(self):
        self.fpscr_value, self.vpr_value = 0x1234, 0xABCD

    def fpscr(self):
        return self.fpscr_value

    def set_fpscr(self, v):
        self.fpscr_value = v

    def vpr(self):
        return self.vpr_value

    def set_vpr(self, v):
        self.vpr_value = v


@pytest.fixture
def unit():
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_M33)
    uc.mem_map(VTOR, 0x1000)
    uc.mem_map(RAM, 0x1000)
    uc.mem_write(VTOR, struct.pack("<64I", *(0x1000_0100 + 0x10 * n for n in range(64))))
    return ExceptionUnit(uc, lambda: VTOR, Helium())


def test_the_architectures_numbers_and_names():
    assert (NMI, HARDFAULT, SVCALL, PENDSV, SYSTICK, IRQ0) == (2, 3, 11, 14, 15, 16)
    assert [exception_name(n) for n in range(1, 18)] == [
        "exception 1", "NMI", "HardFault", "MemManage", "BusFault", "UsageFault", "SecureFault", "exception 8",
        "exception 9", "exception 10", "SVCall", "DebugMonitor", "exception 13", "PendSV", "SysTick", "IRQ0", "IRQ1"]
    assert (BASIC_FRAME, EXTENDED_FRAME, FPDSCR_RESET) == (32, 104, 0x40000)


@pytest.mark.parametrize("thread, process, extended, value", [
    (False, False, False, 0xFFFFFFF1), (False, False, True, 0xFFFFFFE1), (True, False, False, 0xFFFFFFF9),
    (True, True, False, 0xFFFFFFFD), (True, False, True, 0xFFFFFFE9), (True, True, True, 0xFFFFFFED)])
def test_exc_return_values(thread, process, extended, value):
    assert exc_return(thread, process, extended) == value


def test_priorities_keep_their_implemented_bits(unit):
    unit.set_priority(20, 0x1F)
    unit.set_priority(21, 0x1FF)
    assert unit.priority == {20: 0x10, 21: 0xF0}
    three = ExceptionUnit(unit.uc, lambda: VTOR, Helium(), priority_bits=3)
    three.set_priority(20, 0xFF)
    assert three.priority == {20: 0xE0}


@pytest.mark.parametrize("prigroup, group", [(0, 0xB6), (1, 0xB4), (2, 0xB0), (3, 0xB0), (4, 0xA0), (5, 0x80),
                                             (6, 0x80), (7, 0x00)])
def test_group_priority_drops_the_subpriority_bits_of_prigroup(unit, prigroup, group):
    unit.priority_bits = 8
    unit.set_priority(20, 0xB7)
    assert unit.priority[20] == 0xB7                                   # all eight bits implemented
    unit.prigroup = prigroup
    assert unit.group_priority(20) == group


def test_nmi_and_hardfault_are_fixed_and_the_rest_configurable(unit):
    assert unit.prigroup == 0
    assert (unit.group_priority(NMI), unit.group_priority(HARDFAULT)) == (-2, -1)
    unit.set_priority(4, 0x20)
    assert (unit.group_priority(4), unit.group_priority(SVCALL), unit.group_priority(IRQ0)) == (0x20, 0, 0)


def test_execution_priority(unit):
    uc = unit.uc
    assert unit.execution_priority() == 256
    uc.reg_write(UC_ARM_REG_BASEPRI, 0x70)
    unit.prigroup = 4
    assert unit.execution_priority() == 0x60
    unit.prigroup = 0
    unit.set_priority(IRQ0, 0x40)
    unit.active.append(type("A", (), {"number": IRQ0})())
    assert unit.execution_priority() == 0x40
    uc.reg_write(UC_ARM_REG_PRIMASK, 1)
    assert unit.execution_priority() == 0
    uc.reg_write(UC_ARM_REG_FAULTMASK, 1)
    assert unit.execution_priority() == -1


def test_the_pending_exception_taken_is_the_highest_enabled_one_above_execution_priority(unit):
    for n, prio in ((IRQ0, 0x40), (IRQ0 + 1, 0x20), (IRQ0 + 2, 0x20), (SYSTICK, 0x30)):
        unit.set_priority(n, prio)
        unit.pend(n)
    assert unit.deliverable() == SYSTICK and unit.wakes()           # the IRQs are not enabled
    assert (unit.is_enabled(SYSTICK), unit.is_enabled(IRQ0)) == (True, False)
    unit.enabled |= {IRQ0, IRQ0 + 1, IRQ0 + 2}
    assert unit.deliverable() == IRQ0 + 1                          # equal priority: the lower number
    unit.uc.reg_write(UC_ARM_REG_BASEPRI, 0x20)
    assert unit.deliverable() is None                              # equal to execution priority: not taken
    unit.pending = {IRQ0 + 5}
    assert unit.deliverable() is None and not unit.wakes()
    unit.pending = set()
    assert unit.deliverable() is None


def test_a_level_line_pends_once_and_again_after_its_handler(unit):
    calls = []
    unit.on_pending = lambda: calls.append(1)
    assert unit.set_line(IRQ0, True) and unit.pending == {IRQ0} and calls == [1]
    assert not unit.set_line(IRQ0, True)                           # already pending
    unit.pending.clear()
    unit.active.append(type("A", (), {"number": IRQ0})())
    assert not unit.set_line(IRQ0, True)                           # its handler runs
    assert not unit.set_line(IRQ0, False) and unit.asserted == set()


def test_an_fp_instruction_makes_an_fp_context_once_under_aspen(unit):
    uc, h = unit.uc, unit.helium
    unit.fpccr |= FPCCR_LSPACT
    unit.fp_instruction()
    assert uc.reg_read(UC_ARM_REG_CONTROL) & 4 and (h.fpscr_value, h.vpr_value) == (FPDSCR_RESET, 0)
    assert not unit.fpccr & FPCCR_LSPACT
    h.fpscr_value = 7
    unit.fp_instruction()
    assert h.fpscr_value == 7                                      # FPCA set: the context stays
    uc.reg_write(UC_ARM_REG_CONTROL, 0)
    unit.fpccr &= ~FPCCR_ASPEN
    unit.fp_instruction()
    assert uc.reg_read(UC_ARM_REG_CONTROL) == 0 and h.fpscr_value == 7


def _state(unit, sp, control=0, xpsr=0x0100_0000):
    uc = unit.uc
    uc.reg_write(UC_ARM_REG_CONTROL, control)
    uc.reg_write(UC_ARM_REG_SP, sp)
    for i, r in enumerate(CORE):
        uc.reg_write(r, 0x11111111 * (i + 1))
    for i in range(16):
        uc.reg_write(UC_ARM_REG_S0 + i, 0x3F80_0000 + i)
    uc.reg_write(UC_ARM_REG_XPSR, xpsr)


def _words(unit, at, n):
    return list(struct.unpack(f"<{n}I", bytes(unit.uc.mem_read(at, 4 * n))))


@pytest.mark.parametrize("sp, aligned", [(TOP, False), (TOP - 4, True)])
def test_entry_pushes_the_basic_frame_and_return_pops_it(unit, sp, aligned):
    uc = unit.uc
    _state(unit, sp, xpsr=0x0100_0000 | 0x0600_FC00)               # inside an IT block
    unit.pend(IRQ0 + 3)
    unit.enter(IRQ0 + 3, return_address=0x1000_0041)
    frame = (sp - 32) & ~7
    assert uc.reg_read(UC_ARM_REG_SP) == frame
    assert _words(unit, frame, 8) == [0x11111111 * (i + 1) for i in range(6)] + \
        [0x1000_0040, 0x0100_0000 | 0x0600_FC00 | (0x200 if aligned else 0)]
    assert uc.reg_read(UC_ARM_REG_XPSR) & 0x0600_FE00 == 0
    assert uc.reg_read(UC_ARM_REG_PC) == 0x1000_0100 + 0x10 * (IRQ0 + 3)
    assert uc.reg_read(UC_ARM_REG_LR) == 0xFFFFFFF9 and unit.pending == set() and unit.taken == {IRQ0 + 3: 1}
    unit.enter(SYSTICK)                                            # nested: handler mode, from PC
    assert uc.reg_read(UC_ARM_REG_LR) == 0xFFFFFFF1 and unit.taken == {IRQ0 + 3: 1, SYSTICK: 1}
    assert [a.number for a in unit.active] == [IRQ0 + 3, SYSTICK]
    assert unit.leave() == SYSTICK
    for r in CORE:
        uc.reg_write(r, 0)
    unit.asserted.add(IRQ0 + 3)
    assert unit.leave() == IRQ0 + 3 and unit.pending == {IRQ0 + 3}
    assert [uc.reg_read(r) for r in CORE] == [0x11111111 * (i + 1) for i in range(6)]
    assert uc.reg_read(UC_ARM_REG_SP) == sp and uc.reg_read(UC_ARM_REG_PC) == 0x1000_0040
    assert uc.reg_read(UC_ARM_REG_XPSR) & 0x0600_FC00 == 0x0600_FC00 and not uc.reg_read(UC_ARM_REG_XPSR) & 0x200


def test_entry_with_fp_context_pushes_the_extended_frame_and_lazy_state(unit):
    uc, h = unit.uc, unit.helium
    _state(unit, TOP, control=4)                                   # FPCA: the thread has FP context
    unit.enter(PENDSV, return_address=0x1000_0080)
    frame = TOP - 104
    words = _words(unit, frame, 26)
    assert words[8:] == [0x3F80_0000 + i for i in range(16)] + [0x1234, 0xABCD]
    assert uc.reg_read(UC_ARM_REG_LR) == 0xFFFFFFE9 and not uc.reg_read(UC_ARM_REG_CONTROL) & 4
    assert unit.fpcar == frame + 32 and unit.fpccr == 0xC000_0001               # ASPEN, LSPEN, LSPACT
    assert (h.fpscr_value, h.vpr_value) == (FPDSCR_RESET, 0)         # the handler starts without FP context
    for i in range(16):
        uc.reg_write(UC_ARM_REG_S0 + i, 0)
    assert unit.leave() == PENDSV
    assert [uc.reg_read(UC_ARM_REG_S0 + i) for i in range(16)] == [0x3F80_0000 + i for i in range(16)]
    assert (h.fpscr_value, h.vpr_value) == (0x1234, 0xABCD) and unit.fpccr == 0xC000_0000
    assert uc.reg_read(UC_ARM_REG_SP) == TOP and uc.reg_read(UC_ARM_REG_CONTROL) & 4


def test_entry_from_the_process_stack_switches_to_the_main_stack(unit):
    uc = unit.uc
    uc.reg_write(UC_ARM_REG_SP, TOP - 0x800)                       # MSP
    _state(unit, TOP, control=2 | 4)                               # SPSEL and FPCA: PSP in use
    unit.enter(IRQ0, return_address=0x1000_0020)
    assert uc.reg_read(UC_ARM_REG_CONTROL) == 0 and uc.reg_read(UC_ARM_REG_LR) == 0xFFFFFFED
    assert uc.reg_read(UC_ARM_REG_SP) == TOP - 0x800
    unit.fpccr &= ~FPCCR_LSPEN
    assert unit.leave() == IRQ0
    assert uc.reg_read(UC_ARM_REG_CONTROL) == 6 and uc.reg_read(UC_ARM_REG_SP) == TOP
    assert uc.reg_read(UC_ARM_REG_PC) == 0x1000_0020


def test_without_lazy_stacking_no_fp_frame_is_reserved(unit):
    unit.fpccr = FPCCR_ASPEN
    _state(unit, TOP, control=4)
    unit.enter(PENDSV, return_address=0x1000_0080)
    assert unit.fpccr == FPCCR_ASPEN and unit.fpcar == 0
    assert _words(unit, TOP - 104 + 32, 18) == [0x3F80_0000 + i for i in range(16)] + [0x1234, 0xABCD]
