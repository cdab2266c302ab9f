"""The seam between the product and the simulators of ST's tools: the one place that brings a
simulator's Python package into the build's process, by its path in the tree (n6.paths), without
touching sys.path. The product otherwise finds a simulated tool exactly as it finds the real one:
the simulated install by its folder, the simulated programmer by its executable, the simulated
board by its port. What it takes from here is what a real tool has no counterpart for: laying out
the simulated install, the simulated probe's serial number."""
import glob
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable
from types import ModuleType

from .code_closure import CodeTree, References
from .errors import N6Error
from .paths import N6, SIM

PACKAGES = {"stedgeai_sim": os.path.join(SIM, "stedgeai", "stedgeai_sim"),
            "programmer_sim": os.path.join(SIM, "programmer", "programmer_sim"),
            "n6board": os.path.join(SIM, "board", "n6board"),
            "npu_model": os.path.join(SIM, "npu", "npu_model")}
CODE = CodeTree({**PACKAGES, "n6": N6}, loaded=set(PACKAGES))   # what a simulator runs


def sources(package: str) -> list:
    """The Python files of a simulator package (not its subpackages'), sorted."""
    return sorted(glob.glob(os.path.join(PACKAGES[package], "*.py")))


def code_files(paths: Iterable[str], references: Callable[[str], References | None] | None = None) -> list:
    """The files the Python files `paths` run, sorted: themselves, their packages' __init__.py,
    the simulator and n6 modules they import or load by name ("npu_model.ecblob") at any depth,
    and the simulator packages' table and C files those name (CODE; `references`: CodeTree's)."""
    return sorted(CODE.closure([CODE.module_of(p) for p in paths], references))


def probe_serial(state: str) -> str:
    """The probe serial of the simulated board whose state folder is `state`: its probe file's, else
    (no probe file yet) its board's factory serial (programmer_sim.board_state.board_number); a
    damaged probe file is one line."""
    try:
        return load("programmer_sim.board_state").BoardState(state).probe()["serial"]
    except ValueError as e:
        raise N6Error(os.path.join(state, "probe.json"), f"the simulated board's probe file is damaged: {e}",
                      "remove it (the board gets its probe serial again; its flash is kept)") from None


def load(module: str) -> ModuleType:
    """The simulator module `module` ("stedgeai_sim.install", ...)."""
    package = module.split(".")[0]
    if package not in sys.modules:
        folder = PACKAGES[package]
        spec = importlib.util.spec_from_file_location(package, os.path.join(folder, "__init__.py"),
                                                      submodule_search_locations=[folder])
        assert spec is not None and spec.loader is not None   # a .py file always has its loader
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[package] = loaded
        spec.loader.exec_module(loaded)
    return importlib.import_module(module)
