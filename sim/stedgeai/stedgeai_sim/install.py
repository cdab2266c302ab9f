"""Lay out a simulated ST Edge AI Core install tree for one release.

The tree has ST's layout (Utilities/linux/stedgeai, Middlewares/ST/AI/...), so the build finds it
exactly like a real install through STEDGEAI_CORE_DIR. The PIC runtime archive is not made here:
the build compiles it with the real arm-none-eabi-gcc (see runtime_lib_sources())."""
import functools
import glob
import hashlib
import json
import os
import stat
import sys

from n6.atomic import write_bytes, write_text
from n6.releases import release
from n6.stedgeai_install import CLI as LAUNCHER_PATH, RUNTIME_LIB_DIR, SIMULATED_INSTALL_MARK

SIM_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE = os.path.join(SIM_DIR, "install")
SITE_SCONS = os.path.join(os.path.dirname(os.path.dirname(SIM_DIR)), "site_scons")

LAUNCHER = """#!/bin/sh
# ST Edge AI Core {core} command line (simulated).
STEDGEAI_SIM_ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export STEDGEAI_SIM_ROOT
PYTHONPATH="{pythonpath}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{python}" -m stedgeai_sim "$@"
"""


@functools.cache
def template_files():
    """(relative path, absolute source) for every file of the install template (listed once:
    the build asks per install file and per model)."""
    return tuple((os.path.relpath(path, TEMPLATE), path)
                 for path in sorted(glob.glob(os.path.join(TEMPLATE, "**", "*"), recursive=True))
                 if os.path.isfile(path))


def runtime_lib_sources():
    return sorted(glob.glob(os.path.join(SIM_DIR, "runtime_lib", "*.c")))


def runtime_lib_path(core):
    rel = release(core)
    return os.path.join(RUNTIME_LIB_DIR, f"{rel.runtime_lib}_PIC.a")


def _dest(rel, relpath):
    if relpath.endswith(".in"):
        relpath = relpath[:-3]
    res = os.path.join("Utilities", "linux", "targets", "stm32", "resources") + os.sep
    if rel.core >= "3" and relpath.startswith(res):
        relpath = os.path.join(res, "NPU", "STM32N6xx", relpath[len(res):])
    return relpath


def installed_files(core):
    """{path in the install: its template, or None for a file written from scratch}, for every
    file materialize() writes."""
    rel = release(core)
    files = {_dest(rel, r): src for r, src in template_files()}
    return dict(files, **{LAUNCHER_PATH: None, SIMULATED_INSTALL_MARK: None})


def write_file(dest, core, relpath, python=None):
    """Write one file of the install rooted at `dest`."""
    rel = release(core)
    target = os.path.join(dest, relpath)
    os.makedirs(os.path.dirname(target), exist_ok=True)
    src = installed_files(core)[relpath]
    if relpath == LAUNCHER_PATH:
        write_text(target, LAUNCHER.format(core=rel.core_full, python=python or sys.executable,
                                           pythonpath=f"{SIM_DIR}:{SITE_SCONS}"))
        os.chmod(target, os.stat(target).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    elif relpath == SIMULATED_INSTALL_MARK:
        write_text(target, json.dumps({"release": rel.core}) + "\n")
    elif src.endswith(".in"):
        major, minor, micro, dev = rel.atonn
        with open(src) as f:
            text = f.read()
        for key, value in {"CORE": rel.core_full, "MAJOR": major, "MINOR": minor, "MICRO": micro, "DEV": dev}.items():
            text = text.replace(f"@{key}@", str(value))
        write_text(target, text)
    else:
        with open(src, "rb") as f:
            write_bytes(target, f.read())


def materialize(dest, core, python=None):
    for relpath in installed_files(core):
        write_file(dest, core, relpath, python)


STAMP = ".stedgeai-sim-install"


def _file_digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def install_digest(core, python, signature=_file_digest):
    """What the install of `core` is made from: each file's path and template, the release facts,
    the launcher's Python and this module. `signature(path)`: a content signature of a file."""
    rel = release(core)
    h = hashlib.sha256(json.dumps([rel.core_full, rel.atonn, python]).encode())
    for relpath, src in sorted(installed_files(core).items()):
        h.update(f"{relpath}\0{signature(src) if src else ''}\0".encode())
    h.update(signature(os.path.abspath(__file__)).encode())
    return h.hexdigest()


def sync(dest, core, python, signature=_file_digest):
    """Make `dest` the install of `core` unless its stamp says it already is; returns whether it
    wrote. The stamp goes last (and first away): an interrupted sync is redone by the next one.
    Files an older layout had are removed; the runtime archive (built by the build) is kept."""
    digest = install_digest(core, python, signature)
    stamp = os.path.join(dest, STAMP)
    try:
        with open(stamp, encoding="utf-8") as f:
            if f.read().strip() == digest:
                return False
        os.unlink(stamp)
    except OSError:
        pass
    materialize(dest, core, python)
    keep = {os.path.normpath(p) for p in installed_files(core)}
    for folder, _, names in os.walk(dest):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), dest)
            if rel not in keep and not rel.startswith(RUNTIME_LIB_DIR + os.sep):
                os.unlink(os.path.join(folder, name))
    write_text(stamp, digest + "\n")
    return True


if __name__ == "__main__":
    materialize(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "2.2")
