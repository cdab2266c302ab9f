"""The simulated runtime and generated network files compile with the real arm-none-eabi-gcc and
the exact flags, defines and include order of the relocatable build."""
import os
import subprocess

import pytest

from n6 import gcc_flags
from n6.stedgeai_install import (CONF_SHARED_SOURCES, LL_ATON, NDEBUG_SOURCES, PLATFORM,
                                 SIMULATED_RUNTIME_SOURCES, SW_LIB_INC, SW_LIB_INC_SOURCES)

from conftest import BUNDLED


def _cc(install, build_dir, src, secure=True, extra=(), obj_dir=None):
    rt = os.path.join(install, LL_ATON)
    plt = os.path.join(install, PLATFORM)
    defines = gcc_flags.defines("network")
    argv = (["arm-none-eabi-gcc"] + gcc_flags.compile_flags(secure) + [f"-D{d}" for d in defines] +
            [f"-I{rt}", f"-I{plt}", f"-I{plt}/..", f"-I{build_dir}"] + list(extra) +
            ["-Wall", "-Werror", "-c", src, "-o", os.path.join(obj_dir or build_dir, os.path.basename(src) + ".o")])
    return subprocess.run(argv, capture_output=True, text=True)


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
def test_runtime_sources_compile(sim_install, tmp_path, rel):
    install = sim_install(rel)
    for name in SIMULATED_RUNTIME_SOURCES + CONF_SHARED_SOURCES:
        extra = [f"-I{os.path.join(install, SW_LIB_INC)}"] if name in SW_LIB_INC_SOURCES else []
        extra += ["-DNDEBUG"] if name in NDEBUG_SOURCES else []
        proc = _cc(install, tmp_path, os.path.join(install, LL_ATON, name), extra=extra)   # only per-file extras
        assert proc.returncode == 0, f"{name}: {proc.stderr}"


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
@pytest.mark.parametrize("model", BUNDLED)
@pytest.mark.parametrize("secure", [True, False])
def test_generated_network_compiles(sim_install, generated, tmp_path, rel, model, secure):
    out = generated(model, rel)
    proc = _cc(sim_install(rel), out, os.path.join(out, "network.c"), secure, obj_dir=tmp_path)
    assert proc.returncode == 0, proc.stderr


def test_secure_build_uses_the_secure_npu_alias(sim_install, tmp_path):
    install = sim_install("2.2")
    src = os.path.join(install, LL_ATON, "ll_aton.c")
    words = {}
    for secure in (True, False):
        assert _cc(install, tmp_path, src, secure).returncode == 0
        dump = subprocess.run(["arm-none-eabi-objdump", "-s", "-j", ".text.LL_ATON_Version_Get",
                               str(tmp_path / "ll_aton.c.o")], capture_output=True, text=True).stdout
        words[secure] = dump
    # the literal pool holds ATON_BASE, little-endian: 0x580E0000 secure, 0x480E0000 non-secure (ST's
    # platform header: NPU_BASE = AHB5PERIPH_BASE + 0x0C0000, AHB5PERIPH_BASE = PERIPH_BASE + 0x08020000)
    assert "00000e58" in words[True].replace(" ", "") and "00000e48" not in words[True].replace(" ", "")
    assert "00000e48" in words[False].replace(" ", "") and "00000e58" not in words[False].replace(" ", "")
