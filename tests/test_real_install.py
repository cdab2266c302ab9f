"""Against a real ST Edge AI Core 2.2 install and real `stedgeai generate` outputs: for each sample
and variant, ST's own relocation flow (npu_driver) and our build on the same install; our prepared
sources must describe the same pools as ST's intermediates and the images must be identical (for a
board whose firmware reads the image clear of the samples' flash pool; on the DK, whose 2.2
firmware reads it where the pool lies, prepare moves the pool and nothing else changes).

Needs a test bed folder given by N6_REAL_STEDGEAI: `2.2/` (the install), `samples/<name>/` (generated
outputs; every folder there is a sample) and `npu_driver.sh` (ST's flow: -i NETWORK_C -o ABS_OUT
[--no-secure] [--split]). ST's outputs are cached in that folder, keyed by everything they depend on."""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import copy_repo, sample_as_model, scons

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(os.path.join(REAL, "2.2"))),
                                reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")


def _samples():
    """Every folder of the test bed's samples/, by the ST Edge AI Core release whose network.c it holds
    (the release branch its header names), so a sample folder added there is tested like the others."""
    folder = os.path.join(REAL, "samples")
    if not (REAL and os.path.isdir(folder)):
        return {}
    found = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "network.c")
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                branch = re.search(r'GIT_BRANCH\s+"STAI-([0-9.]+)"', f.read(4096))
            found[name] = branch.group(1) if branch else None
    return found


SAMPLES = _samples()
VARIANTS = {"secure": ([], []), "nonsecure": (["--no-secure"], ["RELOC_SECURE=0"]),
            "split": (["--no-secure", "--split"], ["RELOC_SECURE=0", "RELOC_SPLIT=1"])}
OPT_IN = "RELOC_ABSOLUTE_FLASH_POOLS=1"
CLEAR = "BOARD=pool-dk.toml"     # the DK with a firmware reading the image at 0x72000000, clear of the pools


def _install():
    return os.path.join(REAL, "2.2")


def _digest(paths, extra):
    """Of the files under `paths` (caches of Python bytecode left out) and `extra`."""
    h = hashlib.sha256(repr(extra).encode())
    for path in paths:
        walk = os.walk(path) if os.path.isdir(path) else [(os.path.dirname(path), [], [os.path.basename(path)])]
        for root, dirs, files in walk:
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for f in sorted(files):
                full = os.path.join(root, f)
                h.update(full.encode())
                with open(full, "rb") as fh:
                    h.update(hashlib.sha256(fh.read()).digest())
    return h.hexdigest()[:16]


def st_flow(sample, variant):
    """ST's build folder for (sample, variant), run once per set of inputs; (folder, log)."""
    args = VARIANTS[variant][0]
    sample_dir = os.path.join(REAL, "samples", sample)
    n6_reloc = os.path.join(_install(), "scripts", "N6_reloc")
    key = _digest([sample_dir, os.path.join(REAL, "npu_driver.sh"), os.path.join(n6_reloc, "resources"),
                   os.path.join(_install(), "Middlewares")] +
                  sorted(os.path.join(n6_reloc, f) for f in os.listdir(n6_reloc) if f.endswith(".py")), args)
    out = os.path.join(REAL, ".n6-st-cache", f"{sample}-{variant}-{key}")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out + ".lock", "w") as lock:      # test workers in parallel: one runs ST's flow, the others wait
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(out, "done")):   # "done" is written last: a broken run is redone
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            proc = subprocess.run(["sh", os.path.join(REAL, "npu_driver.sh"), "-i",
                                   os.path.join(sample_dir, "network.c"), "-o", os.path.join(out, "build"), *args],
                                  capture_output=True, text=True, timeout=600)
            assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr
            with open(os.path.join(out, "log"), "w") as f:
                f.write(proc.stdout + proc.stderr)
            open(os.path.join(out, "done"), "w").close()
    with open(os.path.join(out, "log")) as f:
        return os.path.join(out, "build"), f.read()


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """The project with the samples as prebuilt models and nothing else."""
    repo = copy_repo(tmp_path_factory.mktemp("real") / "repo")
    shutil.rmtree(os.path.join(repo, "models"))
    for sample in SAMPLES:
        sample_as_model(repo, REAL, sample)
    with open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")) as f:
        text = f.read()
    assert text.count("network = 0x71000000") == 1 and text.count("params = 0x71800000") == 1   # rewritten below
    with open(os.path.join(repo, "pool-dk.toml"), "w") as f:
        f.write(text.replace("network = 0x71000000", "network = 0x72000000")
                .replace("params = 0x71800000", "params = 0x72800000"))
    return repo


