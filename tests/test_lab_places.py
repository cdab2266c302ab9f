"""Places of a lab (n6.flash.lab) without a coordinator: what labgrid raises once a place is
acquired becomes one line naming the place, for every step that needs its board. The whole path,
through a local coordinator, is in tests/test_lab.py."""
import contextlib
import types

import pytest

from n6.errors import N6Error
from n6.flash import lab
from n6.flash.boards import LabPlace


def test_a_labgrid_error_after_the_place_is_acquired_is_one_line_naming_the_place(monkeypatch):
    from labgrid.remote.client import ServerError
    asked, released = [], []

    def orphaned(place):
        raise ServerError(f"place {place} has an orphaned resource (exporter bench disconnected?)")

    session = types.SimpleNamespace(loop=types.SimpleNamespace(run_until_complete=lambda coroutine: None),
                                    sync_with_coordinator=lambda: None, get_place=lambda name: name,
                                    get_target_resources=orphaned)
    monkeypatch.setattr(lab, "_session", lambda coordinator: contextlib.nullcontext(session))
    monkeypatch.setattr(lab, "_ask", lambda session, request, place: asked.append((request, place)))
    monkeypatch.setattr(lab.atexit, "register", lambda release, coordinator, places: released.append(places))
    monkeypatch.setattr(lab, "_DECLARED", {})
    monkeypatch.setattr(lab, "_ACQUIRED", {})
    lab.declare(["n6-lab-1", "n6-lab-2"], "127.0.0.1:20408", simulated=True)
    for place in ("n6-lab-2", "n6-lab-1"):        # each step asks; the error is the same, asked once
        with pytest.raises(N6Error) as e:
            lab.place_board(LabPlace(place, "127.0.0.1:20408"))
        assert str(e.value) == ("labgrid place n6-lab-1: place n6-lab-1 has an orphaned resource (exporter bench "
                                "disconnected?) (fix: check the place with labgrid-client -p n6-lab-1 show: its "
                                "exporter running, its resources matched (docs/lab.md))")
    assert asked == [("AcquirePlace", "n6-lab-1"), ("AcquirePlace", "n6-lab-2")]
    assert released == [["n6-lab-1", "n6-lab-2"]]      # both released at exit
