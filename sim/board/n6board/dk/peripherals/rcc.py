"""The reset and clock controller (RCC, 0x4602_8000) as far as the firmware's clock set-up waits
on it. Register facts (STM32N6):
  * every register at offset R also answers at R + 0x800 (a write sets the written bits) and at
    R + 0x1000 (a write clears them);
  * CR (0x000) resets to HSION (bit 3); its oscillator and PLL enables (LSI 0, LSE 1, MSI 2,
    HSI 3, HSE 4, PLL1..4 8..11) show up at once as the ready bits at the same positions of SR
    (0x004): oscillators and PLLs lock instantly;
  * CFGR1 (0x020): the CPU and system clock switch status fields (CPUSWS 21:20, SYSSWS 29:28)
    read back the requested switches (CPUSW 17:16, SYSSW 25:24).
Everything else (dividers, PLL and IC configuration, peripheral enables) reads back what was
written, which is all the HAL's frequency computations need."""
from .device import Device

CR, SR, CFGR1 = 0x000, 0x004, 0x020
SET_ALIAS, CLEAR_ALIAS = 0x800, 0x1000
HSION = 1 << 3
READY_BITS = 0x1F | 0xF << 8
CPUSW, CPUSWS, SYSSW, SYSSWS = 16, 20, 24, 28


class Rcc(Device):
    name = "RCC"
    size = 0x1800
    RESET = {CR: HSION}

    def __init__(self, base=0x4602_8000):
        super().__init__(base)

    def read(self, offset):
        offset = self._register(offset)
        if offset == SR:
            return self.stored(CR) & READY_BITS
        if offset == CFGR1:
            value = self.stored(CFGR1) & ~(3 << CPUSWS | 3 << SYSSWS)
            return value | (value >> CPUSW & 3) << CPUSWS | (value >> SYSSW & 3) << SYSSWS
        return super().read(offset)

    def write(self, offset, value):
        if offset >= CLEAR_ALIAS:
            offset -= CLEAR_ALIAS
            value = self.stored(offset) & ~value
        elif offset >= SET_ALIAS:
            offset -= SET_ALIAS
            value = self.stored(offset) | value
        super().write(offset, value)

    @staticmethod
    def _register(offset):
        return offset - CLEAR_ALIAS if offset >= CLEAR_ALIAS else offset - SET_ALIAS if offset >= SET_ALIAS else offset
