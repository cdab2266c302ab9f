"""The seam between the product and the simulators of ST's tools: the one place that brings a
simulator's Python package into the build's process, by its path in the tree (n6.paths), without
touching sys.path. The product otherwise finds a simulated tool exactly as it finds the real one:
the simulated install by its folder, the simulated programmer by its executable, the simulated
board by its port. What it takes from here is what a real tool has no counterpart for: laying out
the simulated install, the simulated probe's serial number."""
import ast
import glob
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterable
from types import ModuleType

from .errors import N6Error
from .paths import SIM

PACKAGES = {"stedgeai_sim": os.path.join(SIM, "stedgeai", "stedgeai_sim"),
            "programmer_sim": os.path.join(SIM, "programmer", "programmer_sim"),
            "n6board": os.path.join(SIM, "board", "n6board"),
            "npu_model": os.path.join(SIM, "npu", "npu_model")}


def sources(package: str, recursive: bool = False) -> list:
    """The files a simulator package is made of (its Python, C and table files; `recursive`: its
    subpackages' too), sorted: a step whose result it makes reruns when one changes."""
    pattern = os.path.join(PACKAGES[package], "**" if recursive else "", "*.")
    return sorted(f for ext in ("py", "c", "txt") for f in glob.glob(pattern + ext, recursive=recursive))


def loaded_files(paths: Iterable[str]) -> list:
    """The files of the simulator modules the Python files `paths` load by name ("npu_model.ecblob"),
    sorted: each module's, its packages' __init__.py, those of the simulator modules it imports at
    any depth, and the package table files they name: what `paths` runs of them."""
    named = re.compile(r"""["']((?:%s)(?:\.\w+)+)["']""" % "|".join(PACKAGES))
    todo, files = [], set()
    for path in paths:
        with open(path, encoding="utf-8") as f:
            todo += named.findall(f.read())
    while todo:
        package, *rest = todo.pop().split(".")
        folder = os.path.join(PACKAGES[package], *rest)
        path = os.path.join(folder, "__init__.py") if os.path.isdir(folder) else folder + ".py"
        if path not in files and os.path.isfile(path):
            files.add(path)
            todo += _package_imports(path, package) + [".".join([package] + rest[:-1])] * bool(rest)
            files.update(_package_tables(path, package))
    return sorted(files)


def _package_imports(path: str, package: str) -> list:
    """The simulator modules that the file `path` of `package` imports (relative ones resolved; a
    name imported may be a module)."""
    within = os.path.relpath(os.path.dirname(path), PACKAGES[package])
    here = [package] + ([] if within == os.curdir else within.split(os.sep))
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] in PACKAGES):
            base = ".".join(here[:len(here) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            found += [base] + [f"{base}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] in PACKAGES]
    return found


def _package_tables(path: str, package: str) -> list:
    """The files of `package` other than Python that its file `path` names in a string."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [f for f in sources(package, recursive=True) if not f.endswith(".py")
            and re.search(r"""["']%s["']""" % re.escape(os.path.basename(f)), text)]


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
