"""The STM32N6570-DK twin put together: the core, the memories (NOR flash from the simulated
board's state), the bus with its device models, and ST's validation firmware loaded as gdb loads
it (segments, then PC = Reset_Handler; SP from the vector table as a reset would set it)."""
import functools
import sys

from unicorn import UC_HOOK_CODE, UcError
from unicorn.arm_const import UC_ARM_REG_LR, UC_ARM_REG_PC, UC_ARM_REG_R0

from n6.nn_interface import EPOCH_BLOCK, NN_INSTANCE
from npu_model.npu import NPU_HZ, Npu

from .bus import Bus
from . import long_shift
from .core import Core, Stop
from .exceptions import IRQ0, exception_name
from .firmware_elf import FirmwareElf
from .memory_map import NOR_BASE, NOR_SIZE, MemoryMap, NorContent, load_nor_flash
from .nor_window import NorWindow
from .peripherals.bsec import Bsec
from .peripherals.cycle_counters import DwtCycleCounter, PmuCycleCounter
from .peripherals.rcc import Rcc
from .peripherals.system_control import SystemControlSpace
from .peripherals.usart import USART1_IRQ, Usart
from .peripherals.usb import dk_usb_controllers
from .peripherals.xspi import dk_xspi_controllers


NPU_IRQS = range(53, 57)          # NPU0..3 (the NPU's end-of-epoch and error interrupts)
READY = b"Protocol version"       # the last line of the firmware's banner, before its protocol loop
RECEIVE = ("HAL_UART_Receive",     # ST's HAL: polls USART1's ISR until each byte it asks for arrives,
           "UART_WaitOnFlagUntilTimeout")   # in this helper when the compiler did not inline it
CPU_HZ = 800_000_000               # the DK's CPU clock, when the firmware does not say (SystemCoreClock)
BOOT_CYCLES = 10 * CPU_HZ


@functools.cache
def _say_no_receive(path):
    """Once per ELF (a reset boots a new twin): its host waits are found by idle polls alone."""
    print(f"n6board: warning: {path}: no {' or '.join(RECEIVE)} function: the twin takes the host's bytes "
          "where the firmware's idle polls end a slice, not where it asks for them", file=sys.stderr, flush=True)


