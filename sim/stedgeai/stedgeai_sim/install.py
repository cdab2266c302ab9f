"""Lay out a simulated ST Edge AI Core install tree for one release.

The tree has ST's layout (Utilities/linux/stedgeai, Middlewares/ST/AI/...), so the build finds it
exactly like a real install through STEDGEAI_CORE_DIR. The PIC runtime archive is not made here:
the build compiles it with the real arm-none-eabi-gcc (see runtime_lib_sources())."""
import glob
import json
import os
import shutil
import stat
import sys

from n6.atomic import write_text
from n6.releases import release

SIM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(SIM_DIR, "install")
SITE_SCONS = os.path.join(os.path.dirname(os.path.dirname(SIM_DIR)), "site_scons")

LAUNCHER = """#!/bin/sh
# ST Edge AI Core {core} command line (simulated).
STEDGEAI_SIM_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export STEDGEAI_SIM_ROOT
PYTHONPATH="{pythonpath}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" -m stedgeai_sim "$@"
"""


def template_files():
    """(relative path, absolute source) for every file of the install template."""
    out = []
    for path in sorted(glob.glob(os.path.join(TEMPLATE, "**", "*"), recursive=True)):
        if os.path.isfile(path):
            out.append((os.path.relpath(path, TEMPLATE), path))
    return out


def runtime_lib_sources():
    return sorted(glob.glob(os.path.join(SIM_DIR, "runtime_lib", "*.c")))


def runtime_lib_path(core):
    rel = release(core)
    return os.path.join("Middlewares", "ST", "AI", "Lib", "GCC", "ARMCortexM55", f"{rel.runtime_lib}_PIC.a")


def _dest(rel, relpath):
    if relpath.endswith(".in"):
        relpath = relpath[:-3]
    res = os.path.join("Utilities", "linux", "targets", "stm32", "resources") + os.sep
    if rel.core >= "3" and relpath.startswith(res):
        relpath = os.path.join(res, "NPU", "STM32N6xx", relpath[len(res):])
    return relpath


def installed_files(core):
    """Relative paths of every file materialize() writes (the build's emitter uses this)."""
    rel = release(core)
    files = [_dest(rel, r) for r, _ in template_files()]
    return files + [os.path.join("Utilities", "linux", "stedgeai"), os.path.join("Utilities", "linux", "stedgeai_sim.json")]


def materialize(dest, core, python=None):
    rel = release(core)
    major, minor, micro, dev = rel.atonn
    for relpath, src in template_files():
        target = os.path.join(dest, _dest(rel, relpath))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if relpath.endswith(".in"):
            with open(src) as f:
                text = f.read()
            for key, value in {"CORE": rel.core_full, "MAJOR": major, "MINOR": minor, "MICRO": micro, "DEV": dev}.items():
                text = text.replace(f"@{key}@", str(value))
            write_text(target, text)
        else:
            shutil.copyfile(src, target)
    tools = os.path.join(dest, "Utilities", "linux")
    launcher = os.path.join(tools, "stedgeai")
    write_text(launcher, LAUNCHER.format(core=rel.core_full, python=python or sys.executable,
                                         pythonpath=f"{SIM_DIR}:{SITE_SCONS}"))
    os.chmod(launcher, os.stat(launcher).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    write_text(os.path.join(tools, "stedgeai_sim.json"), json.dumps({"release": rel.core}) + "\n")


if __name__ == "__main__":
    materialize(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "2.2")
