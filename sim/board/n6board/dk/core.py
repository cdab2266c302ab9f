"""The twin's Cortex-M55: unicorn's Cortex-M33 (with its single-precision FPU) completed where it
stops. The invalid-instruction hook executes Helium and the Armv8.1-M low-overhead loops (mve,
shared with the simulated board), double-precision VFP (vfp_double) and WFE; unicorn's interrupt hook
returns from exceptions (exceptions.ExceptionUnit) and serves SVC; a WFI halts unicorn and the run
loop resumes at the next event. The run loop also runs due timed events (clock) and takes pending
exceptions between slices of emulation. Anything the twin cannot do stops the run with one line
(Stop) naming the PC and the function, never a traceback: a Helium instruction, a fault, a sleep
that nothing will end."""
import struct

from unicorn import (UC_ARCH_ARM, UC_HOOK_INSN_INVALID, UC_HOOK_INTR, UC_HOOK_MEM_INVALID, UC_MEM_FETCH_UNMAPPED,
                     UC_MEM_WRITE_UNMAPPED, UC_MODE_MCLASS, UC_MODE_THUMB, Uc, UcError)
from unicorn.arm_const import UC_ARM_REG_PC, UC_ARM_REG_SP, UC_CPU_ARM_CORTEX_M33

from . import mve, vfp_double
from .clock import CycleClock
from .exceptions import SVCALL, SYSTICK, ExceptionUnit

NEVER = 0xFFFF_FFFF                  # an end address unicorn never reaches (code addresses are even)
WFI, WFE, WFI_W, WFE_W = 0xBF30, 0xBF20, (0xF3AF, 0x8003), (0xF3AF, 0x8002)
BRANCH_TO_SELF = 0xE7FE              # `b .`: an error handler's endless loop
EXCP_SWI, EXCP_BKPT, EXCP_EXCEPTION_EXIT = 2, 7, 8                # unicorn's (QEMU's) exception numbers
QEMU_EXCEPTIONS = {3: "prefetch abort", 4: "data abort", 17: "coprocessor access (NOCP)",
                   18: "invalid state (INVSTATE)", 19: "stack overflow (STKOF)", 21: "lazy FP state error",
                   22: "unaligned access", 23: "division by zero"}
SLICE_CYCLES = 2_000_000             # the longest stretch between two looks at the world (host input)
HOPELESS_SLEEP_CYCLES = 1_600_000_000    # a WFE/WFI woken only by timers for this long (2 s at 800 MHz)


class Stop(Exception):
    """The emulated code cannot go on; the message is one line."""

    def __init__(self, what, pc, function=None):
        self.what, self.pc, self.function = what, pc, function
        where = f" in {function}" if function else ""
        super().__init__(f"{what} at pc 0x{pc:08X}{where}")


