"""Every DMA-only hardware chain of the test bed's samples moves its bytes through the stream-engine
model: blazeface and nucleo_mnv1 as ST's 2.2 images on the simulated board (control mode), among
them those of each epoch whose network.c `Enable_epoch_<N>_all_units` list holds stream engines
only; facereco's
hardware epochs, all in its three epoch-controller blobs (network_ecblobs.h), executed through
the register model. A chain that does not move is listed in `not_computed` with the reason.

Needs the test bed named by N6_REAL_STEDGEAI."""
import os
import pytest

from test_npu_ecblob import header_blobs
from test_npu_real import control_run, enabled_units
from test_real_install import REAL, SAMPLES

pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
RAM, RAM_SIZE = 0x3400_0000, 4 << 20
BLOB_AT = 0x3800_0000


def dma_only(programs):
    return [p for p in programs if all(u.kind == "STRENG" for u in p.units)]


def not_moved(npu, program):
    """The reasons `not_computed` gives for the writing engines of `program` (none: it moved)."""
    reasons = {(e["epoch"], e["engine"]): e["units"] for e in npu.not_computed}
    return [reasons[(program.label, f.engine)] for f in program.footprints if (program.label, f.engine) in reasons]


@pytest.mark.parametrize("sample", [s for s in ("blazeface", "nucleo_mnv1") if SAMPLES.get(s) == "2.2"])
def test_every_dma_only_epoch_of_a_real_image_moves_its_bytes(sample):
    model = control_run(sample)
    chains = dma_only(model.npu.programs)
    streng_only = {n for n, units in enabled_units(sample).items() if all(u.startswith("STRENG") for u in units)}
    assert streng_only <= {int(p.label.split()[1]) for p in chains}     # and in epochs with compute chains
    assert [(p.label, not_moved(model.npu, p)) for p in chains if not_moved(model.npu, p)] == []
    assert len(chains) == {"blazeface": 15, "nucleo_mnv1": 0}[sample]


def blobs(sample):
    path = os.path.join(REAL, "samples", sample, "network_ecblobs.h")
    if not os.path.isfile(path):
        pytest.skip(f"the test bed has no {sample} blobs")
    return header_blobs(path)


def test_every_chain_of_facereco_s_blobs_is_dma_only_and_moves_its_bytes():
    import numpy as np
    from npu_model.npu import Npu
    from npu_model.registers import aton_map
    ram = bytearray(np.random.default_rng(30).integers(0, 256, RAM_SIZE, dtype=np.uint8).tobytes())
    before = bytes(ram)
    blob = {}

    def read(address, n):
        if RAM <= address < RAM + RAM_SIZE:
            return bytes(ram[address - RAM:address - RAM + n])
        assert BLOB_AT <= address < BLOB_AT + len(blob["bytes"]), hex(address)
        return blob["bytes"][address - BLOB_AT:address - BLOB_AT + n]

    def write(address, data):
        assert RAM <= address < RAM + RAM_SIZE, hex(address)
        ram[address - RAM:address - RAM + len(data)] = data

    npu = Npu(write, mode="control")
    npu.read_memory = read
    unit = aton_map().units["EPOCHCTRL"]
    for data in blobs("facereco").values():
        blob["bytes"] = data
        npu.write(unit.base + unit.registers["ADDR"].offset, BLOB_AT)
        npu.write(unit.base + unit.registers["CTRL"].offset, 1)
        npu.write(unit.base + unit.registers["CTRL"].offset, 0)
    assert npu.stopped is None
    chains = dma_only(npu.programs)
    assert len(chains) == len(npu.programs) == 4
    assert [(p.label, not_moved(npu, p)) for p in chains if not_moved(npu, p)] == []
    for p in chains:                                  # the writer's bytes are the reader's, in a new order
        source, dest = sorted(p.footprints, key=lambda f: f.direction)     # "read" < "write"
        got = b"".join(ram[a - RAM:a - RAM + n] for a, n in dest.segments)
        sent = b"".join(before[a - RAM:a - RAM + n] for a, n in source.segments)
        was = b"".join(before[a - RAM:a - RAM + n] for a, n in dest.segments)
        assert sorted(got) == sorted(sent) and got != was, p.label
