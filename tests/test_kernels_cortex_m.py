"""The simulated runtime's int8 kernels (sim/stedgeai/runtime_lib/nr_kernels.c) as the Cortex-M55
build runs them: their DSP path (SXTAB16/SMLAD lanes, written in assembly) is not the host's, so
the same calls as tests/test_bite_kernels.py go through the ARM compiler and the simulated board's
CPU, against the same integer numpy reference, 0 LSB."""
import shutil
import struct
import subprocess

import numpy as np
import pytest

from conftest import SIM
from n6.gcc_flags import PIC, RUNTIME_LIB
from n6board.emulator import Cpu, Region
from test_bite_kernels import CONV_CASES, REQUANT_CASES, conv_case

pytestmark = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="no arm-none-eabi-gcc")
CODE, DATA, FIRMWARE = 0x1000_0000, 0x2000_0000, 0x3400_0000


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    """(cpu, {symbol: address}) with the kernels linked at CODE, compiled with the runtime library's
    core and optimisation flags (no position-independent data: nothing here is relocated)."""
    work = tmp_path_factory.mktemp("kernels-m55")
    src = f"{SIM}/runtime_lib/nr_kernels.c"
    flags = [f for f in RUNTIME_LIB if f not in PIC]
    subprocess.run(["arm-none-eabi-gcc", *flags, "-ffreestanding", "-nostdlib",
                    f"-I{SIM}/install/Middlewares/ST/AI/Inc", src,
                    f"-Wl,-Ttext={CODE:#x}", "-Wl,-e,nr_conv2d_s8", "-o", "k.elf"], cwd=work, check=True)
    subprocess.run(["arm-none-eabi-objcopy", "-O", "binary", "-j", ".text", "k.elf", "k.bin"], cwd=work, check=True)
    nm = subprocess.run(["arm-none-eabi-nm", "k.elf"], cwd=work, capture_output=True, text=True, check=True).stdout
    symbols = {p[2]: int(p[0], 16) for p in (line.split() for line in nm.splitlines()) if len(p) == 3}
    cpu = Cpu([Region("code", CODE, 0x10000), Region("data", DATA, 0x10000), Region("firmware", FIRMWARE, 0x6_0000)],
              FIRMWARE, [])
    cpu.write(CODE, (work / "k.bin").read_bytes())
    return cpu, symbols


def _call(cpu, fn, args):
    """AAPCS: the first four words in r0-r3, the rest on the stack the call starts with."""
    words = [struct.unpack("<I", struct.pack("<f", a))[0] if isinstance(a, float) else a & 0xFFFFFFFF for a in args]
    cpu.write(cpu.stack_top, struct.pack(f"<{len(words) - 4}I", *words[4:]))
    return cpu.call(fn, *words[:4])


def _place(cpu, arrays):
    """Write each array in DATA (4-byte aligned, as the tool places buffers); their addresses."""
    at, out = DATA, []
    for a in arrays:
        cpu.write(at, a.tobytes())
        out.append(at)
        at += (a.nbytes + 3) & ~3
    return out


@pytest.mark.parametrize("case", CONV_CASES)
def test_conv_on_the_cortex_m_equals_the_integer_reference(kernels, case):
    cpu, sym = kernels
    x, w, bias, want, args = conv_case(*case)
    a_x, a_out, a_w, a_b, a_m = _place(cpu, [x, np.zeros(want.size, np.int8), w, bias,
                                             np.ones(w.shape[0], np.float32)])
    _call(cpu, sym["nr_conv2d_s8"], [a_x, a_out, a_w, a_b, a_m, *args])
    assert np.array_equal(np.frombuffer(cpu.read(a_out, want.size), np.int8).reshape(want.shape), want)


def test_dense_on_the_cortex_m_rounds_and_clamps_as_the_host(kernels):
    """A dot product of 11 (two 4-byte lanes and a tail) with a zero point, then the requantisation
    cases of the host test."""
    cpu, sym = kernels
    rng = np.random.default_rng(5)
    x, w = rng.integers(-128, 128, 11, dtype=np.int8), rng.integers(-128, 128, (3, 11), dtype=np.int8)
    out = np.zeros(3, np.int8)
    a_x, a_out, a_w, a_b, a_m = _place(cpu, [x, out, w, np.zeros(3, np.int32), np.full(3, 1 / 512, np.float32)])
    _call(cpu, sym["nr_dense_s8"], [a_x, a_out, a_w, a_b, a_m, 11, 3, -7, 0, -128, 127])
    want = np.clip(np.rint((w.astype(np.int64) @ (x.astype(np.int64) + 7)) / 512), -128, 127)
    assert np.frombuffer(cpu.read(a_out, 3), np.int8).tolist() == want.tolist()
    for acc, expected in REQUANT_CASES:
        a_x, a_out, a_w, a_b, a_m = _place(cpu, [np.zeros(1, np.int8), np.zeros(1, np.int8), np.zeros(1, np.int8),
                                                 np.array([acc], np.int32), np.array([0.5], np.float32)])
        _call(cpu, sym["nr_dense_s8"], [a_x, a_out, a_w, a_b, a_m, 1, 1, 0, 1, -128, 127])
        assert np.frombuffer(cpu.read(a_out, 1), np.int8)[0] == expected, acc
