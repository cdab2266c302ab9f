"""A session that changes the model under one simulated board process (bench/soak.py --change):
each round flashes every model, resets the board through the simulated programmer and runs it.
Every run gives the host build's outputs of the model just flashed (none stale), and the board
process does not keep the emulators of the boots before (its resident memory after the last round
is within 12 MiB of the first, the allocator settling; one boot kept holds about 16 MiB)."""
import json
import os
import subprocess
import sys

import pytest

from conftest import copy_repo

pytestmark = pytest.mark.slow


def test_changing_models_gives_each_its_own_outputs_without_growing(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    report = tmp_path / "soak.json"
    proc = subprocess.run([sys.executable, os.path.join(repo, "bench", "soak.py"), "--models", "kws_mlp,big_mlp",
                           "--change", "3", "--json", str(report)], cwd=repo, capture_output=True, text=True,
                          timeout=1800)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    row, = json.loads(report.read_text())["rows"]
    assert row["fault"] == "" and row["stale"] == [] and row["outputs_identical"] and row["invokes"] == 6
    first, last = row["rss_kib_first_last"]
    assert last - first < 12 << 10, row["rss_kib"]
