"""Exception entry and return as Armv8-M defines them, done by the board because unicorn has no
NVIC. Entry pushes the frame on the stack in use (R0-R3, R12, LR, return address, xPSR; then
S0-S15, FPSCR and VPR when the interrupted code had FP context; 8-byte aligned, xPSR bit 9 saying
so), puts EXC_RETURN in LR and starts the handler from the vector table, outside any IT block and
without FP context. The handler's return is a branch to EXC_RETURN, which unicorn reports as its
exception-exit interrupt: `leave` pops the frame. The core stays in unicorn's thread mode
throughout (IPSR reads 0 in handlers); this unit keeps the active exceptions. A pending exception
is taken when its group priority is higher (numerically lower) than the execution priority
(active exceptions, PRIMASK, BASEPRI).

The FP context as a Cortex-M55 keeps it (FPCCR, FPCAR, FPDSCR; the SCB shows them): with ASPEN,
an FP instruction with no FP context makes one (CONTROL.FPCA; FPSCR from FPDSCR, VPR zero).
unicorn does so for the scalar VFP instructions it runs; `fp_instruction` for the vector ones
(mve), whose FPSCR fields (LTPSIZE, QC) and VPR unicorn lacks. The extended frame carries FPSCR
with them and VPR. With LSPEN (lazy stacking) a Cortex-M55 only reserves the FP part of the frame
(FPCAR, LSPACT) and writes it at the handler's first FP instruction: the twin writes it at entry,
which is the same words (nothing changes the FP registers before that instruction) and restores
the same registers on return; only the reserved words read differently before then."""
import struct
from dataclasses import dataclass

from unicorn.arm_const import (UC_ARM_REG_BASEPRI, UC_ARM_REG_CONTROL, UC_ARM_REG_FAULTMASK,
                               UC_ARM_REG_LR, UC_ARM_REG_PC, UC_ARM_REG_PRIMASK,
                               UC_ARM_REG_R0, UC_ARM_REG_R12, UC_ARM_REG_S0, UC_ARM_REG_SP, UC_ARM_REG_XPSR)

NMI, HARDFAULT, SVCALL, PENDSV, SYSTICK, IRQ0 = 2, 3, 11, 14, 15, 16
NAMES = {2: "NMI", 3: "HardFault", 4: "MemManage", 5: "BusFault", 6: "UsageFault", 7: "SecureFault", 11: "SVCall",
         12: "DebugMonitor", 14: "PendSV", 15: "SysTick"}
CONTROL_SPSEL, CONTROL_FPCA = 1 << 1, 1 << 2
XPSR_FRAME_ALIGN = 1 << 9
BASIC_FRAME, EXTENDED_FRAME = 8 * 4, 26 * 4
_CORE = (UC_ARM_REG_R0, UC_ARM_REG_R0 + 1, UC_ARM_REG_R0 + 2, UC_ARM_REG_R0 + 3, UC_ARM_REG_R12, UC_ARM_REG_LR)
THREAD_MODE_RETURN, SECURE_STACK, DEFAULT_STACKING, STANDARD_FRAME, ES_SECURE = 1 << 3, 1 << 6, 1 << 5, 1 << 4, 1
XPSR_IT = 0x0600FC00                   # ICI/IT bits of EPSR: a handler starts outside any IT block
FPCCR_ASPEN, FPCCR_LSPEN, FPCCR_LSPACT = 1 << 31, 1 << 30, 1
FPCCR_RESET, FPDSCR_RESET = FPCCR_ASPEN | FPCCR_LSPEN, 4 << 16    # FPDSCR: LTPSIZE 4, the rest 0
FP_FRAME_OFFSET = 8 * 4                # FPCAR: where S0 sits in an extended frame


def exception_name(number):
    return NAMES.get(number, f"IRQ{number - IRQ0}" if number >= IRQ0 else f"exception {number}")


