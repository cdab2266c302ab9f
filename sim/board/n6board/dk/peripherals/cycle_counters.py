"""The core's cycle counters on the twin's clock: the Armv8.1-M PMU cycle counter (PMU_CCNTR at
0xE000_307C; it counts while PMU_CTRL.E (bit 0, at 0xE04) and PMU_CNTENSET bit 31 (0xC00) are
set; PMU_CTRL.C (bit 2) resets it), which the firmware's timing uses, and the DWT's CYCCNT
(0xE000_1004, counting while DWT_CTRL.CYCCNTENA, bit 0). Both read the cycles the clock counted
while they were enabled."""
from .device import Device


class RunningCounter:
    """A 32-bit counter of clock cycles that can be started, stopped, written and reset."""

    def __init__(self, clock):
        self.clock, self.base_value, self.since = clock, 0, None

    def value(self):
        running = self.clock.now() - self.since if self.since is not None else 0
        return (self.base_value + running) & 0xFFFFFFFF

    def set(self, value):
        self.base_value = value
        if self.since is not None:
            self.since = self.clock.now()

    def run(self, on):
        if on and self.since is None:
            self.since = self.clock.now()
        elif not on and self.since is not None:
            self.base_value, self.since = self.value(), None


class PmuCycleCounter(Device):
    name = "PMU"
    size = 0x1000
    CCNTR, CNTENSET, CNTENCLR, CTRL = 0x07C, 0xC00, 0xC20, 0xE04
    CYCLE_COUNTER_BIT, ENABLE, CYCLE_RESET = 1 << 31, 1, 1 << 2

    def __init__(self, clock, base=0xE000_3000):
        super().__init__(base)
        self.counter = RunningCounter(clock)
        self.enabled_counters = 0

    def read(self, offset):
        if offset == self.CCNTR:
            return self.counter.value()
        if offset in (self.CNTENSET, self.CNTENCLR):
            return self.enabled_counters
        return super().read(offset)

    def write(self, offset, value):
        if offset == self.CCNTR:
            self.counter.set(value)
        elif offset == self.CNTENSET:
            self.enabled_counters |= value
        elif offset == self.CNTENCLR:
            self.enabled_counters &= ~value
        else:
            super().write(offset, value & ~self.CYCLE_RESET if offset == self.CTRL else value)
            if offset == self.CTRL and value & self.CYCLE_RESET:
                self.counter.set(0)
        self.counter.run(bool(self.stored(self.CTRL) & self.ENABLE and self.enabled_counters & self.CYCLE_COUNTER_BIT))


class DwtCycleCounter(Device):
    name = "DWT"
    size = 0x1000
    CTRL, CYCCNT, CYCCNTENA = 0x000, 0x004, 1

    def __init__(self, clock, base=0xE000_1000):
        super().__init__(base)
        self.counter = RunningCounter(clock)

    def read(self, offset):
        return self.counter.value() if offset == self.CYCCNT else super().read(offset)

    def write(self, offset, value):
        if offset == self.CYCCNT:
            self.counter.set(value)
            return
        super().write(offset, value)
        if offset == self.CTRL:
            self.counter.run(bool(value & self.CYCCNTENA))
