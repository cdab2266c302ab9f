"""ST's loader as the judge of our checker (needs N6_REAL_STEDGEAI): ST's `ll_aton_reloc_network.c`
built for the host (tests/st_loader.py) and n6.reloc.check install the same damaged images
(tests/reloc_mutations.py, seeded) at the same addresses, in XIP and in COPY mode. Ours must refuse
whatever ST's refuses, with its error name, or faults on; where ST's installs, ours must install the
same bytes or refuse by one of its own rules, each listed in ALLOWED with why."""
import collections
import os
import zlib

import pytest

import reloc_mutations
import st_loader
from n6.reloc import check
from n6.reloc.image import Header, Image, off

from conftest import copy_repo, scons

pytestmark = pytest.mark.skipif(bool(st_loader.unavailable()), reason=st_loader.unavailable() or "")

MODELS = ("kws_mlp", "big_mlp", "tiny_prebuilt")
SPLIT = ("kws_mlp",)

# Our rules (LoaderError.rule) where ST's loader installs what we refuse, and why we refuse it.
ALLOWED = {
    "params_crc": "rt_ctx's params size and CRC-32 must describe the params: ST's loader never reads them, and "
                  "runs the model on whatever weights it is given",
    "past_file": "the loader reads beyond the image or params file: on the board that is whatever lies next in "
                 "flash (the harness maps whole pages, so a few bytes past the end go unseen there too)",
    "segments": "a header word outside its segment: ST's loader masks segment bits away, so the header no longer "
                "says what the linker wrote",
    "data_start": "data_start is not the RAM segment's start: the loader copies the RAM segment from offset 0 "
                  "whatever the header says",
    "sections": "data, GOT and .bss out of order: the loader relocates a GOT outside the data it copied, or an "
                "empty one, and clears .bss over the GOT",
    "got": "a GOT bound not word-aligned: the loader walks the GOT by words from got_start",
    "rel_table": "a REL table that ends before it starts or inside an entry: the loader relocates nothing, or "
                 "reads half an entry from what follows",
    "rel_aligned": "a REL site not word-aligned: the loader rewrites a word straddling two (the Cortex-M55 "
                   "allows the unaligned access), which no linker emits",
    "rel_segment": "a REL site neither in RAM nor in the RO part: the loader takes it for a RAM site",
    "rel_range": "a REL site past its segment: the loader writes into the 8-byte round-up of the exec RAM it "
                 "asked for, or (COPY) into the RAM part, not where the linker put a pointer",
    "tables": "rt_ctx or the pool table outside the data image: the loader reads them from what follows",
    "entries": "an entry point that is not Thumb code of the RO part: the loader installs it, the first call "
               "faults (the loader never calls one)",
    "pools": "a pool takes its content from outside the params: the loader rebases the weights or copies from "
             "another place, and the model runs on wrong numbers",
    "params_size": "a split params file of another size than the image declares: bytes before the params shift "
                   "every pool the loader rebases, and the model runs on wrong numbers",
}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    """(label, image bytes, params path or None, params bytes or None) of each valid image."""
    repo = copy_repo(tmp_path_factory.mktemp("judge") / "repo")
    scons(repo, *MODELS)
    scons(repo, "BUILD_DIR=build-split", "RELOC_SECURE=0", "RELOC_SPLIT=1", *SPLIT)
    out = []
    for build, models, split in (("build", MODELS, False), ("build-split", SPLIT, True)):
        for model in models:
            path = os.path.join(repo, build, model, "network_rel.bin")
            params_path = path.replace(".bin", "_params.bin") if split else None
            with open(path, "rb") as f:
                data = f.read()
            params = open(params_path, "rb").read() if split else None
            out.append((model + ("-split" if split else ""), data, params_path, params))
    return out


@pytest.fixture(scope="module")
def judge(tmp_path_factory):
    return st_loader.build(str(tmp_path_factory.mktemp("st-loader")))


