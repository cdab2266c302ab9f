"""The install-layout audit: every path the build reads from an ST Edge AI Core install is listed
in n6.stedgeai_install.read_paths(), and both the simulated install and a real one have each of
them at the same place, so both take one code path. Where they differ (the simulated runtime's
own ec_ops.c for ST's ecloader.c), each lists what it has."""
import fnmatch
import glob
import itertools
import os
import re
import shlex

import pytest

from n6.stedgeai_install import (CONF_SHARED_SOURCES, LL_ATON, NDEBUG_SOURCES, OPTIONAL_READ_PATHS, PLATFORM,
                                 RUNTIME_LIB_GLOB, SIMULATED_RUNTIME_SOURCES, ST_RUNTIME_SOURCES, SW_LIB_INC_SOURCES,
                                 is_simulated_install, read_paths)

from conftest import copy_repo, scons

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
needs_real = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")


def _missing(root, paths):
    return [p for p in paths if not glob.glob(os.path.join(root, p))]


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
def test_the_simulated_install_has_every_path_the_build_reads(sim_install, rel):
    from stedgeai_sim.install import runtime_lib_path
    root = sim_install(rel)
    assert [p for p in _missing(root, read_paths(simulated=True)) if p != RUNTIME_LIB_GLOB] == []
    assert is_simulated_install(root)     # its runtime sources are the simulated ones wherever it is
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


@pytest.mark.parametrize("rel", ["2.2", "3.0"])
def test_the_simulated_install_ships_the_c_sources_the_build_compiles_and_no_other(sim_install, rel):
    """No ST file name without ST's content: ST's ecloader.c (its blob loader) is not imitated, the
    simulated install's operator-list runner has a name of its own."""
    sources = sorted(os.listdir(os.path.join(sim_install(rel), LL_ATON)))
    assert [f for f in sources if f.endswith(".c")] == sorted(SIMULATED_RUNTIME_SOURCES + CONF_SHARED_SOURCES)


@needs_real
def test_a_real_install_has_every_path_the_build_reads():
    assert _missing(os.path.join(REAL, "2.2"), read_paths(simulated=False) + OPTIONAL_READ_PATHS) == []
    assert not is_simulated_install(os.path.join(REAL, "2.2"))


@needs_real
def test_the_real_runtime_sources_and_their_extras_are_those_of_st_makefile():
    """ST's relocatable-model makefile (GCC) links the LL_ATON objects in the order and with the
    per-file extras (-DNDEBUG, the software library's include folder) n6.stedgeai_install lists."""
    with open(os.path.join(REAL, "2.2", PLATFORM, "..", "..", "makefile_gcc")) as f:
        text = f.read()
    objs = re.findall(r"^OBJ \+= \$\(BUILD_DIR\)/(ll_\w+|ec\w*)\.o$", text, re.M)
    extra = re.search(r"^OBJ_EXTRA = (.*)$", text, re.M).group(1).split()
    rules = dict(re.findall(r"^\$\(BUILD_DIR\)/\w+\.o: *\$\{RT_ATON_DIR\}/(\w+\.c)\n(?:.*\n)*?\t\$\(CC\)(.*)$", text,
                            re.M))
    assert tuple(o + ".c" for o in objs) == ST_RUNTIME_SOURCES
    assert tuple(os.path.basename(o)[:-2] + ".c" for o in extra if "RT_ATON" not in o and "TARGET" not in o) == \
        CONF_SHARED_SOURCES
    assert sorted(s for s, cc in rules.items() if "-DNDEBUG" in cc) == sorted(NDEBUG_SOURCES)
    assert sorted(s for s, cc in rules.items() if "SW_LIB_INC_DIR" in cc) == \
        sorted(s for s in SW_LIB_INC_SOURCES if s in ST_RUNTIME_SOURCES)


def _declarations(path):
    """A C header's includes, function prototypes, typedefs and valued macros, each on one
    normalised line behind the #if / #ifdef / #ifndef conditions it is under (an #elif or #else
    branch's: the negation of every earlier branch of its #if, and its own; comments, extern,
    parameter spacing and the include guard left out): a declaration one header makes only under
    USE_FILES, the other always, differs."""
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", f.read(), flags=re.S)
    lines = [line.strip() for line in text.splitlines() if line.strip()]   # a comment between guard lines
    directives = [re.match(r"#\s*(\w+)\s*(.*)", line) for line in lines]
    guard = next((m[2] for m, after in zip(directives, directives[1:]) if m and m[1] == "ifndef"
                  and after and after[1] == "define" and after[2] == m[2]), None)
    levels: list[list[str]] = []     # per open #if: its branches' conditions so far ("": #else, the guard)
    chunks, out = [], []             # chunks: (conditions, code line)
    for line, d in zip(lines, directives):
        conditions = [" and ".join([f"not ({c})" for c in level[:-1]] + [level[-1]] * bool(level[-1]))
                      for level in levels]
        if not d:
            chunks.append((tuple(c for c in conditions if c), line))
            continue
        kind, rest = d[1], " ".join(d[2].split())
        where = "".join(f"[{c}] " for c in conditions if c)
        if kind in ("if", "ifdef", "ifndef"):
            levels.append(["" if kind == "ifndef" and rest == guard else f"{kind} {rest}"])
        elif kind in ("elif", "else"):
            levels[-1].append(f"if {rest}" if kind == "elif" else "")
        elif kind == "endif":
            levels.pop()
        elif kind == "include":
            out.append(f"{where}#include {rest}")
        elif kind == "define" and len(rest.split(None, 1)) == 2:
            out.append(f"{where}#define {rest}")
    for where, group in itertools.groupby(chunks, key=lambda chunk: chunk[0]):
        code = re.sub(r'extern\s+"C"\s*\{|^\s*\}|\bextern\b', " ", " ".join(line for _, line in group))
        statements = [re.sub(r"\s*([(),*])\s*", r"\1", " ".join(s.split())).strip("} ") for s in code.split(";")]
        out += ["".join(f"[{c}] " for c in where) + s for s in statements if s]
    return sorted(out)


@needs_real
@pytest.mark.parametrize("header", ["ecloader.h", "ec.h"])
def test_the_simulated_st_headers_declare_what_the_real_ones_do(sim_install, header):
    """The simulated install's ecloader.h (and the ec.h it includes) declare ST's interface, name for
    name and type for type, in their own words: a generated network.c includes it in either install."""
    real = _declarations(os.path.join(REAL, "2.2", LL_ATON, header))
    assert any("ec_reloc(" in d for d in real) or header == "ec.h"
    assert _declarations(os.path.join(sim_install("2.2"), LL_ATON, header)) == real


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
    listed = read_paths(simulated=True) + OPTIONAL_READ_PATHS
    unlisted = [u for u in sorted(used) if not any(fnmatch.fnmatch(u, p) for p in listed)]
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
