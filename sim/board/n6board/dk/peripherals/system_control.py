"""The System Control Space (0xE000_E000) of the Armv8-M core: SysTick, the NVIC and the System
Control Block, in front of the twin's exception unit. Register facts (Armv8-M ARM):
  SysTick CSR 0x010 (ENABLE 0, TICKINT 1, CLKSOURCE 2, COUNTFLAG 16), RVR 0x014, CVR 0x018; it
    counts processor cycles and pends exception 15 at each wrap when TICKINT is set;
  NVIC ISER 0x100, ICER 0x180, ISPR 0x200, ICPR 0x280, IABR 0x300 (32 IRQs a word), IPR 0x400
    (a byte per IRQ), STIR 0xF00;
  SCB CPUID 0xD00 (Cortex-M55 r1p0: 0x411FD220, which ST's loader compares with the image
    header), ICSR 0xD04 (VECTACTIVE, VECTPENDING, PENDSTSET 26, PENDSTCLR 25, PENDSVSET 28,
    PENDSVCLR 27), VTOR 0xD08, AIRCR 0xD0C (PRIGROUP 10:8, VECTKEY 0x05FA written, 0xFA05 read),
    SHPR1-3 0xD18-0xD23 (a byte per system exception 4-15), FPCCR 0xF34, FPCAR 0xF38, FPDSCR 0xF3C
    (the exception unit's FP context state).
Every other register (SAU, MPU, FPU control, cache maintenance) reads back what was written:
the twin's caches are transparent, but for the D-cache invalidations by address, passed on to
`dcache_invalidate(offset, value)` (the NOR window's lines, nor_window.py)."""
from ..exceptions import IRQ0, PENDSV, SYSTICK
from ..nor_window import INVALIDATIONS
from .device import Device

CPUID_CORTEX_M55 = 0x411FD220
ENABLE, TICKINT, COUNTFLAG = 1, 2, 1 << 16
PENDSVSET, PENDSVCLR, PENDSTSET, PENDSTCLR = 1 << 28, 1 << 27, 1 << 26, 1 << 25
FP_CONTEXT = {0xF34: "fpccr", 0xF38: "fpcar", 0xF3C: "fpdscr"}       # offset → ExceptionUnit attribute


class SysTick:
    """The 24-bit SysTick down-counter on the twin's cycle clock."""

    def __init__(self, clock, exceptions):
        self.clock, self.exceptions = clock, exceptions
        self.csr, self.rvr, self.countflag = 0, 0, False
        self.origin = 0             # cycle at which the counter last held RVR
        self._next = None

    def read(self, offset):
        if offset == 0x010:
            value = self.csr | (COUNTFLAG if self.countflag else 0)
            self.countflag = False
            return value
        if offset == 0x014:
            return self.rvr
        if offset == 0x018:
            return self.current()
        return 0

    def write(self, offset, value):
        if offset == 0x010:
            was = self.csr & ENABLE
            self.csr = value & 7
            if self.csr & ENABLE and not was:
                self.origin = self.clock.now()
        elif offset == 0x014:
            self.rvr = value & 0xFFFFFF
        elif offset == 0x018:                   # any write clears the counter and COUNTFLAG
            self.origin = self.clock.now()
            self.countflag = False
        self._schedule()

    @property
    def period(self):
        return self.rvr + 1

    def current(self):
        if not self.csr & ENABLE or not self.rvr:
            return 0
        return self.rvr - (self.clock.now() - self.origin) % self.period

    def _schedule(self):
        if self._next is not None:
            self.clock.cancel(self._next)
            self._next = None
        if self.csr & ENABLE and self.rvr:
            elapsed = (self.clock.now() - self.origin) % self.period
            self._next = self.clock.at(self.clock.now() + self.period - elapsed, self._wrap)

    def _wrap(self):
        self.countflag = True
        if self.csr & TICKINT:
            self.exceptions.pend(SYSTICK)
        self._next = self.clock.at(self.clock.now() + self.period, self._wrap)


