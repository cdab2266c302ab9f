"""The install-layout audit: every path the build reads from an ST Edge AI Core install is listed
in n6.stedgeai_install.READ_PATHS, and both the simulated install and a real one have each of
them at the same place, so both take one code path."""
import fnmatch
import glob
import os
import shlex

import pytest

from n6.stedgeai_install import READ_PATHS, RUNTIME_LIB_GLOB

from conftest import copy_repo, scons

REAL = os.environ.get("N6_REAL_STEDGEAI", "")


def _missing(root):
    return [p for p in READ_PATHS if not glob.glob(os.path.join(root, p))]


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
def test_the_simulated_install_has_every_path_the_build_reads(sim_install, rel):
    from stedgeai_sim.install import runtime_lib_path
    root = sim_install(rel)
    assert [p for p in _missing(root) if p != RUNTIME_LIB_GLOB] == []
    assert fnmatch.fnmatch(runtime_lib_path(rel), RUNTIME_LIB_GLOB)   # the build compiles it there


@pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                    reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
def test_a_real_install_has_every_path_the_build_reads():
    assert _missing(os.path.join(REAL, "2.2")) == []


def test_the_build_reads_nothing_else_from_the_install(tmp_path):
    """Every install path on the command lines of a build (generate, compile, link) is listed."""
    repo = copy_repo(tmp_path / "repo")
    out = scons(repo, "VERBOSE=1", "kws_mlp").stdout
    root = os.path.join("build", "stedgeai-sim", "2.2") + os.sep   # absolute or relative to the project
    used = set()
    for line in out.splitlines():
        for arg in shlex.split(line) if root in line else []:
            at = arg.find(root)
            if at >= 0:
                used.add(os.path.normpath(arg[at + len(root):]))
    assert used, "no install path seen on the command lines"
    unlisted = [u for u in sorted(used) if not any(fnmatch.fnmatch(u, p) for p in READ_PATHS)]
    assert unlisted == []
