"""Absolute flash pools of networks with epoch-controller blobs, built for a 2.x firmware reading
the image where the pool lies (the DK, RELOC_ABSOLUTE_FLASH_POOLS=1). The simulated tool's blobs
hold no address (each epoch's label and end interrupt; its operators' pool bases are C in
_ecblobs.h): the pool moves as network.c's does. ST's generated blobs write the pools' addresses
into the units' registers and carry no relocation table: their pools stay, with one line saying why."""
import json
import os
import re

import pytest

from conftest import absolute_flash_pool, copy_repo, scons

ABSOLUTE = "RELOC_ABSOLUTE_FLASH_POOLS=1"
REAL = os.environ.get("N6_REAL_STEDGEAI")


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """cifar_cnn (epoch controller) with its xSPI2 weights pool absolute at 0x71000000."""
    repo = copy_repo(tmp_path_factory.mktemp("ecpools"))
    absolute_flash_pool(repo, "cifar_cnn")
    return repo


def _validate(repo, build, *args):
    proc = scons(repo, "validate-cifar_cnn", ABSOLUTE, f"BUILD_DIR={build}", *args)
    with open(os.path.join(repo, build, "cifar_cnn", "run", "validate.json")) as f:
        return proc.stdout, [o["max_abs_lsb"] for o in json.load(f)["outputs"]]


def test_a_blob_networks_pool_moves_and_it_validates_at_0_lsb(repo):
    out, lsb = _validate(repo, "build")
    assert "  MOVE     build/cifar_cnn/st_ai_output/network.c: absolute flash pool 'xSPI2' 0x71000000 → 0x71800000, " \
        "clear of the image the firmware reads at 0x71000000" in out.splitlines()
    reloc = os.path.join(repo, "build", "cifar_cnn", "reloc")
    with open(os.path.join(reloc, "network_reloc_ecblobs.h")) as f:
        blobs = f.read()
    assert "ec_set_pool_base(2, (uintptr_t)(0x71800000UL));" in blobs and "0x71000000" not in blobs
    with open(os.path.join(repo, "build", "cifar_cnn", "flash", "flash.json")) as f:
        assert [(i["role"], i["address"]) for i in json.load(f)["images"]] == \
            [("pool", "0x71800000"), ("network", "0x71000000")]
    assert lsb == [0]


@pytest.mark.skipif(not REAL, reason="needs N6_REAL_STEDGEAI (ST's 2.2 validation firmware for the DK twin)")
def test_on_sts_firmware_on_the_twin_the_moved_pool_validates_at_0_lsb(repo):
    out, lsb = _validate(repo, "build-twin", f"SIM_FIRMWARE={os.path.join(REAL, '2.2')}")
    assert "  MOVE     build-twin/cifar_cnn/st_ai_output/network.c: absolute flash pool 'xSPI2' 0x71000000 → " \
        "0x71800000, clear of the image the firmware reads at 0x71000000" in out.splitlines()
    assert lsb == [0]


