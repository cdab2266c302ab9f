"""The DK twin's device models, each against its register facts: RCC set/clear aliases, ready bits
and switch status; BSEC's VDDIO fuse word; USART1 flags, data, interrupt and waiting for the host;
xSPI never busy; the NPU model on the bus (both aliases, reset values, self-clearing bits); the
cycle counters and SysTick on the cycle clock; the bus's security aliases and byte lanes."""
import os

import pytest
from unicorn import UC_ARCH_ARM, UC_MODE_MCLASS, UC_MODE_THUMB, Uc

from n6board.dk.bus import Bus
from n6board.dk.clock import CycleClock
from n6board.dk.exceptions import ExceptionUnit
from n6board.dk.mve import Helium
from n6board.dk.host_link import BufferLink, PtyLink
from n6board.dk.peripherals.bsec import Bsec
from n6board.dk.peripherals.cycle_counters import PmuCycleCounter
from n6board.dk.peripherals.rcc import Rcc
from n6board.dk.peripherals.system_control import SystemControlSpace
from n6board.dk.peripherals.usart import IDLE_POLLS, Usart
from n6board.dk.peripherals.xspi import dk_xspi_controllers
from n6board.server import BoardReset
from npu_model.npu import Npu


@pytest.fixture
def bus():
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    return Bus(uc)


def test_rcc_aliases_set_and_clear_and_oscillators_are_ready_at_once(bus):
    rcc = bus.attach(Rcc())
    assert bus.read(0x4602_8000) == 1 << 3                     # CR resets to HSION
    assert bus.read(0x5602_8004) == 1 << 3                     # SR (secure alias): HSI ready
    bus.write(0x4602_8800, 1 << 4 | 1 << 8)                    # CR set alias: HSE and PLL1 on
    assert bus.read(0x4602_8004) == 1 << 3 | 1 << 4 | 1 << 8
    bus.write(0x4602_9000, 1 << 3)                             # CR clear alias: HSI off
    assert bus.read(0x4602_8000) == 1 << 4 | 1 << 8 and not bus.read(0x4602_8004) & 1 << 3
    bus.write(0x4602_8020, 3 << 16 | 2 << 24)                  # CFGR1: CPU on IC1, system on HSE
    assert bus.read(0x4602_8020) == 3 << 16 | 3 << 20 | 2 << 24 | 2 << 28
    bus.write(0x4602_8A5C, 0x10)                               # any register's set alias (an enable)
    bus.write(0x4602_8A5C, 0x01)
    assert rcc.stored(0x25C) == 0x11


def test_bsec_reads_a_configured_boards_vddio_fuses(bus):
    bus.attach(Bsec())
    assert bus.read(0x5600_9000 + 4 * 124) == 0x0001_8000


def test_xspi_is_never_busy(bus):
    for controller in dk_xspi_controllers():
        bus.attach(controller)
    for base in (0x4802_5000, 0x5802_A000):
        assert bus.read(base + 0x20) == 0b1110


def test_usart_flags_data_interrupt_and_waiting_for_the_host(bus):
    link, lines, stops = BufferLink(b"ab"), [], []
    usart = bus.attach(Usart(link, lines.append, lambda: stops.append(1)))
    assert bus.read(0x4200_101C) & 0xC0 == 0xC0                # TC, TXE: the wire never backs up
    bus.write(0x5200_1000, 1 | 1 << 2 | 1 << 3)                # UE, RE, TE
    assert bus.read(0x4200_101C) & (1 << 21 | 1 << 22) == 1 << 21 | 1 << 22      # TEACK, REACK
    usart.poll_host()
    assert not usart.rx                                         # the firmware has not waited for the host yet
    for _ in range(IDLE_POLLS):
        bus.read(0x4200_101C)
    usart.poll_host()                                           # ... now it has: the bytes come in here
    bus.write(0x5200_1000, 1 | 1 << 2 | 1 << 3 | 1 << 5)       # RXNEIE
    assert lines[-1] is True and bus.read(0x4200_101C) & 1 << 5   # RXNE: the interrupt is asserted
    assert bytes([bus.read(0x4200_1024), bus.read(0x4200_1024)]) == b"ab"
    assert lines[-1] is False
    bus.write(0x4200_1028, ord("X"))
    for _ in range(IDLE_POLLS):                                 # polls in vain: the firmware waits for the host
        bus.read(0x4200_101C)
    assert link.from_board == b"X" and stops and usart.waiting_for_host


def test_usart_read_in_the_firmwares_receive_routine_waits_for_the_host_right_there(bus):
    """No IDLE_POLLS polls first: the read costs the firmware the same whether the byte was there."""
    link, stops = BufferLink(), []
    usart = bus.attach(Usart(link, lambda asserted: None, lambda: stops.append(1), receiving=lambda: True))
    bus.write(0x5200_1000, 1 | 1 << 2 | 1 << 3)                # UE, RE, TE
    bus.write(0x4200_1028, 0xAA)
    usart.block_for_host = True
    link.on_wait = lambda link: link.to_board.extend(b"c")     # the host answers what the board sent
    assert bus.read(0x4200_101C) & 1 << 5 and bus.read(0x4200_1024) == ord("c")   # RXNE at the first read
    assert link.from_board == b"\xaa" and not stops and not usart.empty_polls