def exc_return(thread, process_stack, extended_frame):
    """EXC_RETURN for a secure exception taken from secure code (prefix 0xFF, bits 23:7 reserved
    ones, S, DCRS and ES set)."""
    value = 0xFFFFFF80 | SECURE_STACK | DEFAULT_STACKING | ES_SECURE
    value |= 0 if extended_frame else STANDARD_FRAME
    value |= THREAD_MODE_RETURN | (1 << 2 if process_stack else 0) if thread else 0
    return value


@dataclass
class Active:
    number: int
    exc_return: int
    control: int          # CONTROL of the interrupted code


class ExceptionUnit:
    """The NVIC's state and the core's exception logic for one core (`uc`), vectors at `vtor()`."""

    def __init__(self, uc, vtor, helium, priority_bits=4):
        self.uc, self.helium = uc, helium      # helium: the vector unit (VPR, FPSCR's LTPSIZE and QC)
        self.vtor = vtor                       # callable: the vector table's address (SCB.VTOR)
        self.fpccr, self.fpcar, self.fpdscr = FPCCR_RESET, 0, FPDSCR_RESET
        self.priority_bits = priority_bits
        self.pending, self.enabled, self.priority = set(), set(), {}
        self.asserted = set()                  # interrupt lines a device holds high (level-sensitive)
        self.on_pending = lambda: None         # told when an exception becomes pending (the core stops soon)
        self.active = []
        self.prigroup = 0
        self.taken = {}                        # exception number → times taken (for reports)

    # -- state the NVIC / SCB registers show --------------------------------------------------
    def pend(self, number):
        self.pending.add(number)
        self.on_pending()

    def set_line(self, number, asserted):
        """A device's level-sensitive line: pending while asserted (again after its handler
        returns, if still asserted). True when this made the exception newly pending."""
        if not asserted:
            self.asserted.discard(number)
            return False
        self.asserted.add(number)
        if number in self.pending or any(a.number == number for a in self.active):
            return False
        self.pend(number)
        return True

    def set_priority(self, number, value):
        self.priority[number] = value & (0xFF << (8 - self.priority_bits)) & 0xFF

    def group_priority(self, number):
        mask = ~((2 << self.prigroup) - 1) & 0xFF
        return self.priority.get(number, 0) & mask if number >= 4 else number - 4   # NMI/HardFault: fixed

    def execution_priority(self):
        prio = min((self.group_priority(a.number) for a in self.active), default=256)
        if self.uc.reg_read(UC_ARM_REG_FAULTMASK) & 1:
            prio = min(prio, -1)
        if self.uc.reg_read(UC_ARM_REG_PRIMASK) & 1:
            prio = min(prio, 0)
        basepri = self.uc.reg_read(UC_ARM_REG_BASEPRI) & 0xFF
        if basepri:
            prio = min(prio, basepri & ~((2 << self.prigroup) - 1) & 0xFF)
        return prio

    def is_enabled(self, number):
        return number < IRQ0 or number in self.enabled

    def deliverable(self):
        """The pending exception to take now, or None."""
        ready = [n for n in self.pending if self.is_enabled(n)]
        if not ready:
            return None
        best = min(ready, key=lambda n: (self.group_priority(n), n))
        return best if self.group_priority(best) < self.execution_priority() else None

    def wakes(self):
        """A pending enabled exception exists (WFI wakes even when PRIMASK masks it)."""
        return any(self.is_enabled(n) for n in self.pending)

    # -- the FP context ------------------------------------------------------------------------
    def fp_instruction(self):
        """An FP (vector) instruction is about to run: with no FP context, and ASPEN, make one."""
        if self.fpccr & FPCCR_LSPACT:
            self.fpccr &= ~FPCCR_LSPACT        # the lazily reserved frame is written (see the docstring)
        control = self.uc.reg_read(UC_ARM_REG_CONTROL)
        if control & CONTROL_FPCA or not self.fpccr & FPCCR_ASPEN:
            return
        self.uc.reg_write(UC_ARM_REG_CONTROL, control | CONTROL_FPCA)
        self._new_fp_context()

    def _new_fp_context(self):
        self.helium.set_fpscr(self.fpdscr)
        self.helium.set_vpr(0)

    # -- entry and return ----------------------------------------------------------------------
    def enter(self, number, return_address=None):
        """Take exception `number`: push the frame, EXC_RETURN in LR, PC = its vector."""
        uc = self.uc
        control = uc.reg_read(UC_ARM_REG_CONTROL)
        thread = not self.active
        process = thread and bool(control & CONTROL_SPSEL)
        extended = bool(control & CONTROL_FPCA)
        sp = uc.reg_read(UC_ARM_REG_SP)
        size = EXTENDED_FRAME if extended else BASIC_FRAME
        frame = (sp - size) & ~7
        xpsr = uc.reg_read(UC_ARM_REG_XPSR) | (XPSR_FRAME_ALIGN if (sp - size) & 4 else 0)
        pc = uc.reg_read(UC_ARM_REG_PC) if return_address is None else return_address
        words = [uc.reg_read(r) for r in _CORE] + [pc & ~1, xpsr]
        if extended:
            words += [uc.reg_read(UC_ARM_REG_S0 + i) for i in range(16)] + [self.helium.fpscr(), self.helium.vpr()]
            if self.fpccr & FPCCR_LSPEN:
                self.fpccr, self.fpcar = self.fpccr | FPCCR_LSPACT, frame + FP_FRAME_OFFSET
        uc.mem_write(frame, struct.pack(f"<{len(words)}I", *(w & 0xFFFFFFFF for w in words)))
        uc.reg_write(UC_ARM_REG_SP, frame)
        uc.reg_write(UC_ARM_REG_XPSR, xpsr & ~(XPSR_IT | XPSR_FRAME_ALIGN))
        self._new_fp_context()                 # the handler's first FP instruction would make it: the
        #                                        interrupted code's is in the frame, or it had none
        if process:                            # handlers run on the main stack
            uc.reg_write(UC_ARM_REG_CONTROL, control & ~(CONTROL_SPSEL | CONTROL_FPCA))
        elif extended:
            uc.reg_write(UC_ARM_REG_CONTROL, control & ~CONTROL_FPCA)
        ret = exc_return(thread, process, extended)
        self.active.append(Active(number, ret, control))
        self.pending.discard(number)
        self.taken[number] = self.taken.get(number, 0) + 1
        uc.reg_write(UC_ARM_REG_LR, ret)
        vector = struct.unpack("<I", bytes(uc.mem_read(self.vtor() + 4 * number, 4)))[0]
        uc.reg_write(UC_ARM_REG_PC, vector | 1)

    def leave(self):
        """Return from the active exception (the handler branched to its EXC_RETURN)."""
        uc = self.uc
        done = self.active.pop()
        ret = done.exc_return
        extended = not ret & STANDARD_FRAME
        if ret & THREAD_MODE_RETURN:
            uc.reg_write(UC_ARM_REG_CONTROL, done.control & ~CONTROL_FPCA)     # back to the thread's stack
        sp = uc.reg_read(UC_ARM_REG_SP)
        n = (EXTENDED_FRAME if extended else BASIC_FRAME) // 4
        words = struct.unpack(f"<{n}I", bytes(uc.mem_read(sp, 4 * n)))
        for reg, value in zip(_CORE, words):
            uc.reg_write(reg, value)
        xpsr = words[7]
        if extended:
            for i in range(16):
                uc.reg_write(UC_ARM_REG_S0 + i, words[8 + i])
            self.helium.set_fpscr(words[24])
            self.helium.set_vpr(words[25])
            self.fpccr &= ~FPCCR_LSPACT
        uc.reg_write(UC_ARM_REG_SP, sp + 4 * n + (4 if xpsr & XPSR_FRAME_ALIGN else 0))
        uc.reg_write(UC_ARM_REG_CONTROL, done.control)     # FPCA as the interrupted code had it
        uc.reg_write(UC_ARM_REG_XPSR, xpsr & ~XPSR_FRAME_ALIGN)
        uc.reg_write(UC_ARM_REG_PC, words[6] | 1)
        if done.number in self.asserted:
            self.pending.add(done.number)
        return done.number

