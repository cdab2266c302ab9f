"""The simulated board's CPU: unicorn's Cortex-M33 model with the FPU executing the installed
image's own Thumb-2 code, on a memory map laid out like the board's.

* Helium (MVE) and the Armv8.1-M low-overhead loops (DLS, WLS, LE and the tail-predicated
  DLSTP, WLSTP, LETP), which GCC emits for -mcpu=cortex-m55 and unicorn does not know, are
  executed from the invalid-instruction hook (dk.mve, shared with the DK twin); a vector
  encoding it does not carry out stops the run (NotEmulated).
* Double-precision VFP (the Cortex-M55's FPv5; unicorn's M33 has single precision only), which
  ST's runtime library uses in software epochs, is carried out there too (dk.vfp_double, shared
  with the DK twin).
* The firmware's callback table lives in the firmware's RAM: each entry points at a `bx lr` stub
  whose execution is served in Python (the firmware side of the image's calls).
* Cycle model (stated, not measured): one cycle per executed instruction (CPI 1). Instructions
  are counted on every call, exactly: a native block hook (blockcount) counts executions per
  translated block, times the block's instruction count (Thumb-2 16/32-bit decoding of its bytes,
  once per block).
* Memory counting is optional (a native hook per region, see blockcount): reads and writes per
  memory region in accesses and bytes.
* The NPU's register block is served by the NPU model (sim/npu) when the board has one; without
  it, any access there means the code programs the NPU: not executable here."""
import struct
from dataclasses import dataclass, field

from npu_model.npu import Npu
from npu_model.registers import ATON_BASE
from unicorn import (UC_ARCH_ARM, UC_HOOK_CODE, UC_HOOK_INSN_INVALID, UC_HOOK_INTR, UC_HOOK_MEM_INVALID,
                     UC_MEM_FETCH_UNMAPPED, UC_MEM_WRITE_UNMAPPED, UC_MODE_MCLASS, UC_MODE_THUMB, Uc, UcError)
from unicorn.arm_const import (UC_ARM_REG_LR, UC_ARM_REG_PC, UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2,
                               UC_ARM_REG_R3, UC_ARM_REG_R9, UC_ARM_REG_SP, UC_CPU_ARM_CORTEX_M33)

from .blockcount import AccessCounter, BlockCounter
from .dk import long_shift, mve, vfp_double
from .dk.bus import SECURE_OFFSET, lane, merge_lanes

PAGE = 0x1000
NPU_REGS = tuple((base, Npu.size) for base in (ATON_BASE, ATON_BASE + SECURE_OFFSET))   # both aliases
SCB_PAGE, CPUID, CPACR = 0xE000E000, 0xE000ED00, 0xE000ED88
CPUID_M55 = 0x411FD220


class Fault(Exception):
    """The emulated code stopped abnormally: a bus fault, an undefined instruction, an assert."""

    def __init__(self, what, pc, addr=None):
        self.what, self.pc, self.addr = what, pc, addr
        at = f" accessing 0x{addr:08X}" if addr is not None else ""
        super().__init__(f"{what} at pc 0x{pc:08X}{at}")


class NpuAccess(Fault):
    """The code touched the NPU registers (a hardware epoch)."""


class NpuStopped(Fault):
    """The NPU model stopped the run: a unit it does not model (one line naming epoch and unit)."""

    def __init__(self, what, pc):
        super().__init__(what, pc)
        self.args = (what,)

    def __str__(self):
        return self.what


class NotEmulated(Fault):
    """The code is right but the emulated CPU lacks what it uses (Helium: ST's runtime library's kernels)."""


@dataclass
class Region:
    name: str
    base: int
    size: int


@dataclass
class Counters:
    instructions: int = 0
    reads: dict = field(default_factory=dict)      # region → [accesses, bytes]
    writes: dict = field(default_factory=dict)
    callbacks: dict = field(default_factory=dict)  # firmware service → calls

    @property
    def cycles(self):
        return self.instructions     # the stated model: CPI 1

    def as_dict(self):
        return {"instructions": self.instructions, "cycles": self.cycles,
                "reads": {k: {"accesses": a, "bytes": b} for k, (a, b) in sorted(self.reads.items())},
                "writes": {k: {"accesses": a, "bytes": b} for k, (a, b) in sorted(self.writes.items())},
                "callbacks": dict(sorted(self.callbacks.items()))}


def thumb_instructions(code):
    """Number of Thumb-2 instructions in `code` (first halfword 0b11101/11110/11111 → 32-bit)."""
    n = i = 0
    while i + 1 < len(code):
        i += 4 if code[i + 1] >> 3 in (0x1D, 0x1E, 0x1F) else 2
        n += 1
    return n


def _align(base, size):
    lo = base & ~(PAGE - 1)
    return lo, (base + size - lo + PAGE - 1) & ~(PAGE - 1)


