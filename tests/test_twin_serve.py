"""Naming ST's firmware for the simulated board (n6board --firmware, N6_SIM_FIRMWARE): an ELF as
it is; an install folder or `st` resolved to the variant the flash step would choose; anything
else a one-line error, and the board process then exits with status 2 without publishing a port."""
import os
import subprocess
import sys

import pytest

from conftest import SIM_BOARD
from n6.errors import N6Error
from n6board.dk.serve import resolve_firmware


def test_an_elf_is_taken_as_it_is(tmp_path):
    elf = tmp_path / "fw.elf"
    elf.write_bytes(b"\x7fELF")
    assert resolve_firmware(str(elf), [], None, "2.2", None) == str(elf)


def test_st_needs_the_install_that_stedgeai_core_dir_names(monkeypatch):
    monkeypatch.delenv("STEDGEAI_CORE_DIR", raising=False)
    with pytest.raises(N6Error, match="N6_SIM_FIRMWARE=st needs STEDGEAI_CORE_DIR"):
        resolve_firmware("st", [], None, "2.2", None)


def test_an_install_needs_a_flashed_image_to_choose_the_variant_for(tmp_path):
    with pytest.raises(N6Error, match="no image in the simulated board's flash"):
        resolve_firmware(str(tmp_path), [(b"\xff" * 16, None, "COPY")], None, "2.2", None)


def test_a_missing_firmware_is_one_line_and_status_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "n6board", "--state", str(tmp_path / "board"), "--firmware",
                           str(tmp_path / "missing.elf"), "--port-file", str(tmp_path / "port")],
                          env=dict(os.environ, PYTHONPATH=SIM_BOARD), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"n6board: {tmp_path / 'missing.elf'}: no such firmware ELF or ST Edge "
                                                "AI Core install (fix: name ST's validation firmware ELF or the "
                                                "install folder)"]
    assert not (tmp_path / "port").exists()