def test_a_blob_word_inside_the_pool_keeps_it_with_one_line(repo):
    """A blob writing a word inside the pool (as ST's compiler's blobs write the stream engines'
    addresses; here cifar_cnn's outputs as a prebuilt folder, one blob given such a write):
    PREPARE moves nothing and says why in one line; network.c and _ecblobs.h stay ST's."""
    import shutil
    scons(repo, "cifar_cnn", ABSOLUTE, "BUILD_DIR=build-kept")
    folder = os.path.join(repo, "models", "cifar_kept")
    shutil.copytree(os.path.join(repo, "build-kept", "cifar_cnn", "st_ai_output"), folder)
    with open(os.path.join(folder, "network_ecblobs.h")) as f:
        text = f.read()
    blob = re.search(r"static const uint64_t _ec_blob_1\[2\] = \{\n  0x00000002ca057a7aULL, 0x(\w{16})ULL,", text)
    assert blob, text
    label, irq = int(blob.group(1), 16) & 0xFFFF_FFFF, int(blob.group(1), 16) >> 32
    write = 5 << 26 | 3 << 16 | 31 << 10       # a write to register 3 of unit 5, [31:0]: 0x71000200 follows
    with open(os.path.join(folder, "network_ecblobs.h"), "w") as f:
        f.write(text.replace(blob.group(0), "static const uint64_t _ec_blob_1[3] = {\n  0x00000004ca057a7aULL, "
                             f"0x{write << 32 | label:016x}ULL, 0x{irq << 32 | 0x7100_0200:016x}ULL,"))
    try:
        out = scons(repo, "cifar_kept", ABSOLUTE, "BUILD_DIR=build-kept").stdout.splitlines()
    finally:
        shutil.rmtree(folder)
    assert "  WARNING  models/cifar_kept/network.c: absolute flash pool 'xSPI2' not moved: its epoch-controller " \
        "blobs hold 1 word inside it (first 0x71000200), and ST's generated blobs carry no relocation table that " \
        "would say which are addresses; the image overwrites the pool where the firmware reads it (make the pool " \
        "USEMODE_RELATIVE, or give a firmware that reads the image elsewhere)" in out
    assert not any(line.startswith("  MOVE") for line in out)
    reloc = os.path.join(repo, "build-kept", "cifar_kept", "reloc")
    with open(os.path.join(reloc, "network_reloc.c")) as f, open(os.path.join(reloc, "network_reloc_ecblobs.h")) as h:
        assert "0x71800000" not in f.read() + h.read()


@pytest.mark.skipif(not REAL, reason="needs N6_REAL_STEDGEAI (ST's epoch-controller blobs in ec-workspace)")
def test_sts_blobs_write_their_pools_addresses():
    """ST's compiler's blobs (ec-workspace, its xSPI2 pool absolute at 0x70380000) write addresses
    inside the pool as register values: moving that pool would need their relocation table."""
    from n6.reloc.move import Moved, blob_refusal, c_blob_words
    with open(os.path.join(REAL, "ec-workspace", "default_ecblobs.h")) as f:
        words = c_blob_words(f.read())
    size = os.path.getsize(os.path.join(REAL, "ec-workspace", "atonbuf.xSPI2.raw"))
    why = blob_refusal(words, [Moved("xSPI2", 0x7038_0000, 0x7180_0000, size)], "default.c")
    assert why and why.startswith("default.c: absolute flash pool 'xSPI2' not moved: its epoch-controller blobs "
                                  "hold 377 words inside it (first 0x704A4680)")



SPLIT_BLOBS = ("RELOC_SPLIT=1", "RELOC_ECBLOB_IN_PARAMS=1")


@pytest.fixture(scope="module")
def split_blobs(repo):
    """cifar_cnn validated with SPLIT_BLOBS into build-split-blobs, once: (stdout, LSBs, model folder)."""
    out, lsb = _validate(repo, "build-split-blobs", *SPLIT_BLOBS)
    return out, lsb, os.path.join(repo, "build-split-blobs", "cifar_cnn")


def test_split_params_led_by_blobs_validate_with_the_moved_pool(split_blobs):
    """RELOC_SPLIT=1 with RELOC_ECBLOB_IN_PARAMS=1 on the DK: the params file is the 32 bytes of
    blobs (the lead prepare reserved: the linked blobs' size), then the 25088-byte params blob;
    the pool goes past it, the image checker takes the blobs before the COPY pool's bytes, the run
    finds the split params file beside the image, and the model validates at 0 LSB."""
    from n6.reloc.image import CodeImage
    out, lsb, model = split_blobs
    assert "  MOVE     build-split-blobs/cifar_cnn/st_ai_output/network.c: absolute flash pool 'xSPI2' 0x71000000 → " \
        "0x71810000, clear of the image the firmware reads at 0x71000000" in out.splitlines()
    code = CodeImage.load(os.path.join(model, "reloc", "network_rel_code.bin"))
    with open(os.path.join(model, "reloc", "network_reloc_params.json")) as f:
        assert json.load(f)["lead"] == len(code.ec_blobs) == 32
    with open(os.path.join(model, "flash", "flash.json")) as f:
        assert [(i["role"], i["address"]) for i in json.load(f)["images"]] == \
            [("pool", "0x71810000"), ("network", "0x71000000"), ("params", "0x71800000")]
    assert os.path.getsize(os.path.join(model, "network_rel_params.bin")) == 32 + 25088
    assert lsb == [0]