def ours(loader, data, params, mode, placed, fw):
    """Our checker on the addresses the harness used: "NONE" and the install, or the refusal."""
    cfg = check.Config(placed["exec"], loader.exec_size, placed["ext"], loader.ext_size, placed["params"],
                       (check.MODE_XIP if mode == "XIP" else check.MODE_COPY) | check.MODE_CLEAR)
    try:
        return "NONE", check.install(data, placed["file"], cfg, fw, params)
    except check.LoaderError as e:
        return e.name, e


def disagreement(st, name, result, data):
    """Why this pair of verdicts is wrong, or None."""
    if st.name == "crash":
        return None if name != "NONE" else f"ST's loader faults ({st.log.splitlines()[-1]}), ours installs"
    if st.refused:
        return None if name == st.name else f"ST's loader says {st.name} ({st.log.splitlines()[-1]}), ours " + \
            ("installs" if name == "NONE" else f"says {name}: {result.detail}")
    if name != "NONE":
        return None if result.rule in ALLOWED else f"ST's loader installs, ours refuses: {result}"
    h = Header.parse(data, 24)
    got = (result.ram_base, result.ro_base, zlib.crc32(result.memory.read(result.ram_base, off(h.bss_end))),
           zlib.crc32(result.memory.read(result.ro_base, off(h.data_data))))
    want = tuple(st.installed[k] for k in ("ram", "rom", "rw_crc", "ro_crc"))
    return None if got == want else f"installed differently: ours {got}, ST's {want}"


def test_st_loader_judges_the_built_images_and_a_fault(bases, judge):
    for label, data, params_path, _ in bases:
        for mode in ("XIP", "COPY"):
            v = judge.judge(data, mode, params_path)
            assert v.name == "NONE", (label, mode, v.log)
    label, data, _, _ = bases[0]
    img = Image.parse(data)
    far = reloc_mutations.with_word(data, off(img.header.rel_start), 0x4010_0000)   # a REL site 1 MB into RAM
    assert judge.judge(far, "XIP").name == "crash"
    cpu = reloc_mutations.with_word(data, 4, img.header.flags ^ 1)
    v = judge.judge(cpu, "XIP")
    assert v.name == "INVALID_BIN" and "CPUID" in v.log


def test_ours_refuses_whatever_st_loader_refuses(bases, judge, tmp_path):
    table, wrong, rules, count = collections.Counter(), [], collections.Counter(), 0
    for label, data, params_path, params in bases:
        img = Image.parse(data, params=params)
        fw = check.Firmware.matching(img)       # the firmware the judge is built as (async, secure, dbg-info)
        cases = [(name, bad, params_path, params) for name, bad in reloc_mutations.mutations(data, img)]
        for name, bad_params in reloc_mutations.prepended_params(params) if params else ():
            path = tmp_path / f"{label}-{name}.bin"
            path.write_bytes(bad_params)
            cases.append((name, data, str(path), bad_params))
        for name, bad, bad_params_path, bad_params in cases:
            count += 1
            for mode in ("XIP", "COPY"):
                st = judge.judge(bad, mode, bad_params_path)
                verdict, result = ours(judge, bad, bad_params, mode, st.placed, fw)
                table[st.name, verdict] += 1
                if st.name == "NONE" and verdict != "NONE":
                    rules[result.rule] += 1
                why = disagreement(st, verdict, result, bad)
                if why:
                    wrong.append(f"{label}/{name} {mode}: {why}")
    summary = "\n".join(f"  ST {s:13} ours {o:13} {n:5}" for (s, o), n in sorted(table.items())) + \
        "\n  stricter by rule: " + ", ".join(f"{r} {n}" for r, n in rules.most_common())
    print(f"\n{count} mutations x 2 modes:\n{summary}")
    assert count >= 500
    assert not wrong, f"{len(wrong)} disagreements:\n" + "\n".join(wrong[:40]) + "\n" + summary
    assert set(rules) == set(ALLOWED), "allowed rules never seen (stale reasons): " + \
        ", ".join(sorted(set(ALLOWED) - set(rules)))