def our_build(repo, sample, variant, *extra, check=True):
    os.environ["STEDGEAI_CORE_DIR"] = _install()
    try:
        return scons(repo, f"BUILD_DIR=build-{variant}", *VARIANTS[variant][1], *extra, sample, check=check)
    finally:
        del os.environ["STEDGEAI_CORE_DIR"]


# -- what ST's intermediates say ---------------------------------------------------------------------

_ST_DESC = re.compile(r'\{ \.name="(\w+)", \.flags=0x([0-9a-f]+)UL, \.foff=(\d+)'
                      r', \.dst=0x([0-9a-f]+)UL, \.size=(\d+) \}')
_OUR_DESC = re.compile(r'\{\.name = "(\w+)", \.flags = 0x([0-9A-F]+), \.foff = (\d+)'
                       r', \.dst = 0x([0-9A-F]+), \.size = (\d+)\}')
_ST_CONF = re.compile(r"#define (\w+)\s+\(?(\"[^\"]*\"|\w+)")


def descriptors(text, pattern):
    return [(n, int(fl, 16), int(fo), int(d, 16), int(s)) for n, fl, fo, d, s in pattern.findall(text)]


def conf(text):
    return {k: v.rstrip("UL") if not v.startswith('"') else v for k, v in _ST_CONF.findall(text)}


def _read(*parts):
    with open(os.path.join(*parts)) as f:
        return f.read()


def _footerless(text, marker):
    return text[:text.rindex(marker)].rstrip()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("sample", [s for s, rel in SAMPLES.items() if rel == "2.2"])
def test_images_and_prepared_sources_equal_st(repo, sample, variant):
    st_dir, _ = st_flow(sample, variant)
    our_build(repo, sample, variant, OPT_IN, CLEAR)
    ours = os.path.join(repo, f"build-{variant}", sample)
    prep = os.path.join(ours, "reloc")
    # (a) prepared sources: same pools, flags, offsets, sizes; same rt_ctx figures; same network code
    st_mp, our_mp = _read(st_dir, "network_reloc_mempools.c"), _read(prep, "network_reloc_mempools.c")
    assert descriptors(our_mp, _OUR_DESC) == descriptors(st_mp, _ST_DESC)
    st_conf, our_conf = conf(_read(st_dir, "network_reloc_conf.h")), conf(_read(prep, "network_reloc_conf.h"))
    for key in ("ACTS_SZ", "PARAMS_SZ", "EXT_RAM_SZ", "C_NAME", "C_FCT_SUFFIX", "RUNTIME_DESC", "RUNTIME_VERSION_DEV"):
        assert our_conf[key] == st_conf[key], key
    import json
    assert json.load(open(os.path.join(prep, "network_reloc_params.json")))["size"] == int(st_conf["PARAMS_BIN_SZ"])
    assert _footerless(_read(prep, "network_reloc.c"), "/* Relocatable-image objects") == \
        _footerless(_read(st_dir, "network_reloc.c"), "#if defined(BUILD_AI_NETWORK_RELOC)")
    # (b) the images, byte for byte
    for name in ("network_rel.bin",) + (("network_rel_params.bin",) if variant == "split" else ()):
        with open(os.path.join(ours, name), "rb") as a, open(os.path.join(st_dir, name), "rb") as b:
            assert a.read() == b.read(), name
    # both accepted by the project's checker, XIP and COPY
    from n6.reloc.check import check_file
    for folder in (ours, st_dir):
        params = os.path.join(folder, "network_rel_params.bin") if variant == "split" else None
        _, modes = check_file(os.path.join(folder, "network_rel.bin"), params)
        assert [m.mode for m in modes] == ["XIP", "COPY"]
    # and by the flash gate against ST's validation firmware that loads it, read from its ELF
    from n6.board import load_board
    from n6.board_files import BOARDS_DIR
    from n6.flash.gate import check_firmware
    from n6.flash.validation_firmware import installed_firmware
    from n6.reloc.image import Image
    board = load_board(os.path.join(BOARDS_DIR, "stm32n6570-dk.toml"))
    path = os.path.join(ours, "network_rel.bin")
    data = open(path, "rb").read()
    for copy_mode in (False, True):
        fw = installed_firmware(_install(), "2.2", Image.parse(data, path), board, copy_mode)
        assert fw.source.endswith("-copy.elf" if copy_mode else "-xip.elf")
        assert check_firmware(path, data, fw, 27 << 20, "b") == \
            ([] if variant == "secure" else [f"{path}: non-secure image on a secure firmware "
                                             "(the loader warns, installs)"])