def test_the_npu_model_answers_at_both_aliases_with_atonh_reset_values_and_self_clearing_bits(bus):
    bus.attach(Npu())
    assert bus.read(0x580E_5004) == 0x003E5001 and bus.read(0x480E_6004) == 0x003E5001   # STRENG0/1 VERSION
    assert bus.read(0x480F_E004) == 0x0F041121                                           # EPOCHCTRL VERSION
    bus.write(0x580E_5000, 1 << 8 | 1 << 1)                   # STRENG0: raw, clear
    assert bus.read(0x480E_5000) == 1 << 8                    # clear self-clears
    bus.write(0x480E_5002, 0x12, size=1)                      # a byte lane: SIZE0 = 2, SIZE1 = 1
    assert bus.read(0x580E_5000) == 1 << 8 | 0x12 << 16


def test_the_npu_trace_units_always_high_counter_counts_npu_clocks(bus):
    """ST's firmware times epochs with a debug-and-trace event counter on the always-high signal
    (SEL 1, VDD): it counts the NPU's clock from the value written to its CNT; on another event
    type or signal, or disabled, it keeps its value."""
    npu, now = bus.attach(Npu()), [0]
    npu.npu_now = lambda: now[0]
    event, cnt = 0x580F_F040, 0x580F_F084                      # DEBUG_TRACE EVENT_0, EVENT_0_CNT
    bus.write(cnt, 10)
    bus.write(event, 1 | 1 << 1 | 2 << 14)                     # enabled, VDD's rising edges
    now[0] = 400
    assert bus.read(cnt) == 10
    bus.write(event, 1 | 2 << 1 | 1 << 14)                     # enabled, a stall signal high: not modelled
    now[0] += 100
    assert bus.read(cnt) == 10
    bus.write(event, 1 | 1 << 1 | 1 << 14)                     # enabled, always high
    now[0] += 500
    assert bus.read(cnt) == 10 + 500
    bus.write(cnt, 0)                                          # the firmware resets it per epoch
    now[0] += 100
    assert bus.read(cnt) == 100
    bus.write(event, 1 << 1 | 1 << 14)                         # stopped: it keeps its count
    now[0] += 800
    assert bus.read(cnt) == 100


def test_cycle_counters_and_systick_count_cycles():
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    clock = CycleClock(uc)
    bus = Bus(uc)
    pmu = bus.attach(PmuCycleCounter(clock))
    scs = bus.attach(SystemControlSpace(clock, ExceptionUnit(uc, lambda: 0, Helium(uc)), 0x3400_0000))
    bus.write(0xE000_3C00, 1 << 31)                            # PMU_CNTENSET: the cycle counter
    bus.write(0xE000_3E04, 1 | 1 << 2)                         # PMU_CTRL: enable, reset the cycle counter
    clock.slept = 1234                                         # (cycles pass)
    assert bus.read(0xE000_307C) == 1234
    bus.write(0xE000_E014, 999)                                # SysTick reload
    bus.write(0xE000_E010, 7)
    clock.slept += 250
    assert bus.read(0xE000_E018) == 999 - 250
    assert bus.read(0xE000_ED00) == 0x411F_D220                # CPUID: Cortex-M55
    assert bus.read(0xE000_ED08) == 0x3400_0000                # VTOR
    assert pmu.counter.value() == 1484 and scs.systick.current() == 749


def test_the_bus_merges_byte_lanes_and_keeps_unmodelled_registers(bus):
    bus.write(0x4400_0010, 0x11223344)
    bus.write(0x5400_0012, 0xAB, size=1)                       # the secure alias of the same register
    assert bus.read(0x4400_0010) == 0x11AB3344
    assert bus.read(0x4400_0013, size=1) == 0x11
    assert bus.untouched() == [(0x4400_0010, 2, 2)]


