"""The bytes that lead the params region (epoch-controller blobs with --ecblob-in-params) and the
pools prepare moves past a split params file: one size of them (n6.reloc.prepare.params_lead, kept
in the params description as ParamsBlob.lead, region_size with the params) for the plan and pack,
judged by the ARM compiler's own layout of the blobs; pack refuses blobs that came out longer; the
flash gate's fix text names what places each piece, in every case it refuses a layout."""
import os
import re
import subprocess

import pytest

from n6.board import load_board
from n6.board_files import board_path
from n6.errors import N6Error
from n6.flash.gate import Placed, check_layout
from n6.mpool import EXTERNAL_FLASH
from n6.reloc.area import ImageArea
from n6.reloc.image import CodeImage
from n6.reloc.move import Span, plan
from n6.reloc.pack import pack
from n6.reloc.params import ParamsBlob, ParamsPart
from n6.releases import RELEASES
from n6.reloc.prepare import params_lead, patch_ecblobs

REAL = os.environ.get("N6_REAL_STEDGEAI")
SECTION = 'ECBLOB_CONST_SECTION=__attribute__((used, section (".const_ec_blob"), ))'   # as the build defines it

SIMULATED = """#ifndef ECBLOB_CONST_SECTION
#define ECBLOB_CONST_SECTION
#endif
ECBLOB_CONST_SECTION
const uint64_t _ec_blob_PARAM_1[2] = {
  0x00000002ca057a7aULL, 0x0000000c0000003dULL,
};
ECBLOB_RUNTIME_SECTION
static uint64_t _ec_blob_2[3] = {
  0x1ULL, 0x2ULL, 0x3ULL,
};
ECBLOB_CONST_SECTION
const uint64_t _ec_blob_PARAM_3[4] = {
  0x00000001ca057a7aULL, 0x0000000c0000003dULL, 0x0000000c0000003dULL,
};
"""
ST_2X = """ECBLOB_CONST_SECTION
static const uint64_t _ec_blob_1 [] =
{
  0x00000002ca057a7aUL, 0x0000000c0000003dUL
};

ECBLOB_CONST_SECTION
static const uint64_t _ec_blob_129 [] =
{
  /* epoch 3, unit 1 */ 0x000000fcca057a7aUL, 0x008020610000103dUL, // its registers, in order
  0x0088010020007c00UL
};
"""
ST_30 = """ECBLOB_CONST_SECTION
// aligned to the cache line size (equal to 64 bytes)
__attribute__((aligned(64)))
static const uint64_t _ec_blob_default_1[3] =
{
  0x0000000000000001UL, 0x0000000000000002UL, 0x0000000000000003UL,
};

ECBLOB_CONST_SECTION
// aligned to the cache line size (equal to 64 bytes)
__attribute__((aligned(64)))
static const uint64_t _ec_blob_default_7[] =
{
  0x0000000000000001UL,
};
"""


def compiled_lead(text, tmp_path):
    """The size of .const_ec_blob as arm-none-eabi-gcc lays out the ECBLOB_CONST_SECTION arrays of
    an _ecblobs.h's text (each cut from its marker to its closing `};`; the header's includes and
    code are not needed for the layout)."""
    lines, keep = ["#include <stdint.h>"], False
    for line in text.splitlines():
        keep = keep or line.strip() == "ECBLOB_CONST_SECTION"
        if keep:
            lines.append(line)
        keep = keep and line.strip() != "};"
    (tmp_path / "blobs.c").write_text("\n".join(lines) + "\n")
    subprocess.run(["arm-none-eabi-gcc", "-mthumb", "-mcpu=cortex-m55", "-Os", "-fdata-sections", f"-D{SECTION}",
                    "-c", "blobs.c", "-o", "blobs.o"], cwd=tmp_path, check=True)
    heads = subprocess.run(["arm-none-eabi-objdump", "-h", "blobs.o"], cwd=tmp_path, check=True, capture_output=True,
                           text=True).stdout
    return int(re.search(r"\.const_ec_blob\s+([0-9a-f]+)", heads).group(1), 16)


R22, R30 = RELEASES["2.2"], RELEASES["3.0"]