class Cpu:
    """One emulated core with `regions` mapped; `services[i]` serves callback-table entry i."""

    def __init__(self, regions, firmware_base, services, count=False, npu=None):
        self.uc = uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
        uc.ctl_set_cpu_model(UC_CPU_ARM_CORTEX_M33)
        self.regions = sorted((r for r in regions if r.size), key=lambda r: r.base)   # a board without PSRAM: size 0
        for r in self.regions:
            uc.mem_map(*_align(r.base, r.size))
        uc.mem_map(SCB_PAGE, PAGE)
        uc.mem_write(CPUID, struct.pack("<I", CPUID_M55))
        uc.mem_write(CPACR, struct.pack("<I", 0xF << 20))
        self.services = services
        # firmware layout: return trap, callback table, one `bx lr` stub per entry, stack on top
        self.ret = firmware_base + 0x100
        self.table = firmware_base + 0x200
        self.stubs = firmware_base + 0x400
        self.stack_top = firmware_base + 0x5FF00
        uc.mem_write(self.ret, b"\xfe\xe7")                               # b .
        for i in range(len(services)):
            uc.mem_write(self.stubs + 4 * i, b"\x70\x47\x00\xbf")         # bx lr; nop
            uc.mem_write(self.table + 4 * i, struct.pack("<I", (self.stubs + 4 * i) | 1))
        self.counters = Counters()
        self.npu = npu
        if npu is not None:
            npu.stop = self._stop_for_npu
            for base, size in NPU_REGS:
                uc.mmio_map(base, size, lambda uc, off, size, _: lane(npu.read(off & ~3), off, size), None,
                            self._npu_write, None)
        self.helium = mve.Helium(uc)
        self._block_sizes = {}
        self._blocks = BlockCounter(uc)
        self._bad_access = None
        self._stop_reason = None
        uc.hook_add(UC_HOOK_INSN_INVALID, self._on_invalid)
        uc.hook_add(UC_HOOK_INTR, self._on_interrupt)
        uc.hook_add(UC_HOOK_MEM_INVALID, self._on_bad_access)
        if services:
            uc.hook_add(UC_HOOK_CODE, self._on_service, begin=self.stubs, end=self.stubs + 4 * len(services) - 1)
        self._counting, self._counting_mode, self._slowdown = [], (False, False), 1
        self.set_counting(count)

    def set_counting(self, instructions, memory=False):
        """Count memory accesses per region (a native hook per region: ~3x slower) or not.
        Instructions are always counted (natively: `instructions` is kept for callers)."""
        if (instructions, memory) == self._counting_mode:
            return
        self._counting_mode = (instructions, memory)
        self._slowdown = 5 if memory else 2 if instructions else 1    # scales the hang limit of call()
        for _, counter in self._counting:
            counter.detach()
        self._counting = [(r.name, AccessCounter(self.uc, r.base, r.base + r.size - 1)) for r in self.regions] \
            if memory else []
        self.uc.ctl_flush_tb()      # hooks are compiled into translated blocks: retranslate

    # -- memory ---------------------------------------------------------------------------------
    def read(self, addr, n):
        return bytes(self.uc.mem_read(addr, n))

    def write(self, addr, data):
        self.uc.mem_write(addr, bytes(data))

    def emulate_long_shifts(self, base, size):
        """Hook the scalar 64-bit shifts of the code loaded at base..base+size (dk/long_shift.py:
        unicorn runs them silently wrong); returns how many."""
        return long_shift.hook(self.uc, base, self.read(base, size), self._stop_not_emulated)

    def _stop_not_emulated(self, what, pc):
        if self._stop_reason is None:
            self._stop_reason = NotEmulated(what, pc)
        self.uc.emu_stop()

    def u32(self, addr):
        return struct.unpack("<I", self.read(addr, 4))[0]

    def c_string(self, addr, limit=256):
        if not addr:
            return ""
        try:
            raw = self.read(addr, limit)
        except UcError:
            return f"<0x{addr:08X}>"
        return raw.split(b"\0", 1)[0].decode("latin-1")

    # -- calls ----------------------------------------------------------------------------------
    def call(self, fn, *args, r9=0, timeout_s=120):
        """Call the Thumb function at `fn` with up to four integer arguments and r9 set (the
        firmware's trampoline); returns r0. `timeout_s` is for full speed: counting stretches it."""
        uc = self.uc
        timeout_s *= self._slowdown
        for reg, value in zip((UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3), args):
            uc.reg_write(reg, value & 0xFFFFFFFF)
        uc.reg_write(UC_ARM_REG_R9, r9)
        uc.reg_write(UC_ARM_REG_SP, self.stack_top)
        uc.reg_write(UC_ARM_REG_LR, self.ret | 1)
        self._bad_access = self._stop_reason = None
        self._blocks.take()
        for _, counter in self._counting:
            counter.take()
        try:
            uc.emu_start(fn | 1, self.ret, timeout=int(timeout_s * 1e6))
        except UcError as e:
            self._raise_stop()
            raise Fault(f"{e}", uc.reg_read(UC_ARM_REG_PC)) from None
        finally:
            self._count_blocks()
            self._count_accesses()
        self._raise_stop()      # a hook stopped the run (a vector access ends it without an UcError)
        pc = uc.reg_read(UC_ARM_REG_PC)
        if pc & ~1 != self.ret:
            raise Fault(f"execution did not return within {timeout_s} s", pc)
        return uc.reg_read(UC_ARM_REG_R0)

    def _raise_stop(self):
        """Raise what a hook recorded: its reason, or the bad access (the NPU's registers: a
        hardware epoch)."""
        if self._stop_reason:
            raise self._stop_reason from None
        if self._bad_access:
            kind, addr = self._bad_access
            pc = self.uc.reg_read(UC_ARM_REG_PC)
            if any(b <= addr < b + n for b, n in NPU_REGS):
                raise NpuAccess("NPU register access (hardware epoch)", pc, addr) from None
            raise Fault(f"bus fault ({kind})", pc, addr) from None

    def _npu_write(self, uc, offset, size, value, _):
        word = offset & ~3
        if size < 4:
            value = merge_lanes(self.npu.stored(word), value, offset, size)
        self.npu.write(word, value & 0xFFFFFFFF)

    def _stop_for_npu(self, what):
        if self._stop_reason is None:
            self._stop_reason = NpuStopped(what, self.uc.reg_read(UC_ARM_REG_PC) & ~1)
        self.uc.emu_stop()

    # -- hooks ----------------------------------------------------------------------------------
    def _count_blocks(self):
        sizes, total = self._block_sizes, 0
        for block, runs in self._blocks.take().items():
            n = sizes.get(block)
            if n is None:
                n = sizes[block] = thumb_instructions(self.uc.mem_read(*block))
            total += n * runs
        self.counters.instructions += total

    def _count_accesses(self):
        for region, counter in self._counting:
            reads, rbytes, writes, wbytes = counter.take()
            for table, n, size in ((self.counters.reads, reads, rbytes), (self.counters.writes, writes, wbytes)):
                if n:
                    entry = table.setdefault(region, [0, 0])
                    entry[0] += n
                    entry[1] += size

    def _on_bad_access(self, uc, access, address, size, value, _):
        kinds = {UC_MEM_WRITE_UNMAPPED: "write to unmapped memory", UC_MEM_FETCH_UNMAPPED: "fetch from unmapped memory"}
        self._bad_access = (kinds.get(access, "read of unmapped memory"), address)
        return False

    def _on_service(self, uc, address, size, _):
        i = (address - self.stubs) // 4
        name, fn = self.services[i]
        self.counters.callbacks[name] = self.counters.callbacks.get(name, 0) + 1
        args = [uc.reg_read(r) for r in (UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3)]
        try:
            result = fn(self, *args)
        except Fault as e:
            if not e.pc:    # raised by a service: the fault is at the image's call site (an NPU stop stays one)
                pc = (uc.reg_read(UC_ARM_REG_LR) & ~1) - 4
                e = NpuStopped(e.what, pc) if isinstance(e, NpuStopped) else Fault(e.what, pc)
            self._stop_reason = e
            uc.emu_stop()
            return
        if result is not None:
            uc.reg_write(UC_ARM_REG_R0, result & 0xFFFFFFFF)

    def _on_invalid(self, uc, _):
        return self._complete(uc)

    def _on_interrupt(self, uc, number, _):
        """Vector loads, stores and VPST/VCMP sit in the coprocessor space: unicorn's M33 raises
        NOCP for them. Any other CPU exception stops the run as before."""
        if number == mve.EXCP_NOCP and self._complete(uc):
            return
        if self._stop_reason is None and self._bad_access is None:
            self._stop_reason = Fault("Unhandled CPU exception (UC_ERR_EXCEPTION)", uc.reg_read(UC_ARM_REG_PC) & ~1)
        uc.emu_stop()

    def _complete(self, uc):
        """Carry out the instruction unicorn could not (vector, loop, double precision): True, or
        False with the reason to stop recorded."""
        pc = uc.reg_read(UC_ARM_REG_PC) & ~1
        try:
            hw1, hw2 = struct.unpack("<HH", uc.mem_read(pc, 4))
        except UcError:
            return False
        try:
            done = self.helium.step(pc, hw1, hw2) or vfp_double.step(uc, pc, hw1, hw2)
        except mve.BusFault as e:
            self._bad_access = ("vector write to unmapped memory" if e.write else "vector read of unmapped memory",
                                e.address)
            return False
        if not done:
            self._stop_reason = NotEmulated(f"Helium (MVE) instruction {hw1:04x} {hw2:04x}", pc) \
                if mve.is_helium(hw1, hw2) else Fault(f"undefined instruction {hw1:04x} {hw2:04x}", pc)
            return False
        return True      # (the block hook already counted this instruction)
