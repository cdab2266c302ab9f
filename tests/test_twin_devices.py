"""The DK twin's device models, each against its register facts: RCC set/clear aliases, ready bits
and switch status; BSEC's VDDIO fuse word; USART1 flags, data, interrupt and waiting for the host;
xSPI never busy; the NPU's reset values and self-clearing control bits read from an ATON.h; the
cycle counters and SysTick on the cycle clock; the bus's security aliases and byte lanes."""
import pytest
from unicorn import UC_ARCH_ARM, UC_MODE_MCLASS, UC_MODE_THUMB, Uc

from n6board.dk.aton_header import read_aton_header
from n6board.dk.bus import Bus
from n6board.dk.clock import CycleClock
from n6board.dk.exceptions import ExceptionUnit
from n6board.dk.mve import Helium
from n6board.dk.host_link import BufferLink
from n6board.dk.peripherals.bsec import Bsec
from n6board.dk.peripherals.cycle_counters import PmuCycleCounter
from n6board.dk.peripherals.npu import NpuRegisters
from n6board.dk.peripherals.rcc import Rcc
from n6board.dk.peripherals.system_control import SystemControlSpace
from n6board.dk.peripherals.usart import IDLE_POLLS, Usart
from n6board.dk.peripherals.xspi import dk_xspi_controllers


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


ATON_H = """
#define ATON_UNITA_NUM 2
#define ATON_UNITA_BASE(UNIT) \\
  (ATON_BASE + 0x1000UL + ((UNIT) * 0x1000UL))
#define ATON_UNITA_CTRL_OFFSET  0x0UL
#define ATON_UNITA_CTRL_DT \\
  (ATON_UNITA_CTRL_EN_DT << ATON_UNITA_CTRL_EN_LSB) | (ATON_UNITA_CTRL_CLR_DT << ATON_UNITA_CTRL_CLR_LSB)
#define ATON_UNITA_CTRL_EN_LSB  0UL
#define ATON_UNITA_CTRL_EN_DT  0x1UL
#define ATON_UNITA_CTRL_CLR_LSB  1UL
#define ATON_UNITA_CTRL_CLR_DT  0x0UL
#define ATON_UNITA_CTRL_RUNNING_LSB  31UL
#define ATON_UNITA_VERSION_OFFSET  0x4UL
#define ATON_UNITA_VERSION_DT(UNIT) \\
  (((UNIT) == 0) ? ((0x1dUL << 0UL) | (ATON_UNITA_VERSION_PORTS_DT(UNIT) << 16UL)) : \\
  (((UNIT) == 1) ? (0x2eUL) : 0UL))
#define ATON_UNITA_VERSION_PORTS_DT(UNIT) (((UNIT) == 0) ? 4UL : 0UL)
#define ATON_UNITA_VERSION_DESC  "Version register"
#define ATON_DEBUG_TRACE_NUM 1
#define ATON_DEBUG_TRACE_BASE(UNIT) \\
  (ATON_BASE + 0x1f000UL + ((UNIT) * 0x0UL))
#define ATON_DEBUG_TRACE_EVENT_0_OFFSET  0x40UL
#define ATON_DEBUG_TRACE_EVENT_0_EN_LSB  0UL
#define ATON_DEBUG_TRACE_EVENT_0_EN_W  (1UL)
#define ATON_DEBUG_TRACE_EVENT_0_EVENT_TYPE_LSB  14UL
#define ATON_DEBUG_TRACE_EVENT_0_EVENT_TYPE_W  (2UL)
#define ATON_DEBUG_TRACE_EVENT_0_CNT_OFFSET  0x84UL
"""


def test_npu_registers_start_at_atonh_reset_values_and_clear_bits_self_clear(bus, tmp_path):
    (tmp_path / "ATON.h").write_text(ATON_H)
    aton = read_aton_header(str(tmp_path / "ATON.h"))
    assert aton.reset_values() == {0x1000: 1, 0x1004: 0x4001D, 0x2000: 1, 0x2004: 0x2E, 0x1F040: 0, 0x1F084: 0}
    bus.attach(NpuRegisters(aton))
    assert bus.read(0x580E_1004) == 0x4001D and bus.read(0x480E_2004) == 0x2E
    bus.write(0x580E_2000, 1 | 1 << 1 | 1 << 31)              # enable, clear, (running)
    assert bus.read(0x580E_2000) == 1                          # clear self-clears, nothing runs


def test_the_npu_trace_units_always_high_counter_counts_npu_clocks(tmp_path):
    """ST's firmware times epochs with a debug-and-trace event counter on the always-high event:
    it counts the NPU's clock (here 5 per 4 CPU cycles) from the value written to its CNT; on
    another event, or disabled, it keeps its value."""
    (tmp_path / "ATON.h").write_text(ATON_H)
    uc = Uc(UC_ARCH_ARM, UC_MODE_THUMB | UC_MODE_MCLASS)
    clock, bus = CycleClock(uc), Bus(uc)
    bus.attach(NpuRegisters(read_aton_header(str(tmp_path / "ATON.h")), clock, (5, 4)))
    event, cnt = 0x580F_F040, 0x580F_F084
    bus.write(cnt, 10)
    bus.write(event, 1 | 2 << 14)                              # enabled, on another event
    clock.slept = 400
    assert bus.read(cnt) == 10
    bus.write(event, 1 | 1 << 14)                              # enabled, always high
    clock.slept += 400
    assert bus.read(cnt) == 10 + 500
    bus.write(cnt, 0)                                          # the firmware resets it per epoch
    clock.slept += 80
    assert bus.read(cnt) == 100
    bus.write(event, 1 << 14)                                  # stopped: it keeps its count
    clock.slept += 800
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