class Core:
    """One emulated Cortex-M55; `function_at(pc)` names code for stop messages."""

    def __init__(self, function_at=lambda pc: None, vtor=lambda: 0):
        self.uc = uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
        uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_M33)
        self.function_at = function_at
        self.clock = CycleClock(uc)
        self.helium = mve.Helium(uc)
        self.exceptions = ExceptionUnit(uc, vtor, self.helium)
        self.helium.on_fp_instruction = self.exceptions.fp_instruction
        self.exceptions.on_pending = self.request_stop
        self.event_register = False          # WFE's event flag (set by exception entry and return)
        self.sleeping = None                 # "WFI" / "WFE" while the core waits for an event
        self.sleep_pc = 0                    # ... at this instruction
        self._stop = None                    # a Stop raised inside a hook
        self.on_slice = lambda: None         # called between slices (the board polls its host link)
        self.awaited = lambda: "no device could wake it"   # why a sleep only timers wake cannot end, or
        #                                      None while something outside (the host) may still wake it
        self._timer_sleep = None             # (pc, first cycle) of a sleep only timers have woken since
        self.wait_outside = lambda: None     # a sleep with no timed event ahead waits here for the world
        uc.hook_add(UC_HOOK_INSN_INVALID, self._on_invalid)
        uc.hook_add(UC_HOOK_INTR, self._on_interrupt)
        uc.hook_add(UC_HOOK_MEM_INVALID, self._on_bad_access)

    # -- control ---------------------------------------------------------------------------------
    @property
    def pc(self):
        return self.uc.reg_read(UC_ARM_REG_PC)

    def reset(self, sp, pc):
        self.uc.reg_write(UC_ARM_REG_SP, sp)
        self.uc.reg_write(UC_ARM_REG_PC, pc | 1)

    def request_stop(self):
        """End the current slice at the next block (a device made an interrupt pending, or wants
        the loop)."""
        self.clock.stop_soon()

    def interrupt_line(self, number):
        """A device's interrupt line to exception `number`: line(asserted)."""
        return lambda asserted: self.exceptions.set_line(number, asserted)

    def stop_with(self, what, pc=None):
        """Stop the run with a one-line reason (from a hook or a device model)."""
        pc = self.pc & ~1 if pc is None else pc
        self._stop = Stop(what, pc, self.function_at(pc))
        self.uc.emu_stop()

    def run(self, until=lambda: False, max_cycles=None):
        """Execute until `until()` holds (checked between slices) or `max_cycles` have passed
        (then False); raises Stop when the code cannot go on."""
        end = None if max_cycles is None else self.clock.now() + max_cycles
        while not until():
            if end is not None and self.clock.now() >= end:
                return False
            self.clock.run_due()
            self.on_slice()
            self._take_pending()
            if self.sleeping:
                self._sleep()
                continue
            self._run_slice(end)
            self._check_not_hung()
        return True

    # -- the loop's parts ------------------------------------------------------------------------
    def _take_pending(self):
        number = self.exceptions.deliverable()
        if number is not None:
            if number != SYSTICK:
                self._timer_sleep = None
            self.sleeping = None
            self.event_register = True
            self.exceptions.enter(number)

    def _sleep(self):
        if self.exceptions.wakes():
            self.sleeping = None
            return
        if self.sleeping == "WFE" and self.event_register:
            self.event_register, self.sleeping = False, None
            return
        if self.clock.sleep_until_next_event():
            self._check_sleep_is_not_hopeless()
        elif self.awaited() is None:
            self.wait_outside()
        else:
            raise Stop(f"{self.sleeping} with no interrupt pending and no timed event: the core would sleep "
                       "forever", self.sleep_pc, self.function_at(self.sleep_pc))

    def _check_sleep_is_not_hopeless(self):
        """A WFE/WFI that timers alone keep waking, at the same place, for HOPELESS_SLEEP_CYCLES,
        waits for an interrupt nothing will raise (say the NPU's, with no NPU model)."""
        since = self._timer_sleep
        if since is None or since[0] != self.sleep_pc:
            self._timer_sleep = (self.sleep_pc, self.clock.now())
            return
        if self.clock.now() - since[1] < HOPELESS_SLEEP_CYCLES:
            return
        reason = self.awaited()
        if reason:
            raise Stop(f"{self.sleeping} woken only by timers for {HOPELESS_SLEEP_CYCLES:,} cycles: {reason}",
                       self.sleep_pc, self.function_at(self.sleep_pc))

    def _run_slice(self, end):
        slice_end = self.clock.now() + SLICE_CYCLES
        handle = self.clock.at(slice_end if end is None else min(slice_end, end), lambda: None)
        try:
            self.uc.emu_start(self.pc | 1, NEVER)
        except UcError as e:
            if self._stop is None:
                self._stop = Stop(str(e), self.pc & ~1, self.function_at(self.pc & ~1))
        finally:
            self.clock.cancel(handle)
        if self._stop is not None:
            stop, self._stop = self._stop, None
            raise stop
        if self.clock.due_stop or self.sleeping:
            return
        wfi = self._halted_by_wfi()
        if wfi:
            self.sleeping, self.sleep_pc = "WFI", wfi
            return
        pc = self.pc & ~1
        raise Stop("emulation stopped for no known reason", pc, self.function_at(pc))

    def _check_not_hung(self):
        """A branch to itself outside any handler never ends (only an exception could leave it,
        and its return comes back to it): the firmware has stopped in an error handler."""
        pc = self.pc & ~1
        try:
            here = struct.unpack("<H", bytes(self.uc.mem_read(pc, 2)))[0]
        except UcError:
            return
        if here == BRANCH_TO_SELF and not self.exceptions.active:
            raise Stop("the firmware loops forever (an error handler's `b .`)", pc, self.function_at(pc))

    def _halted_by_wfi(self):
        """The address of the WFI unicorn halted after, or None."""
        pc = self.pc & ~1
        try:
            before = struct.unpack("<HH", bytes(self.uc.mem_read(pc - 4, 4)))
        except UcError:
            return None
        return pc - 2 if before[1] == WFI else pc - 4 if before == WFI_W else None

    # -- hooks -----------------------------------------------------------------------------------
    def _on_invalid(self, uc, _):
        return self._complete(uc)

    def _complete(self, uc):
        pc = uc.reg_read(UC_ARM_REG_PC) & ~1
        try:
            hw1, hw2 = struct.unpack("<HH", bytes(uc.mem_read(pc, 4)))
        except UcError:
            return False
        try:
            if self.helium.step(pc, hw1, hw2):
                return True
        except mve.BusFault as e:
            self.stop_with(f"bus fault: {e}", pc)
            return True
        wfe = self._completed_wfe(pc)
        if wfe is not None:
            if self.event_register:
                self.event_register = False
            else:
                self.sleeping, self.sleep_pc = "WFE", wfe
                uc.emu_stop()
            return True
        if vfp_double.step(uc, pc, hw1, hw2):
            return True
        if mve.is_helium(hw1, hw2):
            self.stop_with(f"Helium (MVE) instruction {hw1:04x} {hw2:04x}: not emulated by the twin", pc)
        else:
            self.stop_with(f"undefined instruction {hw1:04x} {hw2:04x}", pc)
        return True          # handled: the stop ends the run with its line

    def _completed_wfe(self, pc):
        """unicorn reports a WFE it executed (a yield) as an invalid instruction at the next one:
        then the block that started last ends at `pc` with a WFE, whose address this returns.
        (An undefined instruction is reported at its own address, at the start of its block.)"""
        start, size = self.clock.counter.last_block()
        if start + size != pc or start == pc:
            return None
        before = struct.unpack("<HH", bytes(self.uc.mem_read(pc - 4, 4)))
        return pc - 2 if before[1] == WFE else pc - 4 if before == WFE_W else None

    def _on_interrupt(self, uc, number, _):
        pc = uc.reg_read(UC_ARM_REG_PC) & ~1
        if number == mve.EXCP_NOCP and mve.is_helium(*struct.unpack("<HH", bytes(uc.mem_read(pc, 4)))):
            self._complete(uc)             # vector loads, stores, VPST, VCMP: the coprocessor space
        elif number == EXCP_EXCEPTION_EXIT and self.exceptions.active:
            self.exceptions.leave()
            self.event_register = True
            self._take_pending()           # tail-chaining
        elif number == EXCP_SWI:
            self.exceptions.enter(SVCALL, return_address=pc)
        elif number == EXCP_EXCEPTION_EXIT:
            self.stop_with("exception return with no active exception", pc)
        elif number == EXCP_BKPT:
            self.stop_with("breakpoint (BKPT): the firmware stopped itself (an assert, or semihosting)", pc)
        else:
            self.stop_with(QEMU_EXCEPTIONS.get(number, f"CPU exception {number}"), pc)

    def _on_bad_access(self, uc, access, address, size, value, _):
        kind = {UC_MEM_WRITE_UNMAPPED: "write to", UC_MEM_FETCH_UNMAPPED: "fetch from"}.get(access, "read of")
        self.stop_with(f"bus fault: {kind} unmapped address 0x{address:08X}")
        return False

