"""The Neural-ART NPU's registers (ATON_BASE: 0x480E_0000 non-secure, 0x580E_0000 secure),
without the NPU: every register starts at the reset value the install's ATON.h documents (the
runtime checks the units' VERSION registers at init), and each unit's CTRL behaves as far as
starting and stopping a unit needs: its clear bits (CLR, CONFCLR) self-clear and its RUNNING bit
reads 0 (nothing ever runs). A hardware epoch therefore never ends: the firmware waits for the
NPU interrupt that no model raises (the twin stops at that WFE with one line).

The debug-and-trace unit's event counters count: one enabled (EVENT_<n>.EN) on the always-high
event (EVENT_TYPE 1, ST's DBGTRC_EVT_HI) counts the NPU's clock, NPU_HZ / CPU_HZ counts per CPU
cycle, from the value last written to EVENT_<n>_CNT: ST's validation firmware times each epoch
with one (its `npu_cycles`). Counters on any other event stay (no unit is ever active)."""
from .device import Device

NPU_BASE = 0x480E_0000
SELF_CLEARING = ("CLR", "CONFCLR", "RUNNING")
TRACE_UNIT, EVENT_ALWAYS_HIGH = "DEBUG_TRACE", 1


class NpuRegisters(Device):
    name = "NPU"
    size = 0x2_0000

    def __init__(self, aton_map, clock=None, npu_per_cpu=(1, 1), base=NPU_BASE):
        super().__init__(base)
        self.aton, self.clock, self.npu_per_cpu = aton_map, clock, npu_per_cpu
        self.regs = aton_map.reset_values()
        self.counters = {}                    # EVENT_<n> offset → (EVENT_<n>_CNT offset, register name)
        self.counting = {}                    # EVENT_<n>_CNT offset → CPU cycle its count refers to
        trace = aton_map.units.get(TRACE_UNIT)
        for name, (offset, _) in (trace.registers.items() if trace and clock else ()):
            if f"{name}_CNT" in trace.registers:
                self.counters[trace.bases[0] + offset] = (trace.bases[0] + trace.registers[f"{name}_CNT"][0], name)
        self.ctrl_masks = {}                  # CTRL register offset → bits that never read back
        for unit in aton_map.units.values():
            if "CTRL" not in unit.registers:
                continue
            mask = aton_map.field_bits(unit.name, "CTRL", SELF_CLEARING)
            for base in unit.bases:
                self.ctrl_masks[base + unit.registers["CTRL"][0]] = mask

    def read(self, offset):
        if offset in self.counting:
            return self._count(offset) & 0xFFFF_FFFF
        return super().read(offset)

    def write(self, offset, value):
        if offset in self.counters:
            cnt, name = self.counters[offset]
            if cnt in self.counting:
                self.regs[cnt] = self._count(cnt) & 0xFFFF_FFFF
                del self.counting[cnt]
            if self.aton.field_value(TRACE_UNIT, name, "EN", value) and \
                    self.aton.field_value(TRACE_UNIT, name, "EVENT_TYPE", value) == EVENT_ALWAYS_HIGH:
                self.counting[cnt] = self.clock.now()
        elif offset in self.counting:
            self.counting[offset] = self.clock.now()
        super().write(offset, value & ~self.ctrl_masks.get(offset, 0))

    def _count(self, cnt):
        npu, cpu = self.npu_per_cpu
        return self.regs.get(cnt, 0) + (self.clock.now() - self.counting[cnt]) * npu // cpu
