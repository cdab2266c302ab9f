"""The npu_reloc tool's per-build state: what every model's image steps share is found once for
each set of what it is found from, not once per build folder."""
import os
import types

import pytest

from n6.releases import release

import site_tools.npu_reloc as npu_reloc


class _Env(dict):
    """The parts of an SCons environment _shared reads."""
    def subst(self, text):
        return text.replace("$BUILD_DIR", self["BUILD_DIR"])

    def StedgeaiInstall(self):
        return self["install"]

    def StedgeaiRuntimeLib(self):
        return os.path.join(self["install"][0], "runtime.a")

    def File(self, path):
        return path

    def N6FromContent(self, path, reader, signature):
        return reader(path)


def _env(**changes):
    values = {"BUILD_DIR": "build", "install": ("build/stedgeai-sim/2.2", release("2.2"), True),
              "BOARD": "stm32n6570-dk", "RELOC_ABSOLUTE_FLASH_POOLS": False, "RELOC_FLASH_SIZE": "8M",
              "RELOC_PARAMS_FLASH_SIZE": "56M", "RELOC_EXEC_RAM_SIZE": "none", "RELOC_EXT_RAM_SIZE": "none"}
    return _Env(values, **changes)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(npu_reloc, "_SHARED", {})
    monkeypatch.setattr(npu_reloc, "step_code", lambda env, step, modules, tool=None: types.SimpleNamespace(
        value=f"{env['BUILD_DIR']}:{step}"))


def test_one_shared_state_per_set_of_what_it_is_found_from():
    first = npu_reloc._shared(_env())
    assert npu_reloc._shared(_env()) is first
    assert npu_reloc._shared(_env(BUILD_DIR="b2")).prepare_code.value == "b2:prepare"
    assert npu_reloc._shared(_env(BOARD="nucleo-n657x0-q")) is not first
    assert dict(first.budgets)["flash"] == 8 << 20
    other_budget = npu_reloc._shared(_env(RELOC_FLASH_SIZE="4M"))      # the same build folder
    assert dict(other_budget.budgets)["flash"] == 4 << 20
    absolute = npu_reloc._shared(_env(RELOC_ABSOLUTE_FLASH_POOLS=True))
    assert absolute.image_area is not None and first.image_area is None
    assert absolute.absolute_flash_pools is True and first.absolute_flash_pools is False
    real = npu_reloc._shared(_env(install=("/opt/st/2.2", release("2.2"), False)))
    assert not real.simulated and real.runtime_lib == "/opt/st/2.2/runtime.a"
    v3 = npu_reloc._shared(_env(install=("build/stedgeai-sim/3.0", release("3.0"), True)))
    assert v3.atonn == tuple(release("3.0").atonn)