@pytest.mark.parametrize("text, size", [(SIMULATED, 48), (ST_2X, 40)])
def test_the_lead_of_8_aligned_blobs_is_what_the_compiler_lays_out(text, size, tmp_path):
    """The simulated tool's blobs and ST 2.x's (a declared count over fewer words; `[]` sized by
    its words, comments among them); a runtime blob is not in the params region."""
    assert params_lead(text, R22) == compiled_lead(text, tmp_path) == size


def test_an_indented_marker_is_a_blob_the_lead_counts_as_patch_ecblobs_moves_it(tmp_path):
    """ST's prepare_network.py takes a marker line stripped: so do the rename and the count, one
    walk of the blobs for both."""
    text = ST_2X.replace("ECBLOB_CONST_SECTION", "  ECBLOB_CONST_SECTION\t")
    assert params_lead(text, R22) == compiled_lead(text, tmp_path) == 40
    patched = patch_ecblobs(text + "bool LL_ATON_EC_Network_Init_Default(void)\n{\n}\n", R22)
    assert "_ec_blob_1 [] =" not in patched and "_ec_blob_129 [] =" not in patched
    assert "const uint64_t _ec_blob_PARAM_1[] =" in patched and "const uint64_t _ec_blob_PARAM_129[] =" in patched


def test_the_lead_of_cache_line_aligned_blobs_is_at_least_their_layout(tmp_path):
    """ST 3.0's blobs are 64-byte aligned and the compiler chooses their order (it reverses it):
    the lead is their words plus at most each one's padding."""
    assert compiled_lead(ST_30, tmp_path) == 8 + 56 + 24 <= params_lead(ST_30, R30) == 56 + 24 + 56 + 8


@pytest.mark.skipif(not REAL, reason="needs N6_REAL_STEDGEAI (ST's generated _ecblobs.h files)")
def test_sts_blobs_lead_as_the_compiler_lays_them_out(tmp_path):
    with open(os.path.join(REAL, "samples", "facereco", "network_ecblobs.h")) as f:
        facereco = f.read()
    assert params_lead(facereco, R22) == compiled_lead(facereco, tmp_path) == 1408
    with open(os.path.join(REAL, "ec-workspace", "default_ecblobs.h")) as f:
        workspace = f.read()
    assert compiled_lead(workspace, tmp_path) == 344960 <= params_lead(workspace, R30) == 344960 + 3 * 56


SECTOR = 0x200
AREA = ImageArea(0x7100_0000, 0x7180_0000, SECTOR, split=True)


def test_a_pool_moved_past_a_split_params_file_clears_the_blobs_leading_it(tmp_path):
    """cifar_cnn's figures: a 25088-byte params blob (49 sectors of 512 bytes) led by 32 bytes of
    blobs: the pool goes to the first sector past both."""
    blob = ParamsBlob([ParamsPart("xSPI2", "x.raw", 25088)], lead=32)
    moved = plan([Span("xSPI2", 0x7100_0000, 25088, True)], AREA, blob.region_size)
    assert [(m.name, m.new) for m in moved] == [("xSPI2", 0x7180_0000 + 50 * SECTOR)]


def test_a_pool_lying_under_the_split_params_file_moves_too():
    """The params file is written where the firmware reads the params: a pool there would be written
    over as a pool under the image would; one past the file's last sector stays."""
    spans = [Span("under", 0x7180_0100, 0x100, True), Span("past", 0x7180_0400, 0x100, True)]
    moved = plan(spans, AREA, 0x300)
    assert [(m.name, m.old, m.new) for m in moved] == [("under", 0x7180_0100, 0x7180_0400)]


def test_pack_refuses_blobs_longer_than_prepare_reserved(tmp_path):
    """The blobs the linker laid out must fit the lead the pools were moved past (the gate would
    otherwise find the params file over a moved pool on the board)."""
    from test_bite_reloc import _image_bytes
    (tmp_path / "p.raw").write_bytes(bytes(8))
    CodeImage(_image_bytes(), bytes(40)).save(str(tmp_path / "code.bin"))
    ParamsBlob([ParamsPart("p", str(tmp_path / "p.raw"), 8)], lead=32).save(str(tmp_path / "params.json"))
    with pytest.raises(N6Error) as e:
        pack(str(tmp_path / "code.bin"), str(tmp_path / "params.json"), str(tmp_path / "rel.bin"), split=True)
    assert str(e.value) == f"{tmp_path}/code.bin: the linked epoch-controller blobs take 40 bytes before the params, " \
        f"prepare reserved 32 ({tmp_path}/params.json) (fix: report this as a bug of the prepare step)"
    assert sorted(os.listdir(tmp_path)) == ["code.bin", "p.raw", "params.json"]



