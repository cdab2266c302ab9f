"""The Neural-ART NPU's registers (ATON_BASE: 0x480E_0000 non-secure, 0x580E_0000 secure),
without the NPU: every register starts at the reset value the install's ATON.h documents (the
runtime checks the units' VERSION registers at init), and each unit's CTRL behaves as far as
starting and stopping a unit needs: its clear bits (CLR, CONFCLR) self-clear and its RUNNING bit
reads 0 (nothing ever runs). A hardware epoch therefore never ends: the firmware waits for the
NPU interrupt that no model raises (the twin stops at that WFE with one line)."""
from .device import Device

NPU_BASE = 0x480E_0000
SELF_CLEARING = ("CLR", "CONFCLR", "RUNNING")


class NpuRegisters(Device):
    name = "NPU"
    size = 0x2_0000

    def __init__(self, aton_map, base=NPU_BASE):
        super().__init__(base)
        self.regs = aton_map.reset_values()
        self.ctrl_masks = {}                  # CTRL register offset → bits that never read back
        for unit in aton_map.units.values():
            if "CTRL" not in unit.registers:
                continue
            mask = aton_map.field_bits(unit.name, "CTRL", SELF_CLEARING)
            for base in unit.bases:
                self.ctrl_masks[base + unit.registers["CTRL"][0]] = mask

    def write(self, offset, value):
        super().write(offset, value & ~self.ctrl_masks.get(offset, 0))
