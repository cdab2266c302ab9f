"""A step on the simulated board depends on the board's code as its import and load lines name it
(n6_scons.sim_board_code: sim_board_files, the code `python -m n6board` runs): every project file a
board process opens or imports while it serves a session from its flashed state is in that list,
so a change to any reruns the steps on it. The board's own firmware always; ST's validation
firmware on the DK twin with the test bed (N6_REAL_STEDGEAI)."""
import os
import stat
import sys

import pytest

from conftest import ROOT, copy_repo, scons
from n6.aivalidation import IO_ONLY, PER_LAYER, Client
from n6.run.session import simulated_board
from n6.stedgeai_install import VALIDATION_FIRMWARE_DIR

BOARD = os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")
REAL = os.environ.get("N6_REAL_STEDGEAI", "")
ST_FIRMWARE = os.path.join(REAL, "2.2", VALIDATION_FIRMWARE_DIR, "stm32n6570-dk-validation-reloc-copy.elf")

AUDIT = r"""
import os, runpy, sys
log, seen = open(os.environ["N6_AUDIT_LOG"], "a", buffering=1), set()
def heard(event, args):
    if event == "open" and isinstance(args[0], str) and args[0] not in seen:
        seen.add(args[0])
        log.write(os.path.abspath(args[0]) + "\n")
sys.addaudithook(heard)
runpy.run_module("n6board", run_name="__main__", alter_sys=True)
"""


@pytest.fixture(scope="module")
def flashed(tmp_path_factory):
    """A clone with kws_mlp flashed to its simulated board."""
    root = copy_repo(tmp_path_factory.mktemp("repo"))
    scons(root, "flash", "MODEL=kws_mlp")
    return root


@pytest.mark.parametrize("firmware", ["", "st"])
def test_a_board_session_reads_no_project_file_its_steps_do_not_depend_on(flashed, tmp_path, monkeypatch, firmware):
    from n6_scons import sim_board_files
    if firmware and not os.path.isfile(ST_FIRMWARE):
        pytest.skip("no ST validation firmware (set N6_REAL_STEDGEAI to a test bed folder)")
    audit, log = tmp_path / "audit.py", tmp_path / "opened"
    audit.write_text(AUDIT)
    python = tmp_path / "python"           # `python -m n6board ARGS` → the audited board with ARGS
    python.write_text(f'#!/bin/sh\nshift 2\nexec "{sys.executable}" "{audit}" "$@"\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "executable", str(python))
    monkeypatch.setenv("N6_AUDIT_LOG", str(log))
    monkeypatch.setenv("PYTHONPYCACHEPREFIX", str(tmp_path / "pycache"))   # no cached bytecode: sources opened
    with simulated_board(BOARD, state=os.path.join(flashed, "build", "sim-board"),
                         firmware=ST_FIRMWARE if firmware else "", mode="COPY" if firmware else None) as port, \
            Client.open(port) as c:
        c.connect()
        size = c.model("network").inputs[0].nbytes
        c.run("network", [bytes(size)], IO_ONLY)
        c.run("network", [bytes(size)], PER_LAYER)
    code = tuple(os.path.join(ROOT, d) + os.sep for d in ("sim", "site_scons"))
    opened = {os.path.realpath(f) for f in log.read_text().split("\n") if f.startswith(code) and os.path.isfile(f)}
    assert os.path.realpath(os.path.join(ROOT, "sim", "programmer", "programmer_sim", "board_state.py")) in opened
    assert sorted(opened - {os.path.realpath(f) for f in sim_board_files()}) == []