def test_a_lead_counted_short_fails_no_build_whose_params_no_pool_was_planned_past(repo):
    """The lead matters only where pools are planned past a split params file: a build with the
    blobs in an unsplit params region packs as ST's flow does, whatever prepare counted (here 0
    bytes, tests/fixtures/short_lead), and its params description reserves nothing."""
    short = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "short_lead")
    scons(repo, "cifar_cnn", ABSOLUTE, "RELOC_ECBLOB_IN_PARAMS=1", "BUILD_DIR=build-short-lead",
          env={"PYTHONPATH": short})
    reloc = os.path.join(repo, "build-short-lead", "cifar_cnn", "reloc")
    with open(os.path.join(reloc, "network_reloc_params.json")) as f:
        assert json.load(f)["lead"] is None


def test_the_flash_cli_takes_a_split_images_params_beside_it_or_as_given(repo, split_blobs, tmp_path):
    """`python -m n6.flash` of a split image: its params file beside it by default, or --params
    from elsewhere; each flashed at [images] params (a dry run)."""
    import shutil
    import subprocess
    import sys
    model = split_blobs[2]
    shutil.copy(os.path.join(model, "network_rel.bin"), tmp_path)
    shutil.copy(os.path.join(model, "network_rel_params.bin"), tmp_path / "weights.bin")

    def flash_cli(*args):
        proc = subprocess.run([sys.executable, "-m", "n6.flash", *args, "--dry-run", "--sim-board",
                               str(tmp_path / "board"), "--out", str(tmp_path / "out")], capture_output=True,
                              text=True, cwd=repo, env=dict(os.environ, PYTHONPATH=os.path.join(repo, "site_scons")))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return re.findall(r"  FLASH    (.+?) → (0x\w+):", proc.stdout)
    beside = os.path.join(model, "network_rel.bin")
    assert flash_cli(beside) == [(f"{beside} pool xSPI2", "0x71810000"), (beside, "0x71000000"),
                                 (os.path.join(model, "network_rel_params.bin"), "0x71800000")]
    alone = str(tmp_path / "network_rel.bin")
    assert flash_cli(alone, "--params", str(tmp_path / "weights.bin")) == \
        [(f"{alone} pool xSPI2", "0x71810000"), (alone, "0x71000000"), (str(tmp_path / "weights.bin"), "0x71800000")]


def test_split_params_led_by_blobs_the_moved_pool_clears_their_last_sector(repo):
    """The same on a board of 512-byte sectors, where the params blob alone fills 49 sectors and
    the blobs before it reach into a 50th: the pool goes past all 50 (the gate judges the layout;
    a dry run, as the simulated programmer erases the DK's 64 KB sectors)."""
    with open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")) as f:
        text = f.read()
    with open(os.path.join(repo, "small-sectors.toml"), "w") as f:
        f.write(text.replace("sector_size = 0x10000", "sector_size = 0x200").replace("page_size = 0x1000",
                                                                                     "page_size = 0x200"))
    out = scons(repo, "flash", "MODEL=cifar_cnn", ABSOLUTE, *SPLIT_BLOBS, "BOARD=small-sectors.toml", "DRY_RUN=1",
                "BUILD_DIR=build-small-sectors").stdout
    moved = 0x7180_0000 + 50 * 0x200
    assert re.findall(r"  FLASH    .+? → (0x\w+):", out) == [f"0x{moved:08X}", "0x71000000", "0x71800000"], out