def test_a_cpu_write_to_the_mapped_nor_lasts_until_its_d_cache_line_is_invalidated():
    """ST's loader copies an absolute flash pool onto the image itself, then cleans and
    invalidates the range: the NOR ignores the write (no write enable), so the image reads whole
    again after the invalidation; before it, the D-cache holds what was written."""
    from unicorn import UC_PROT_ALL
    from unicorn.arm_const import UC_ARM_REG_R0, UC_ARM_REG_R1, UC_ARM_REG_R3, UC_ARM_REG_R4, \
        UC_ARM_REG_R5, UC_ARM_REG_R6
    from n6board.dk.memory_map import NorContent
    from n6board.dk.nor_window import NorWindow
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    bus = Bus(uc)
    scs = bus.attach(SystemControlSpace(CycleClock(uc), ExceptionUnit(uc, lambda: 0, Helium(uc)), 0x3400_0000))
    uc.mem_map(0x7100_0000, 0x1000, UC_PROT_ALL)
    uc.mem_write(0x7100_0000, b"NBIN" * 16)
    flash = NorContent({0x7100_0000: b"NBIN" * 16}, 64)
    scs.dcache_invalidate = NorWindow(uc, flash.read, 0x7100_0000, 0x1000).invalidate
    uc.mem_map(0x3400_0000, 0x1000, UC_PROT_ALL)
    code = bytes.fromhex("0160" "0468" "4160" "1860" "0568" "4668")   # str r1,[r0]; ldr r4,[r0]; str r1,[r0,#4];
    uc.mem_write(0x3400_0000, code)                                   # str r0,[r3]; ldr r5,[r0]; ldr r6,[r0,#4]
    for reg, value in ((UC_ARM_REG_R0, 0x7100_0020), (UC_ARM_REG_R1, 0xDEADBEEF), (UC_ARM_REG_R3, 0xE000_EF70)):
        uc.reg_write(reg, value)                                      # DCCIMVAC of the line at r0
    uc.emu_start(0x3400_0001, 0x3400_0000 + len(code))
    assert uc.reg_read(UC_ARM_REG_R4) == 0xDEADBEEF                   # the cache holds the write
    assert uc.reg_read(UC_ARM_REG_R5) == uc.reg_read(UC_ARM_REG_R6) == int.from_bytes(b"NBIN", "little")
    assert bytes(uc.mem_read(0x7100_0000, 64)) == b"NBIN" * 16


def test_entering_the_networks_first_epoch_block_anew_begins_an_inference_on_the_npu_model():
    """The twin serves many inferences: the NPU model forgets the last one's programs, stop line
    and outputs not computed when the runtime enters the first epoch block again, not while it
    re-enters a block waiting for the NPU, nor at later blocks."""
    import struct
    from unicorn import UC_PROT_ALL
    from unicorn.arm_const import UC_ARM_REG_R0
    from n6board.dk.twin import DkTwin
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    uc.mem_map(0x3400_0000, 0x1000, UC_PROT_ALL)
    uc.reg_write(UC_ARM_REG_R0, 0x3400_0000)
    twin = DkTwin.__new__(DkTwin)          # only what the hook reads: no firmware needed
    twin.npu, twin._last_block = Npu(lambda a, d: None), None
    begun = []
    twin.npu.begin_inference = lambda: begun.append(True)
    for current in (0x100, 0x100, 0x118, 0x130, 0x100, 0x100, 0x118, 0x100):
        uc.mem_write(0x3400_0000, struct.pack("<4I", 0x40, current, 0x100, current + 0x18))
        twin._on_run_epoch_block(uc)
    assert len(begun) == 3


def test_a_firmware_without_sts_receive_routine_is_said_so_once_naming_its_elf(capsys, tmp_path):
    """The twin finds the host waits of ST's firmware by its receive routine's ranges: a firmware
    without one that serves the host is said so in one warning line naming its ELF, once, not once
    per boot (a reset boots a new twin); one with it is not (nor one that stops before serving: the
    USB-C variants in test_twin_real)."""
    from types import SimpleNamespace
    from n6board.dk.firmware_elf import FirmwareElf
    from n6board.dk.twin import RECEIVE, DkTwin
    functions = [(0x1000, 0x40, "main"), (0x1040, 0x80, "HAL_UART_Receive"), (0x10C0, 0x20, "Error_Handler")]

    def serving(name, functions):
        twin = DkTwin.__new__(DkTwin)          # only what serve reads: no firmware run
        twin.firmware = FirmwareElf(str(tmp_path / name), 0x1001, [], 0, 0, functions, {})
        twin.receive = twin.firmware.spans_of(*RECEIVE)
        twin.usart, twin.core = SimpleNamespace(), SimpleNamespace(run=lambda until: None)
        twin.serve()
        return twin.receive
    assert serving("st.elf", functions) == ((0x1040, 0x10C0),)
    assert capsys.readouterr().err == ""
    assert (serving("own.elf", functions[::2]), serving("own.elf", functions[::2])) == ((), ())
    assert capsys.readouterr().err.splitlines() == [
        f"n6board: warning: {tmp_path / 'own.elf'}: no HAL_UART_Receive or UART_WaitOnFlagUntilTimeout function: "
        "the twin takes the host's bytes where the firmware's idle polls end a slice, not where it asks for them"]


def test_a_reset_ends_a_wait_for_the_host_with_nothing_and_a_read_between_slices_with_boardreset():
    """A reset (the pty port's reset_requested) ends the firmware's wait for the host with no bytes
    (the wait runs in the emulator's register hook, where an exception is lost: ctypes prints it
    and the read goes on) and a read between slices with BoardReset, which the serving loop catches."""
    master, slave = os.openpty()
    try:
        link = PtyLink(master)
        link.port.reset_requested = lambda: True
        assert link.wait_for_bytes() == b""
        with pytest.raises(BoardReset):
            link.receive()
    finally:
        os.close(slave)
        os.close(master)
