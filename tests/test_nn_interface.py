"""The C interface of generated code, runtime, loader and firmware (ll_aton_NN_interface.h), probed
as the model build compiles it (arm-none-eabi-gcc, Cortex-M55, ST's defines, with and without
LL_ATON_EB_DBG_INFO): every struct size, field offset, field size and signedness, flag and code
equals n6.nn_interface, which writes down ST 2.2's header number for number. The default suite
probes the simulated install's header; with N6_REAL_STEDGEAI the same probe is compiled against
ST's header of the test bed (the judge of the numbers above)."""
import os
import struct
import subprocess

import pytest
from elftools.elf.elffile import ELFFile

from n6 import gcc_flags
from n6.nn_interface import (BUFFER_INFO, EPOCH_BLOCK, ChPos, DataType, EpochFlag, nn_interface,
                             struct_sizes_word)
from n6.stedgeai_install import PLATFORM

REAL = os.environ.get("N6_REAL_STEDGEAI")
LL_ATON = os.path.join("Middlewares", "ST", "AI", "Npu", "ll_aton")
C_NAMES = {DataType: "DataType_{}", ChPos: "CHPos_{}", EpochFlag: "EpochBlock_Flags_{}"}
CHPOS_C = {"FIRST": "First", "LAST": "Last", "MIXED": "Mixed", "UNDEFINED": "UNDEFINED"}


def facts(dbg_info, encryption_info=False):
    """[(what, C expression, expected value)] for one build configuration."""
    out = []
    for layout in (EPOCH_BLOCK[dbg_info], BUFFER_INFO, nn_interface(encryption_info)):
        t = layout.c_name
        out.append((f"sizeof({t})", f"sizeof({t})", layout.size))
        for name, ctype in layout.fields:
            member = f"(({t} *)0)->{name}"
            out.append((f"{t}.{name} offset", f"offsetof({t}, {name})", layout.offsets[name]))
            out.append((f"{t}.{name} size", f"sizeof({member})", {"u64": 8, "u32": 4, "ptr": 4, "u16": 2,
                                                                   "i16": 2}.get(ctype, 1)))
            if ctype not in ("ptr", "enum"):
                out.append((f"{t}.{name} signed", f"((__typeof__({member}))-1 < 0)", int(ctype.startswith("i"))))
    for enum, pattern in C_NAMES.items():
        for member in enum:
            name = CHPOS_C[member.name] if enum is ChPos else \
                member.name.lower() if enum is EpochFlag and member.name != "NONE" else member.name
            out.append((pattern.format(name), pattern.format(name), int(member)))
    return out


def probe(tmp_path, include_dirs, dbg_info, encryption_info=False, extra_defines=()):
    """Compile one probe of `facts` and return [(what, got, expected)] for the ones that differ."""
    wanted = facts(dbg_info, encryption_info)
    src = tmp_path / f"probe_{int(dbg_info)}.c"
    src.write_text('#include <stddef.h>\n#include <stdint.h>\n#include "ll_aton_NN_interface.h"\n'
                   "const uint32_t n6_probe[] = {\n" + "".join(f"  (uint32_t)({expr}),\n" for _, expr, _ in wanted)
                   + "};\n")
    obj = tmp_path / f"probe_{int(dbg_info)}.o"
    defines = [d for d in gcc_flags.defines("network", dbg_info=dbg_info) if not d.startswith("MODEL_CONF")]
    argv = (["arm-none-eabi-gcc"] + gcc_flags.compile_flags(True) + [f"-D{d}" for d in defines + list(extra_defines)]
            + [f"-I{d}" for d in include_dirs] + ["-c", str(src), "-o", str(obj)])
    proc = subprocess.run(argv, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with open(obj, "rb") as f:
        elf = ELFFile(f)
        sym = elf.get_section_by_name(".symtab").get_symbol_by_name("n6_probe")[0]
        data = elf.get_section(sym["st_shndx"]).data()[sym["st_value"]:sym["st_value"] + sym["st_size"]]
    got = struct.unpack(f"<{len(wanted)}I", data)
    return len(wanted), [(what, g, e) for (what, _, e), g in zip(wanted, got) if g != e]


def sim_dirs(install):
    plt = os.path.join(install, PLATFORM)
    return [os.path.join(install, LL_ATON), plt, os.path.dirname(plt)]


def test_layouts_are_st_22s():
    """The numbers themselves, as ST 2.2's header makes them on the Cortex-M55."""
    assert (BUFFER_INFO.size, EPOCH_BLOCK[True].size, EPOCH_BLOCK[False].size) == (56, 48, 20)
    assert struct_sizes_word(True) == 0x3038 and struct_sizes_word(False) == 0x1438
    assert [BUFFER_INFO.offsets[f] for f in ("batch", "mem_shape", "mem_ndims", "chpos", "type", "per_channel",
                                             "shape", "scale", "offset")] == [24, 28, 32, 34, 35, 41, 44, 48, 52]
    assert [EPOCH_BLOCK[True].offsets[f] for f in ("flags", "epoch_num", "in_streng_mask",
                                                    "estimated_npu_cycles")] == [16, 18, 24, 32]
    assert (DataType.INT8, DataType.UINT8, DataType.BOOL, DataType.FXP, ChPos.FIRST) == (7, 6, 13, 100, 1)
    assert (EpochFlag.BLOB, EpochFlag.LAST_EB, EpochFlag.PURE_SW) == (4, 8, 32)
    assert nn_interface(True).offsets["internal_buffers_info"] == 48 and nn_interface(False).size == 44


@pytest.mark.parametrize("dbg_info", [True, False])
@pytest.mark.parametrize("rel", ["2.2", "3.0"])
def test_simulated_header_declares_st_interface(sim_install, tmp_path, dbg_info, rel):
    n, wrong = probe(tmp_path, sim_dirs(sim_install(rel)), dbg_info, encryption_info=rel >= "3")
    assert n > 100 and not wrong


@pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2", LL_ATON))),
                    reason="set N6_REAL_STEDGEAI to a real-install test bed to probe ST's header")
@pytest.mark.parametrize("dbg_info", [True, False])
def test_st_header_declares_the_same(tmp_path, dbg_info):
    st = os.path.join(REAL, "2.2")
    n, wrong = probe(tmp_path, [os.path.join(st, LL_ATON), os.path.join(st, "Middlewares", "ST", "AI", "Npu",
                                                                     "Devices", "STM32N6XX")], dbg_info)
    assert n > 100 and not wrong