@pytest.mark.parametrize("sample", [s for s, rel in SAMPLES.items() if rel == "2.2"])
def test_on_the_dk_the_pool_moves_out_of_the_image_and_nothing_else_changes(repo, sample):
    """ST's 2.2 firmware reads the image at 0x71000000, where the sample's pool lies: the pool
    moves to the params region (0x71800000), network.c's addresses inside it with it (its pool is
    under 1 MB: ST's `0x710.....` become `0x718.....`); the descriptors are ST's but that one's."""
    st_dir, _ = st_flow(sample, "secure")
    proc = our_build(repo, sample, "secure", OPT_IN, "BUILD_DIR=build-moved")
    assert f"  MOVE     models/{sample}/network.c: absolute flash pool 'xSPI2' 0x71000000 → 0x71800000, clear of the " \
        "image the firmware reads at 0x71000000" in proc.stdout.splitlines()
    prep = os.path.join(repo, "build-moved", sample, "reloc")
    st = descriptors(_read(st_dir, "network_reloc_mempools.c"), _ST_DESC)
    assert descriptors(_read(prep, "network_reloc_mempools.c"), _OUR_DESC) == \
        [d[:3] + ((0x71800000,) if d[0] == "xSPI2" else d[3:4]) + d[4:] for d in st]
    assert _footerless(_read(prep, "network_reloc.c"), "/* Relocatable-image objects") == \
        _footerless(_read(st_dir, "network_reloc.c"), "#if defined(BUILD_AI_NETWORK_RELOC)").replace("0x710", "0x718")


@pytest.mark.parametrize("sample", [s for s, rel in SAMPLES.items() if rel == "2.2"])
def test_absolute_flash_pool_stops_without_the_opt_in(repo, sample):
    proc = our_build(repo, sample, "secure", "BUILD_DIR=build-noopt", check=False)
    assert proc.returncode != 0
    err = [line for line in proc.stderr.splitlines() if "scons: ***" in line]
    assert len(err) == 1 and re.search(f"models/{sample}/network.c: absolute pool 'xSPI2' at 0x7[0-9A-F]{{7}} is in "
                                       "read-only external flash", err[0])
    assert "USEMODE_RELATIVE" in err[0] and "Traceback" not in proc.stderr
    assert not os.path.exists(os.path.join(repo, "build-noopt", sample, "network_rel.bin"))


def test_older_release_output_prepares_like_st_but_stops_with_the_version_message(repo):
    from n6.network_c import parse_network_c
    from n6.reloc.pools import TYPE_UNUSED, pools_of
    st_dir, log = st_flow("facereco", "secure")
    sample = os.path.join(REAL, "samples", "facereco")
    net = parse_network_c(os.path.join(sample, "network.c"))
    pools = pools_of(net, [f[:-4] for f in os.listdir(sample) if f.endswith(".raw")])
    ours = [(p.name, p.flags, p.dst, p.used) for p in pools if p.type != TYPE_UNUSED]
    theirs = [(n, fl, d, s) for n, fl, _, d, s in descriptors(_read(st_dir, "network_reloc_mempools.c"), _ST_DESC)]
    assert ours == theirs
    st_conf = conf(_read(st_dir, "network_reloc_conf.h"))
    assert (sum(p.rw for p in pools) == int(st_conf["ACTS_SZ"])
            and sum(p.const for p in pools) == int(st_conf["PARAMS_SZ"]))
    proc = our_build(repo, "facereco", "secure", OPT_IN, check=False)
    assert proc.returncode != 0
    assert "models/facereco/network.c: generated by ST Edge AI Core 2.1 (LL_ATON 1.1.0-31): the image would carry " \
        "that runtime version and the install's 2.2 runtime's loader refuses it" in proc.stderr


def test_summary_counts_got_words_like_st(repo):
    st_dir, log = st_flow("nucleo_mnv1", "secure")
    proc = our_build(repo, "nucleo_mnv1", "secure", OPT_IN, "BUILD_DIR=build-got")
    st_got = int(re.search(r"got size = \d+ - (\d+) items", log).group(1))
    assert f"GOT {st_got}" in proc.stdout


if __name__ == "__main__":   # warm ST's cache: python tests/test_real_install.py
    for s in SAMPLES:
        for v in VARIANTS:
            print(s, v, st_flow(s, v)[0], file=sys.stderr)
