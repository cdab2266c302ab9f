"""The STM32N6570-DK twin put together: the core, the memories (NOR flash from the simulated
board's state), the bus with its device models, and ST's validation firmware loaded as gdb loads
it (segments, then PC = Reset_Handler; SP from the vector table as a reset would set it)."""
from .bus import Bus
from .core import Core
from .exceptions import IRQ0
from .firmware_elf import FirmwareElf
from .memory_map import MemoryMap, load_nor_flash
from .aton_header import read_aton_header
from .peripherals.bsec import Bsec
from .peripherals.npu import NpuRegisters
from .peripherals.cycle_counters import DwtCycleCounter, PmuCycleCounter
from .peripherals.rcc import Rcc
from .peripherals.system_control import SystemControlSpace
from .peripherals.usart import USART1_IRQ, Usart
from .peripherals.xspi import dk_xspi_controllers


class DkTwin:
    def __init__(self, firmware_path, link, aton_header, state_dir=None):
        self.firmware = FirmwareElf.read(firmware_path)
        self.core = core = Core(self.firmware.function_at)
        self.memory = MemoryMap(core.uc)
        self.flash_sectors = load_nor_flash(self.memory, state_dir) if state_dir else 0
        self.bus = Bus(core.uc)
        self.scs = self.bus.attach(SystemControlSpace(core.clock, core.exceptions, self.firmware.vector_table))
        self.bus.attach(PmuCycleCounter(core.clock))
        self.bus.attach(DwtCycleCounter(core.clock))
        self.rcc = self.bus.attach(Rcc())
        self.bus.attach(Bsec())
        self.usart = self.bus.attach(Usart(link, core.interrupt_line(IRQ0 + USART1_IRQ)))
        core.on_slice = self.usart.poll_host
        self.bus.attach(NpuRegisters(read_aton_header(aton_header)))
        for controller in dk_xspi_controllers():
            self.bus.attach(controller)
        for addr, data in self.firmware.segments:
            self.memory.load(addr, data)
        core.reset(self.firmware.initial_sp, self.firmware.entry)
