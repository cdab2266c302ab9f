"""The NPU model's control in process (sim/npu: npu.py, program.py, chain.py): the interrupt
register at reset, a unit disabled while it waits, a footprint outside every known pool, the
order in which the switch's two contexts are read. Written against the survivors of
tools/mutate.py (target `npu-control`)."""
import pytest

from npu_model.chain import wire
from npu_model.fixedpoint import NotModelled
from npu_model.npu import Npu

from test_npu_model import CTRL, EN, INTREG, RUNNING, STRENG, Memory, Ram, copy_program


def test_no_interrupt_is_pending_at_reset():
    assert Npu().read(INTREG) == 0


def test_a_unit_disabled_while_it_waits_stops_and_its_chain_never_starts():
    ram = Ram()
    npu = ram.attach(Npu())
    ram.write(0x3410_0000, bytes(range(1, 17)))
    copy_program(npu)
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) | EN)
    assert npu.read(STRENG(1) + CTRL) & RUNNING
    npu.write(STRENG(1) + CTRL, npu.read(STRENG(1) + CTRL) & ~EN)        # EN cleared, no CLR
    assert not npu.read(STRENG(1) + CTRL) & RUNNING
    npu.write(STRENG(0) + CTRL, npu.read(STRENG(0) + CTRL) | EN)
    assert npu.programs == [] and ram.read(0x3410_0100, 16) == bytes(16)


def test_a_footprint_in_no_known_pool_has_an_empty_location():
    npu = Npu(Memory(), mode="control")
    npu.locate = lambda address: None
    copy_program(npu)
    for i in (1, 0):
        npu.write(STRENG(i) + CTRL, npu.read(STRENG(i) + CTRL) | EN)
    program, = npu.programs
    assert [f.location for f in program.footprints] == ["", ""]
    assert [s["location"] for s in program.as_dict()["streams"]] == ["", ""]


def test_the_context_1_source_is_named_first_when_the_two_contexts_differ():
    """Whatever order the switch's routes are listed in."""
    for routes in ([("ARITH0", 0, 1, "STRENG2"), ("ARITH0", 0, 0, "STRENG1")],
                   [("ARITH0", 0, 0, "STRENG1"), ("ARITH0", 0, 1, "STRENG2")]):
        with pytest.raises(NotModelled, match=r"^ARITH0 port 0: fed by STRENG2 and STRENG1 in the switch's"):
            wire({"ARITH0": None}, routes)
    units = wire({"ARITH0": None}, [("ARITH0", 1, 1, "STRENG2"), ("ARITH0", 0, 0, "STRENG1")])
    assert units["ARITH0"].inputs == {0: "STRENG1", 1: "STRENG2"}
