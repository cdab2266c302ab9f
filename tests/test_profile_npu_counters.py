"""`scons profile` of an image with a hardware epoch on the simulated board (npu_epoch.py: two
chains in epoch 1's blob): the stream-engine and bus-interface counters our firmware programs and
reads around each epoch (sim/board/n6board/npu_counters.py, firmware.py, server.py) reach
profile.json with the figures the chains' registers give, worked out by hand below from the
lengths and strides programmed (the NPU model's stated rules, npu.py: an engine is active one
cycle per 8 bytes it moves, rounded up; each contiguous run of its accesses is ceil(bytes / 8)
beats of 8 bytes, in bursts of 8 beats, the rest one burst each of 4, 2, 1; engines 0-4 on bus
interface 0, 5-9 on 1).

- STRENG0 reads 10 lines of 100 bytes, 128 apart: 1,000 bytes, 125 cycles; each line 13 beats
  (8 + 4 + 1): bus 0 reads 10 / 0 / 10 / 10 bursts of 1 / 2 / 4 / 8 beats, 130 beats = 1,040 bytes.
- STRENG6 writes 1,000 16-bit results in a row: 2,000 bytes, 250 cycles, 250 beats (31 x 8 + 2):
  bus 1 writes 0 / 1 / 0 / 31 bursts, 2,000 bytes.
- STRENG7 reads 3 lines of 100 bytes: 300 bytes, 38 cycles; bus 1 reads 3 / 0 / 3 / 3, 312 bytes.
- STRENG3 writes 300 bytes in a row: 38 cycles, 38 beats (4 x 8 + 4 + 2): bus 0 writes 0 / 1 / 1 / 4,
  304 bytes.
The network's other epochs run in software: nothing counted. ST's validation firmware on the DK
twin (opt-in) reads the same figures."""
import json
import os

import pytest

from conftest import copy_repo, scons
from npu_epoch import make_prebuilt

ENGINES = [(0, "input", 125), (3, "output", 38), (6, "output", 250), (7, "input", 38)]      # by engine
BUS = {"busif0": {"read_bytes": 1040, "write_bytes": 304, "read_bursts": [10, 0, 10, 10], "write_bursts": [0, 1, 1, 4]},
       "busif1": {"read_bytes": 312, "write_bytes": 2000, "read_bursts": [3, 0, 3, 3], "write_bursts": [0, 1, 0, 31]}}
IDLE = {"read_bytes": 0, "write_bytes": 0, "read_bursts": [0] * 4, "write_bursts": [0] * 4}
REAL = os.environ.get("N6_REAL_STEDGEAI")
BOARDS = ["own", pytest.param("twin", marks=pytest.mark.skipif(
    not REAL, reason="set N6_REAL_STEDGEAI to ST's test bed folder (ST's validation firmware)"))]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A copy of the repository with the prebuilt folder models/hw_epoch."""
    repo = copy_repo(tmp_path_factory.mktemp("hw_epoch"))
    make_prebuilt(os.path.join(repo, "models", "hw_epoch"))
    return repo


@pytest.mark.parametrize("board", BOARDS)
def test_the_hardware_epoch_reports_each_engines_cycles_and_each_interfaces_bursts(repo, board):
    """On the simulated board's own firmware, and (opt-in) on ST's validation firmware on the DK
    twin, which programs and reads the same counters with ST's code: the same figures."""
    firmware = [f"SIM_FIRMWARE={os.path.join(REAL, '2.2')}"] if board == "twin" else []
    scons(repo, "profile-hw_epoch", f"BUILD_DIR=build-{board}", *firmware, timeout=300)
    with open(os.path.join(repo, f"build-{board}", "hw_epoch", "profile", "profile.json")) as f:
        profile = json.load(f)
    first, *rest = profile["epochs"]
    assert (first["name"], first["kind"]) == ("epoch_1", "EC")
    assert [(s["id"], s["role"], s["cycles"]) for s in first["stream_engines"] or []] == ENGINES
    assert first["busiest_engine"]["id"] == 6
    bus = first["bus"]
    assert {i: {k: bus[i][k] for k in IDLE} for i in BUS} == BUS
    assert (bus["total"]["read_bytes"], bus["total"]["write_bytes"]) == (1040 + 312, 304 + 2000)
    for epoch in rest:
        assert epoch["kind"] == "SW" and epoch["stream_engines"] == []
        assert {i: {k: epoch["bus"][i][k] for k in IDLE} for i in BUS} == {i: IDLE for i in BUS}