class DkTwin:
    """One board: `link` is the host's end of USART1, `state_dir` the simulated board whose flash
    the NOR holds, `npu_model` the NPU model's mode (npu_model.npu.MODES)."""

    def __init__(self, firmware_path, link, state_dir=None, npu_model="stop"):
        self.firmware = FirmwareElf.read(firmware_path)
        self.core = core = Core(self.firmware.function_at)
        self.memory = MemoryMap(core.uc)
        self.flash = load_nor_flash(self.memory, state_dir) if state_dir else NorContent({}, NOR_SIZE)
        self.bus = Bus(core.uc)
        self.scs = self.bus.attach(SystemControlSpace(core.clock, core.exceptions, self.firmware.vector_table))
        self.scs.dcache_invalidate = NorWindow(core.uc, self.flash.read, NOR_BASE, NOR_SIZE).invalidate
        self.bus.attach(PmuCycleCounter(core.clock))
        self.bus.attach(DwtCycleCounter(core.clock))
        self.rcc = self.bus.attach(Rcc())
        self.bus.attach(Bsec())
        self.receive = receive = self.firmware.spans_of(*RECEIVE)
        self.usart = self.bus.attach(Usart(link, core.interrupt_line(IRQ0 + USART1_IRQ), core.request_stop,
                                           lambda: any(lo <= core.pc < hi for lo, hi in receive)))
        core.on_slice = self.usart.poll_host
        core.awaited = self.awaited_interrupt
        core.wait_outside = self.usart.wait_for_host
        self.npu = self.bus.attach(Npu(self.memory.load, npu_model))
        self.npu.lines = [core.interrupt_line(IRQ0 + n) for n in NPU_IRQS]
        self.npu.schedule = lambda cycles, done: core.clock.at(core.clock.now() + cycles * self.cpu_hz() // NPU_HZ,
                                                               done)
        self.npu.stop = core.stop_with
        self.npu.read_memory = lambda address, n: bytes(core.uc.mem_read(address, n))
        self.npu.epoch_label = self.current_epoch
        self.npu.npu_now = lambda: core.clock.now() * NPU_HZ // self.cpu_hz()
        for controller in dk_xspi_controllers() + dk_usb_controllers(core.stop_with):
            self.bus.attach(controller)
        for addr, data in self.firmware.segments:
            self.memory.load(addr, data)
        self._emulate_long_shifts()
        self.nn_instance = None
        self._last_block = None
        run_epoch_block = self.firmware.address_of("LL_ATON_RT_RunEpochBlock")
        if run_epoch_block is not None:
            core.uc.hook_add(UC_HOOK_CODE, self._on_run_epoch_block, begin=run_epoch_block, end=run_epoch_block)
        self._model_hal_delay()
        core.reset(self.firmware.initial_sp, self.firmware.entry)

    def boot(self, max_cycles=BOOT_CYCLES):
        """Run until the firmware announces its protocol loop; Stop when it stops or takes longer."""
        if not self.core.run(until=self.ready, max_cycles=max_cycles):
            pc = self.core.pc & ~1
            raise Stop(f"no protocol loop after {max_cycles / CPU_HZ:.0f} s of emulated time", pc,
                       self.firmware.function_at(pc))
        self.usart.flush()

    def awaited_interrupt(self):
        """Why a sleep that only timers wake cannot end (None while the host may still wake it)."""
        if self.usart.interrupt_enabled():
            return None
        enabled = self.core.exceptions.enabled
        if enabled & {IRQ0 + n for n in NPU_IRQS}:
            return (f"the firmware waits for the NPU's interrupt in {self.current_epoch()}: no chain of enabled units "
                    "the NPU model started ends it")
        names = ", ".join(exception_name(n) for n in sorted(enabled)) or "none"
        return f"the interrupt it waits for is never raised (enabled interrupts: {names})"

    def _emulate_long_shifts(self):
        """Unicorn runs the Armv8.1-M 64-bit scalar shifts silently wrong (dk/long_shift.py); ST's
        runtime in a model's image uses them and runs in place from the NOR, so the firmware's
        segments and every programmed run of NOR sectors are scanned for them once, at power-on."""
        runs = [(addr, [data]) for addr, data in self.firmware.segments]
        end = None
        for sector in sorted(self.flash.sectors):
            if sector != end:
                runs.append((sector, []))
            runs[-1][1].append(self.flash.sectors[sector])
            end = sector + self.flash.sector_size
        for base, parts in runs:
            long_shift.hook(self.core.uc, base, b"".join(parts), self.core.stop_with)

    def _model_hal_delay(self):
        """ST's HAL_Delay(ms) polls uwTick until ms + uwTickFreq ticks have passed: about 190 M
        busy-wait instructions of the firmware's 199 M to boot. The twin lets that time pass as a
        sleep instead (the clock advances, uwTick with it) and returns to the caller."""
        at, tick, freq = (self.firmware.address_of("HAL_Delay"), self.firmware.objects.get("uwTick"),
                          self.firmware.objects.get("uwTickFreq"))
        if None in (at, tick, freq):
            return
        uc = self.core.uc

        def delay(*_):
            ms = uc.reg_read(UC_ARM_REG_R0)
            wait = ms + uc.mem_read(freq, 1)[0] if ms < 0xFFFFFFFF else ms
            now = int.from_bytes(uc.mem_read(tick, 4), "little")
            uc.mem_write(tick, ((now + wait) & 0xFFFFFFFF).to_bytes(4, "little"))
            self.core.clock.sleep(wait * self.cpu_hz() // 1000)
            uc.reg_write(UC_ARM_REG_PC, uc.reg_read(UC_ARM_REG_LR) | 1)
        uc.hook_add(UC_HOOK_CODE, delay, begin=at, end=at)

    def _on_run_epoch_block(self, uc, *_):
        """The runtime enters an epoch block (again, while it waits for the NPU). Entering the
        network's first block anew begins an inference: the NPU model forgets the last one's
        programs, stop line and outputs not computed, as on the simulated board."""
        self.nn_instance = uc.reg_read(UC_ARM_REG_R0)
        try:
            nn = NN_INSTANCE.unpack(bytes(uc.mem_read(self.nn_instance, NN_INSTANCE.size)))
        except UcError:
            return
        block = nn["current_epoch_block"]
        if block == nn["first_epoch_block"] and self._last_block != block:
            self.npu.begin_inference()
        self._last_block = block

    def current_epoch(self):
        """The epoch the runtime is in, from its NN instance (the argument of its last
        LL_ATON_RT_RunEpochBlock call): ST's validation firmware reads epoch_num, so it is built
        with the epoch blocks' debug fields."""
        if self.nn_instance is None:
            return "a hardware epoch"
        read = lambda at, n: bytes(self.core.uc.mem_read(at, n))
        try:
            block = NN_INSTANCE.unpack(read(self.nn_instance, NN_INSTANCE.size))["current_epoch_block"]
            epoch = EPOCH_BLOCK[True].unpack(read(block, EPOCH_BLOCK[True].size))["epoch_num"]
        except UcError:       # the pointers do not lead to mapped memory
            return "a hardware epoch"
        return f"epoch {epoch}"

    def cpu_hz(self):
        """The CPU clock the firmware has set up (its SystemCoreClock, computed from RCC), for
        turning cycles into time in messages; the model itself counts cycles."""
        at = self.firmware.objects.get("SystemCoreClock")
        value = int.from_bytes(self.core.uc.mem_read(at, 4), "little") if at else 0
        return value or CPU_HZ

    def ready(self):
        return READY in self.usart.sent

    def serve(self, until=lambda: False):
        """Run the firmware for the host until it stops (Stop), `until()` holds (a reset) or the
        process ends. A firmware without ST's receive routine (RECEIVE) is said so once."""
        if not self.receive:
            _say_no_receive(self.firmware.path)
        self.usart.block_for_host = True
        self.core.run(until=until)

