"""The install-layout audit: every path the build reads from an ST Edge AI Core install is listed
in n6.stedgeai_install.READ_PATHS, and both the simulated install and a real one have each of
them at the same place, so both take one code path."""
import fnmatch
import glob
import os
import shlex

import pytest

from n6.stedgeai_install import LL_ATON, OPTIONAL_READ_PATHS, PLATFORM, READ_PATHS, RUNTIME_LIB_GLOB

from conftest import copy_repo, scons

REAL = os.environ.get("N6_REAL_STEDGEAI", "")


def _missing(root, paths=READ_PATHS):
    return [p for p in paths if not glob.glob(os.path.join(root, p))]


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
def test_the_simulated_install_has_every_path_the_build_reads(sim_install, rel):
    from stedgeai_sim.install import runtime_lib_path
    root = sim_install(rel)
    assert [p for p in _missing(root) if p != RUNTIME_LIB_GLOB] == []
    assert fnmatch.fnmatch(runtime_lib_path(rel), RUNTIME_LIB_GLOB)   # the build compiles it there


def test_the_simulated_install_is_laid_out_again_only_when_its_sources_change(tmp_path):
    """Laid out when the build starts, like a tool install: once, then not again until what it is
    made from changes; an interrupted layout (no stamp) is redone, and stray files go."""
    from stedgeai_sim.install import STAMP, installed_files, sync
    root = str(tmp_path / "2.2")
    assert sync(root, "2.2", "/usr/bin/python3")
    assert not sync(root, "2.2", "/usr/bin/python3")
    launcher = next(p for p, src in installed_files("2.2").items() if src is None and "stedgeai" in p)
    assert sync(root, "2.2", "/opt/python")                         # the launcher names another Python
    assert "/opt/python" in open(os.path.join(root, launcher)).read()
    open(os.path.join(root, "stray.h"), "w").close()
    os.unlink(os.path.join(root, STAMP))                            # as if the last layout was interrupted
    assert sync(root, "2.2", "/opt/python")
    files = {os.path.relpath(os.path.join(d, f), root) for d, _, names in os.walk(root) for f in names}
    assert files == set(installed_files("2.2")) | {STAMP}


@pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                    reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")
def test_a_real_install_has_every_path_the_build_reads():
    assert _missing(os.path.join(REAL, "2.2"), READ_PATHS + OPTIONAL_READ_PATHS) == []


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
    unlisted = [u for u in sorted(used) if not any(fnmatch.fnmatch(u, p) for p in READ_PATHS + OPTIONAL_READ_PATHS)]
    assert unlisted == []
    # the include path is ST's makefile's, relative to the project (the same in every checkout):
    # the install's folders (LL_ATON, then the platform headers and their parent), then the model's
    # build folder, which the shared runtime objects (never reading the model's config) go without
    def includes(source):
        cc = next(shlex.split(line) for line in out.splitlines() if line.endswith(source))
        return [os.path.normpath(a[2:]) for a in cc if a.startswith("-I")]
    install = [os.path.join(root, p) for p in (LL_ATON, PLATFORM, os.path.dirname(PLATFORM))]
    assert includes(os.path.join(LL_ATON, "ll_aton.c")) == install
    assert includes("network_reloc.c") == install + [os.path.join("build", "kws_mlp", "reloc")]