def test_pack_reserves_nothing_where_no_pool_was_planned_past_the_params(tmp_path):
    """lead None (no split params file had pools planned past it): the blobs take what they take."""
    from test_bite_reloc import _image_bytes
    (tmp_path / "p.raw").write_bytes(bytes(8))
    CodeImage(_image_bytes(), bytes(40)).save(str(tmp_path / "code.bin"))
    ParamsBlob([ParamsPart("p", str(tmp_path / "p.raw"), 8)]).save(str(tmp_path / "params.json"))
    assert pack(str(tmp_path / "code.bin"), str(tmp_path / "params.json"), str(tmp_path / "rel.bin")).params_size == 48

# -- the flash gate's fix text ---------------------------------------------------------------------

DK = load_board(board_path("stm32n6570-dk"))
BOARD = "[images] of firmware/boards/stm32n6570-dk.toml"
NET, PAR = ("network", 0x7100_0000, 0x7180_0000), ("params", 0x7180_0000, 0x7800_0000)


def _pool(address, size, name="xSPI2"):
    return Placed(f"n_rel.bin pool {name}", address, size, "pool", ("external flash", *EXTERNAL_FLASH))


def _image(role, address, size, region):
    return Placed(f"n_{role}.bin", address, size, role, region)


HEADER = Placed("header", 0x70FF_F000, 28, "header", ("multi-model header", 0x70FF_F000, 0x7100_0000))


@pytest.mark.parametrize("placed, fix", [
    ([_image("params", 0x7180_0000, 25120, PAR), _pool(0x7180_6200, 25088)],     # the pool over the blobs' bytes
     f"move the pool in its .mpool and regenerate, or the params image in {BOARD}"),
    ([_image("network", 0x7100_0000, 0x1000, NET), _pool(0x7100_0800, 100)],
     f"move the pool in its .mpool and regenerate, or the network image in {BOARD}"),
    ([_pool(0x7200_0000, 0x100, "a"), _pool(0x7200_0080, 0x100, "b")],
     "move one of the pools in its .mpool and regenerate"),
    ([_image("network", 0x717F_0000, 0x20000, ("network", 0x717F_0000, 0x7800_0000)),   # a 3.x image past pools
      _image("params", 0x7180_0000, 0x1000, PAR)], f"move one of them in {BOARD}"),
    ([HEADER, _image("network", 0x70FF_0000, 0x100, ("n", 0x70FF_0000, 0x7800_0000))], f"move one of them in {BOARD}"),
])
def test_an_overlap_names_what_places_each_piece(placed, fix):
    """A pool's address is network.c's, from the .mpool (where prepare moved it, it stays where the
    .mpool puts it once that is clear of the images); an image's is the board file's."""
    with pytest.raises(N6Error) as e:
        check_layout(placed, DK)
    assert "overlaps" in str(e.value) and str(e.value).endswith(f"(fix: {fix})")


BIG = 9 << 20


@pytest.mark.parametrize("placed, fix", [
    ([_image("network", 0x7100_0000, BIG, NET)], "build with RELOC_SPLIT=1 (params in their own image at [images] "
                                                 "params)"),
    ([_image("network", 0x7100_0000, BIG, NET), _image("params", 0x7180_0000, 0x100, PAR)],
     "place [images] params of firmware/boards/stm32n6570-dk.toml to give the network images room"),
    ([HEADER, _image("network", 0x7100_0000, BIG, NET)],
     "build with RELOC_SPLIT=1 (params in their own image at [images] params), or flash fewer models"),
    ([HEADER, _image("network", 0x7100_0000, 0x100, NET), _image("params", 0x7180_0000, 0x7000000, PAR)],
     "place [images] params of firmware/boards/stm32n6570-dk.toml to give the params images room, or flash fewer "
     "models"),
    ([_pool(0x7FFF_0000, 0x20000)], "move the pool in its .mpool and regenerate"),
])
def test_a_piece_past_its_region_names_what_makes_it_fit(placed, fix):
    with pytest.raises(N6Error) as e:
        check_layout(placed, DK)
    assert "does not fit the" in str(e.value) and str(e.value).endswith(f"(fix: {fix})")
