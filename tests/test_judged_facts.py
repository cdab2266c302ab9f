"""Default-suite guards of facts the test bed's judges established (each judge needs N6_REAL_STEDGEAI
and is skipped without it): the numbers carried over here, so CI without the test bed fails when the
product drifts from what the judge last found equal. Where a fact changes on purpose, run its judge
with the test bed first, then carry the new numbers over.

- NPU register table (sim/npu/npu_model/aton_map.txt) = ST 2.2's ATON.h, number for number:
  judged by tests/test_npu_registers.py::test_the_table_equals_atonh_number_for_number.
- The firmware the checker assumes when no ELF is read = ST's ten 2.2 reloc validation firmwares:
  judged by tests/test_validation_firmware.py::test_st_prebuilt_firmwares (read from ST's ELFs)."""
import hashlib

from n6.reloc.firmware import Firmware
from npu_model.registers import aton_map

# Every unit: (instances, base from ATON_BASE, stride, registers), as the judge found them in ATON.h.
UNITS = {"CLKCTRL": (1, 0x00000, 0, 5), "INTCTRL": (1, 0x01000, 0, 13), "BUSIF": (2, 0x02000, 0x1000, 13),
         "STRSWITCH": (1, 0x04000, 0, 43), "STRENG": (10, 0x05000, 0x1000, 27), "CONVACC": (4, 0x0F000, 0x1000, 14),
         "DECUN": (2, 0x13000, 0x1000, 5), "ACTIV": (2, 0x15000, 0x1000, 6), "ARITH": (4, 0x17000, 0x1000, 16),
         "POOL": (2, 0x1B000, 0x1000, 9), "RECBUF": (1, 0x1D000, 0, 5), "EPOCHCTRL": (1, 0x1E000, 0, 10),
         "DEBUG_TRACE": (1, 0x1F000, 0, 46)}
# The whole table (227 lines: every register's offset and reset value, every field's position, width
# and access, the interrupt bits, the stream-switch links) when the judge last passed.
TABLE_LINES, TABLE_SHA256 = 227, "8aa451d2c2c1ee775f789a24510d176dfe0f0c696fb88534ba34f00e09628b3e"


def test_npu_register_table_is_the_one_atonh_judged():
    table = aton_map()
    assert {n: (u.count, u.base, u.stride, len(u.registers)) for n, u in table.units.items()} == UNITS
    assert list(table.irqs.values()) == list(range(32))
    assert table.irqs["STRENG0"] == 0 and table.irqs["CONVACC0"] == 20 and table.irqs["EPOCHCTRL0"] == 28
    assert list(table.links.values()) == list(range(27))
    assert table.links["CONVACC0"] == 10 and table.links["RECBUF00"] == 24
    lines = table.lines()
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    assert (len(lines), digest) == (TABLE_LINES, TABLE_SHA256), \
        "aton_map.txt differs from the table ATON.h judged: run test_npu_registers.py with the test bed, then " \
        "carry the new figures over"


def test_the_default_firmware_is_st_22_validation_firmwares():
    """LL_ATON 1.1.1, secure, dbg-info, FPU enabled, Cortex-M55 (CPUID part 0xD22), C-struct sizes 56 / 48."""
    fw = Firmware()
    assert (fw.release, fw.secure, fw.dbg_info, fw.fpu, fw.cpu_part, fw.version, fw.expected_struct_sizes) == \
        ("2.2", True, True, True, 0xD22, (1, 1, 1), 56 | 48 << 8)
