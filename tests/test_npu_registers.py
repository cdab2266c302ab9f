"""The NPU model's register table (sim/npu/npu_model/aton_map.txt) against the real install's
ATON.h, number for number: every unit's count and base, every register's offset and reset value,
every field's position, width and access, the interrupt bits and the stream-switch link numbers.
ATON.h is read here with a macro evaluator of its own (tests/aton_header.py), apart from the table.

The comparison needs the test bed named by N6_REAL_STEDGEAI (its `2.2/` install)."""
import os
import re

import pytest

from aton_header import Macros, MacroError
from n6.stedgeai_install import NPU_DEVICE_HEADER
from npu_model.registers import AtonMap, Field, Register, Unit, aton_map

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
HEADER = os.path.join(REAL, "2.2", NPU_DEVICE_HEADER)
needs_test_bed = pytest.mark.skipif(not (REAL and os.path.isfile(HEADER)),
                                    reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")


def read_header(path):
    """AtonMap of an ATON.h: units from `ATON_<U>_BASE(UNIT)`, registers from `_OFFSET` and `_DT`,
    fields from `_LSB`/`_W`/`_AC` (a field array `<F>N` with `_LSB(IDX)` and `_NUM(UNIT)` becomes
    fields <F>0..)."""
    with open(path, encoding="latin-1") as f:
        text = f.read()
    macros = Macros(text)
    macros.defs["ATON_BASE"] = (None, "0")
    access = dict(re.findall(r'#define (ATON_\w+)_AC\s+"(\w+)"', text))
    units = {}
    for name, (param, _) in macros.defs.items():
        if name.endswith("_BASE") and param == "UNIT":
            kind = name[5:-5]
            count = macros.value(f"ATON_{kind}_NUM") if f"ATON_{kind}_NUM" in macros.defs else 1
            bases = [macros.value(name, UNIT=i) for i in range(count)]
            units[kind] = Unit(kind, count, bases[0], bases[1] - bases[0] if count > 1 else 0)
    for kind, unit in units.items():
        prefix = f"ATON_{kind}_"
        for name, (param, _) in macros.defs.items():
            if name.startswith(prefix) and name.endswith("_OFFSET") and not param:
                reg = name[len(prefix):-len("_OFFSET")]
                if any(reg.startswith(other + "_") for other in units if other != kind and other.startswith(kind)):
                    continue
                try:
                    offset = macros.value(name)
                except MacroError:
                    continue
                dt = f"{prefix}{reg}_DT"
                resets = {macros.value(dt, **({macros.defs[dt][0]: i} if macros.defs[dt][0] else {}))
                          for i in range(unit.count)} if dt in macros.defs else {0}
                assert len(resets) == 1, f"{kind}.{reg}: reset values differ between instances"
                unit.registers[reg] = Register(reg, offset, resets.pop())
        for reg in sorted(unit.registers, key=len, reverse=True):
            pre = f"{prefix}{reg}_"
            longer = [r for r in unit.registers if len(r) > len(reg) and r.startswith(reg + "_")]
            fields = []
            for name, (param, _) in macros.defs.items():
                if not name.startswith(pre) or any(name.startswith(f"{prefix}{r}_") for r in longer):
                    continue
                rest = name[len(pre):]
                if rest.endswith("_LSB") and not param:
                    f = rest[:-4]
                    fields.append(Field(f, macros.value(name), macros.value(f"{pre}{f}_W"),
                                        access.get(pre + f, "RW").lower()))
                elif rest.endswith("N_NUM") and "_" not in rest[:-5]:
                    f = rest[:-4]
                    for i in range(macros.value(name, UNIT=0)):
                        fields.append(Field(f"{f[:-1]}{i}", macros.value(f"{pre}{f}_LSB", IDX=i),
                                            macros.value(f"{pre}{f}_W"), access.get(pre + f, "RW").lower()))
            unit.registers[reg].fields = sorted(fields, key=lambda f: (f.lsb, f.name))
    irqs = {n: int(b) for n, b in sorted(re.findall(r"#define ATON_(\w+)_INT\s+(\d+)\s*$", text, re.M),
                                         key=lambda x: int(x[1]))}
    links = {n: int(v, 16) for n, v in re.findall(r"#define ATON_LINK_(\w+) \((0x[0-9a-f]+)UL\)", text)}
    ordered = dict(sorted(units.items(), key=lambda kv: kv[1].base))
    return AtonMap(ordered, irqs, links)


ATON_H = """
#define ATON_UNITA_BASE(UNIT) \\
  (ATON_BASE + 0x1000UL + ((UNIT) * 0x1000UL))
#define ATON_UNITA_VERSION_DT(UNIT) \\
  (((UNIT) == 0) ? ((0x1dUL << 0UL) | (ATON_UNITA_VERSION_PORTS_DT(UNIT) << 16UL)) : \\
  (((UNIT) == 1) ? (0x2eUL) : 0UL))
#define ATON_UNITA_VERSION_PORTS_DT(UNIT) (((UNIT) == 0) ? 4UL : 0UL)
#define ATON_UNITA_PRIO_BUSPORTN_LSB(IDX)  (0UL + (IDX) * 2)
#define ATON_UNITA_VERSION_DESC  "Version register"
"""


def test_the_judges_evaluator_reads_atonh_expressions():
    macros = Macros(ATON_H)
    macros.defs["ATON_BASE"] = (None, "0")
    assert [macros.value("ATON_UNITA_BASE", UNIT=i) for i in (0, 1)] == [0x1000, 0x2000]
    assert [macros.value("ATON_UNITA_VERSION_DT", UNIT=i) for i in (0, 1, 2)] == [0x4001D, 0x2E, 0]
    assert macros.value("ATON_UNITA_PRIO_BUSPORTN_LSB", IDX=3) == 6
    with pytest.raises(MacroError):
        macros.value("ATON_UNITA_VERSION_DESC")


@needs_test_bed
def test_the_table_equals_atonh_number_for_number():
    ours, theirs = aton_map().lines(), read_header(HEADER).lines()
    assert len(ours) == len(theirs) == 227
    assert [a for a, b in zip(ours, theirs) if a != b] == []
    assert ours == theirs