class Nvic:
    """Enable, pending and priority state of the external interrupts (IRQ n = exception 16 + n)."""

    def __init__(self, exceptions):
        self.exceptions = exceptions

    def read(self, offset):
        group = offset >> 7 & 7                 # 2 ISER, 3 ICER, 4 ISPR, 5 ICPR, 6 IABR
        if 0x100 <= offset < 0x380:
            first = IRQ0 + 32 * (offset >> 2 & 0x1F)
            present = {2: self.exceptions.enabled, 3: self.exceptions.enabled, 4: self.exceptions.pending,
                       5: self.exceptions.pending,
                       6: {a.number for a in self.exceptions.active}}[group]
            return sum(1 << i for i in range(32) if first + i in present)
        if 0x400 <= offset < 0x5F0:
            return sum(self.exceptions.priority.get(IRQ0 + offset - 0x400 + i, 0) << 8 * i for i in range(4))
        return None

    def write(self, offset, value):
        if 0x100 <= offset < 0x300:
            first = IRQ0 + 32 * (offset >> 2 & 0x1F)
            numbers = {first + i for i in range(32) if value >> i & 1}
            group = offset >> 7 & 7
            if group == 2:
                self.exceptions.enabled |= numbers
            elif group == 3:
                self.exceptions.enabled -= numbers
            elif group == 4:
                self.exceptions.pending |= numbers
            else:
                self.exceptions.pending -= numbers
            return True
        if 0x400 <= offset < 0x5F0:
            for i in range(4):
                self.exceptions.set_priority(IRQ0 + offset - 0x400 + i, value >> 8 * i & 0xFF)
            return True
        if offset == 0xF00:                     # STIR
            self.exceptions.pend(IRQ0 + (value & 0x1FF))
            return True
        return False


class Scb:
    """CPUID, ICSR, VTOR, AIRCR and the system handler priorities."""

    def __init__(self, exceptions, vtor):
        self.exceptions, self.vtor = exceptions, vtor

    def read(self, offset):
        ex = self.exceptions
        if offset == 0xD00:
            return CPUID_CORTEX_M55
        if offset == 0xD04:
            active = ex.active[-1].number if ex.active else 0
            pending = min(ex.pending, default=0)
            return active | (pending & 0x1FF) << 12 | (PENDSVSET if PENDSV in ex.pending else 0) | \
                (PENDSTSET if SYSTICK in ex.pending else 0)
        if offset == 0xD08:
            return self.vtor
        if offset == 0xD0C:
            return 0xFA05 << 16 | ex.prigroup << 8
        if 0xD18 <= offset < 0xD24:
            first = 4 + offset - 0xD18
            return sum(ex.priority.get(first + i, 0) << 8 * i for i in range(4))
        if offset in FP_CONTEXT:
            return getattr(ex, FP_CONTEXT[offset])
        return None

    def write(self, offset, value):
        ex = self.exceptions
        if offset == 0xD04:
            for setbit, clearbit, number in ((PENDSVSET, PENDSVCLR, PENDSV), (PENDSTSET, PENDSTCLR, SYSTICK)):
                if value & setbit:
                    ex.pend(number)
                if value & clearbit:
                    ex.pending.discard(number)
            return True
        if offset == 0xD08:
            self.vtor = value & ~0x7F
            return True
        if offset == 0xD0C:
            if value >> 16 == 0x05FA:
                ex.prigroup = value >> 8 & 7
            return True
        if 0xD18 <= offset < 0xD24:
            for i in range(4):
                ex.set_priority(4 + offset - 0xD18 + i, value >> 8 * i & 0xFF)
            return True
        if offset in FP_CONTEXT:
            setattr(ex, FP_CONTEXT[offset], value & ~7 if offset == 0xF38 else value)
            return True
        return False


class SystemControlSpace(Device):
    """The SCS page: the three models above, a register file for the rest."""
    name = "SCS"
    size = 0x1000

    def __init__(self, clock, exceptions, vtor, base=0xE000_E000):
        super().__init__(base)
        self.systick = SysTick(clock, exceptions)
        self.nvic = Nvic(exceptions)
        self.scb = Scb(exceptions, vtor)
        self.dcache_invalidate = lambda offset, value: None
        exceptions.vtor = lambda: self.scb.vtor

    def read(self, offset):
        if 0x010 <= offset < 0x020:
            return self.systick.read(offset)
        for model in (self.nvic, self.scb):
            value = model.read(offset)
            if value is not None:
                return value
        return super().read(offset)

    def write(self, offset, value):
        if 0x010 <= offset < 0x020:
            self.systick.write(offset, value)
        elif not (self.nvic.write(offset, value) or self.scb.write(offset, value)):
            super().write(offset, value)
            if offset in INVALIDATIONS:
                self.dcache_invalidate(offset, value)
