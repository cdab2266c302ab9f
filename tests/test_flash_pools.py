"""`scons flash` of an image whose params pool is absolute in the flash window (as ST's flow builds
its public samples, RELOC_ABSOLUTE_FLASH_POOLS=1): the pool's bytes go at the pool's address, the
image clear of it where the board's firmware reads it, each piece a download of its own in the
programmer's call; a params change writes only the sectors that changed, and the simulated board
runs the model from the flashed pool (validate, 0 LSB against onnxruntime). A pool lying where a
2.x firmware reads the image moves (prepare: network.c's addresses and the pool's descriptor);
an image built elsewhere with its pool there goes over it, as ST's flow puts it, with a warning."""
import json
import os
import re

import pytest

from programmer_sim.board_state import BoardState

from conftest import absolute_flash_pool, copy_repo, flip_bytes, make_prebuilt, scons

S = 0x10000
POOL, IMAGE = 0x7100_0000, 0x7200_0000
ABSOLUTE = "RELOC_ABSOLUTE_FLASH_POOLS=1"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """big_mlp with its xSPI2 weights pool absolute at 0x71000000 (the .mpool's default mode),
    turned into a prebuilt folder; `pool-dk.toml`: the DK with a firmware reading the image at
    0x72000000."""
    repo = copy_repo(tmp_path_factory.mktemp("pools"))
    absolute_flash_pool(repo, "big_mlp")
    scons(repo, "big_mlp", ABSOLUTE)
    make_prebuilt(repo, "big_mlp")
    text = open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")).read()
    open(os.path.join(repo, "pool-dk.toml"), "w").write(
        text.replace("network = 0x71000000", "network = 0x72000000").replace("params = 0x71800000",
                                                                             "params = 0x72800000"))
    return repo


def flash(repo, *args, **kw):
    return scons(repo, "flash", "MODEL=big_mlp", ABSOLUTE, "BOARD=pool-dk.toml", *args, **kw)


def board(repo, build="build"):
    return BoardState(os.path.join(repo, build, "sim-board"))


def pieces(repo):
    """[(role, address, sectors written, sectors)] of the last flash."""
    with open(os.path.join(repo, "build", "big_mlp", "flash", "flash.json")) as f:
        return [(i["role"], i["address"], i["sectors_written"], i["sectors"]) for i in json.load(f)["images"]]


def raw(repo):
    with open(os.path.join(repo, "models", "big_mlp", "network_atonbuf.xSPI2.raw"), "rb") as f:
        return f.read()


def image(repo):
    with open(os.path.join(repo, "build", "big_mlp", "network_rel.bin"), "rb") as f:
        return f.read()


def test_an_image_built_with_its_pool_where_the_firmware_reads_it_goes_there_as_st_puts_it(repo):
    """An image built elsewhere (ST's flow; here for a board whose firmware reads it at 0x72000000)
    with its pool at 0x71000000, flashed on the DK whose 2.x firmware reads the image there: never
    stricter than ST's tool, the image goes over the pool, and one line says what follows."""
    from n6.board import load_board
    from n6.board_files import board_path
    from n6.flash.deploy import ModelFiles, layout
    scons(repo, "big_mlp", ABSOLUTE, "BOARD=pool-dk.toml", "BUILD_DIR=build-st")
    path = os.path.join(repo, "build-st", "big_mlp", "network_rel.bin")
    warnings: list[str] = []
    images = layout([ModelFiles("big_mlp", path)], load_board(board_path("stm32n6570-dk")), multi_model=False,
                    warnings=warnings)
    assert [(im.role, im.address) for im in images] == [("network", POOL)]
    assert warnings == [
        f"{path}: its absolute flash pool at 0x71000000-0x71443E28 lies where the firmware reads the image "
        "(0x71000000, [images] network of firmware/boards/stm32n6570-dk.toml): the image goes there, as ST's flow "
        "puts it, and the network reads the image's bytes as its weights. For its weights build it with n6 for this "
        "board (its prepare step moves the pool clear of the image, unless epoch-controller blobs hold addresses in "
        "it), make the pool USEMODE_RELATIVE, or give a firmware that reads the image clear of the pool ([images] "
        "network = 0x72000000)"]


def moved_build(repo, build, *args):
    """Build and flash big_mlp for the DK (its 2.x firmware reads the image at 0x71000000, where
    the pool lies) into `build`: (stdout, the prepared network.c, the descriptors, the pieces)."""
    proc = scons(repo, "flash", "MODEL=big_mlp", ABSOLUTE, f"BUILD_DIR={build}", *args)
    reloc = os.path.join(repo, build, "big_mlp", "reloc")
    with open(os.path.join(reloc, "network_reloc_mempools.c")) as f:
        descriptors = re.findall(r'\{\.name = "(\w+)", \.flags = 0x\w+, \.foff = \d+, \.dst = (0x\w+)', f.read())
    with open(os.path.join(repo, build, "big_mlp", "flash", "flash.json")) as f:
        pieces = [(i["role"], i["address"]) for i in json.load(f)["images"]]
    with open(os.path.join(reloc, "network_reloc.c")) as f:
        return proc.stdout, f.read(), descriptors, pieces


def test_a_pool_where_the_firmware_reads_the_image_moves_and_the_network_reads_it_there(repo):
    """prepare moves the pool to the params region (non-split: its first sector); network.c's
    addresses, the pool's descriptor and the flashed piece agree; the image stays where the
    firmware reads it, and the model validates at 0 LSB (the image's bytes read as weights do not)."""
    out, text, descriptors, pieces = moved_build(repo, "build-moved")
    new = 0x7180_0000
    assert f"  MOVE     models/big_mlp/network.c: absolute flash pool 'xSPI2' 0x71000000 → 0x{new:08X}, clear of " \
        "the image the firmware reads at 0x71000000" in out.splitlines()
    assert ("xSPI2", f"0x{new:08X}") in descriptors
    assert pieces == [("pool", f"0x{new:08X}"), ("network", "0x71000000")]
    with open(os.path.join(repo, "models", "big_mlp", "network.c")) as f:
        st = f.read()
    assert "0x71000000UL" in st and "0x71000000UL" not in text
    assert text.count(f"0x{new:08X}UL") == st.count("0x71000000UL")
    assert "offset=0x71800000 " in text
    assert board(repo, "build-moved").read(new, len(raw(repo))) == raw(repo)
    proc = scons(repo, "validate-big_mlp", ABSOLUTE, "BUILD_DIR=build-moved")
    with open(os.path.join(repo, "build-moved", "big_mlp", "run", "validate.json")) as f:
        assert [o["max_abs_lsb"] for o in json.load(f)["outputs"]] == [0], proc.stdout


def test_outside_scons_prepare_and_the_flash_cli_move_the_pool_as_the_build_does(repo, tmp_path):
    """The one decision (n6.reloc.options.image_area: the board file's, for a 2.x release) and the one
    move (n6.reloc.move) outside SCons: prepare called with the DK's area writes the sources the
    build's PREPARE wrote, byte for byte, and `python -m n6.flash` of the build's image leaves the
    board holding what `scons flash` left: the image at 0x71000000, the pool at 0x71800000."""
    import subprocess
    import sys
    from n6.releases import RELEASES
    from n6.board_files import board_path
    from n6.reloc.options import board_facts, image_area
    from n6.reloc.prepare import prepare
    _, _, _, pieces = moved_build(repo, "build-moved")
    built = os.path.join(repo, "build-moved", "big_mlp")
    board_area = board_facts(board_path("stm32n6570-dk")).area
    area = image_area(board_area, RELEASES["2.2"])
    assert image_area(board_area, RELEASES["3.0"]) is None      # 3.x: the header places the image
    prep = prepare(os.path.join(repo, "models", "big_mlp", "network.c"), str(tmp_path / "reloc"),
                   absolute_flash_pools=True, image_area=area)
    assert [(m.name, m.old, m.new) for m in prep.moved] == [("xSPI2", POOL, 0x7180_0000)]
    for name in ("network_reloc.c", "network_reloc_mempools.c", "network_reloc_conf.h"):
        with open(tmp_path / "reloc" / name) as ours, open(os.path.join(built, "reloc", name)) as build:
            assert ours.read() == build.read(), name
    image_path = os.path.join(built, "network_rel.bin")
    sim = tmp_path / "board"
    cli = subprocess.run([sys.executable, "-m", "n6.flash", image_path, "--sim-board", str(sim), "--out",
                          str(tmp_path / "out")], capture_output=True, text=True, cwd=repo,
                         env=dict(os.environ, PYTHONPATH=os.path.join(repo, "site_scons")))
    assert cli.returncode == 0 and "WARNING" not in cli.stdout, cli.stdout + cli.stderr
    with open(tmp_path / "out" / "flash.json") as f:
        assert [(i["role"], i["address"]) for i in json.load(f)["images"]] == pieces
    by_scons, by_cli = board(repo, "build-moved"), BoardState(str(sim))
    assert by_cli.sectors() == by_scons.sectors()
    assert all(by_cli.read(at, S) == by_scons.read(at, S) for at in by_scons.sectors())
    assert by_cli.read(0x7180_0000, len(raw(repo))) == raw(repo)


def test_split_the_pool_moves_past_the_params_image(repo):
    _, _, descriptors, pieces = moved_build(repo, "build-moved-split", "RELOC_SPLIT=1")
    at = 0x7180_0000 + -(-len(raw(repo)) // S) * S       # the params image holds the pool's bytes once
    assert ("xSPI2", f"0x{at:08X}") in descriptors
    assert pieces == [("pool", f"0x{at:08X}"), ("network", "0x71000000"), ("params", "0x71800000")]


def test_addresses_inside_a_moved_pool_follow_it_and_no_other():
    from n6.reloc.move import Moved, move_addresses
    text = ("/* index=2 file postfix=xSPI2 name=octoFlash offset=0x71000000  absolute_mode */\n"
            "/* index=3 file postfix=xSPI1 name=hyperRAM offset=0x71000000 */\n"
            "a = (0x71000000UL + 16) /* Equivalent hex address = 0x710000a0UL */, b = 0x71000100UL, "
            "c = 0x70FFFFFFUL, d = 0x71000101UL, e = 0x71000000, f = 0x34100000UL;")
    assert move_addresses(text, [Moved("xSPI2", 0x7100_0000, 0x71A0_0000, 0x100)]) == (
        "/* index=2 file postfix=xSPI2 name=octoFlash offset=0x71a00000  absolute_mode */\n"
        "/* index=3 file postfix=xSPI1 name=hyperRAM offset=0x71000000 */\n"
        "a = (0x71A00000UL + 16) /* Equivalent hex address = 0x71a000a0UL */, b = 0x71A00100UL, "
        "c = 0x70FFFFFFUL, d = 0x71000101UL, e = 0x71000000, f = 0x34100000UL;")
    assert move_addresses(text, []) == text
    # a pool starting where a moved one ends keeps its own address, or follows its own move
    two = [Moved("A", 0x7100_0000, 0x7180_0000, 0x100), Moved("B", 0x7100_0100, 0x7181_0000, 0x40)]
    assert move_addresses("p = 0x71000100UL, q = 0x71000140UL;", two, [0x7100_0000, 0x7100_0100]) == \
        "p = 0x71810000UL, q = 0x71810040UL;"
    assert move_addresses("p = 0x71000100UL;", two[:1], [0x7100_0000, 0x7100_0100]) == "p = 0x71000100UL;"


def pools(*spans, read_write=()):
    """A prepared 2.2 network of absolute pools P0, P1, ... at (address, size) (`read_write`: their indices)."""
    from n6.releases import RELEASES
    from n6.reloc.pools import TYPE_RELOC, Pool
    from n6.reloc.prepare import Prepared
    return Prepared("network", None, RELEASES["2.2"], [Pool(i, f"P{i}", at, True, i in read_write, False, None,
                                                            used=size, type=TYPE_RELOC)
                                                       for i, (at, size) in enumerate(spans)])


def test_a_pool_that_cannot_move_clear_of_the_image_is_one_line(tmp_path):
    """A moved pool landing on another absolute pool, or past the flash, stops the prepare step
    naming network.c, not later at the flash gate with a fix that does not apply."""
    from n6.errors import N6Error
    from n6.reloc.area import ImageArea
    from n6.reloc.prepare import move_flash_pools
    area = ImageArea(0x7100_0000, 0x7180_0000, 0x1_0000, False)
    prep = pools((0x7100_0000, 0x2_0000), (0x7181_0000, 0x100))
    with pytest.raises(N6Error, match=r"^n.c: absolute flash pool 'P0' lies where the firmware reads the image "
                                      r"\(0x71000000\); moved to 0x71800000 it would land onto pool 'P1'"):
        move_flash_pools("n.c", prep, area, 0)
    prep = pools((0x7100_0000, 0x90_0000))
    with pytest.raises(N6Error, match="moved to 0x7F800000 it would land past the external flash"):
        move_flash_pools("n.c", prep, ImageArea(0x7100_0000, 0x7F80_0000, 0x1_0000, False), 0)


def test_a_pool_lands_where_another_moving_pool_was():
    """A move is checked against the pools that stay: P0 lands where P1 lay, but P1 (crossing the
    image area's end) moves on too, so both move, one after the other."""
    from n6.reloc.area import ImageArea
    from n6.reloc.prepare import move_flash_pools
    prep = pools((0x7100_0000, 0x1_0000), (0x717F_0000, 0x2_0000))
    move_flash_pools("n.c", prep, ImageArea(0x7100_0000, 0x7180_0000, 0x1_0000, False), 0)
    assert [(mv.name, mv.old, mv.new) for mv in prep.moved] == [("P0", 0x7100_0000, 0x7180_0000),
                                                                ("P1", 0x717F_0000, 0x7181_0000)]
    assert [p.offset for p in prep.pools] == [0x7180_0000, 0x7181_0000]


def test_pools_kept_for_their_blobs_build_though_a_move_would_clash():
    """Blobs holding a word inside the pool keep it where ST's flow puts it: where a move would
    have landed does not matter then (ST's flow builds such a network)."""
    from n6.reloc.area import ImageArea
    from n6.reloc.prepare import move_flash_pools
    prep = pools((0x7100_0000, 0x2_0000), (0x7181_0000, 0x100))
    prep.ecblobs = "const uint64_t _ec_blob_1[] = { 0x0000000071000200ULL };\n"
    move_flash_pools("n.c", prep, ImageArea(0x7100_0000, 0x7180_0000, 0x1_0000, False), 0)
    assert prep.kept and "'P0' not moved: its epoch-controller blobs hold 1 word inside it (first 0x71000200)" \
        in prep.kept
    assert prep.moved == [] and [p.offset for p in prep.pools] == [0x7100_0000, 0x7181_0000]


def test_a_blob_word_at_the_next_pools_base_does_not_keep_the_pool():
    """A blob word one past the moving pool's end, where the next pool starts, is that pool's
    address (moved_text leaves it so): it keeps nothing."""
    from n6.reloc.area import ImageArea
    from n6.reloc.move import Moved
    from n6.reloc.prepare import move_flash_pools
    prep = pools((0x7100_0000, 0x100), (0x7100_0100, 0x40), read_write=(1,))
    prep.ecblobs = "const uint64_t _ec_blob_1[] = { 0x0000000071000100ULL };\n"
    move_flash_pools("n.c", prep, ImageArea(0x7100_0000, 0x7180_0000, 0x1_0000, False), 0)
    assert prep.kept is None and prep.moved == [Moved("P0", 0x7100_0000, 0x7180_0000, 0x100)]


def test_the_pool_goes_at_its_address_and_the_image_clear_of_it_each_a_download(repo):
    flash(repo)
    data, params = image(repo), raw(repo)
    n_pool, n_image = -(-len(params) // S), -(-len(data) // S)
    assert pieces(repo) == [("pool", "0x71000000", n_pool, n_pool), ("network", "0x72000000", n_image, n_image)]
    st = board(repo)
    assert st.read(POOL, len(params)) == params                     # the .raw, byte for byte
    assert st.read(IMAGE, len(data)) == data
    assert st.sectors() == [POOL + i * S for i in range(n_pool)] + [IMAGE + i * S for i in range(n_image)]
    argv = st.events("call")[-1]["argv"]
    assert argv[:6] == ["-c", "port=SWD", "mode=hotplug", "freq=2000", "ap=1", "-el"]
    downloads = [argv[i + 1:i + 4] for i, a in enumerate(argv) if a == "-d"]
    assert [(os.path.getsize(p) if os.path.exists(p) else None, a, v) for p, a, v in downloads] == \
        [(None, "0x71000000", "-v"), (None, "0x72000000", "-v")]      # one per piece (temporary files, gone)
    with open(os.path.join(repo, "build", "big_mlp", "flash", "on_board.json")) as f:
        assert [(i["role"], i["address"], i["size"]) for i in json.load(f)["images"]] == \
            [("pool", "0x71000000", len(params)), ("network", "0x72000000", len(data))]
    assert "is up to date" in flash(repo).stdout


def test_a_params_change_writes_the_changed_sectors_of_each_piece(repo):
    flash(repo)
    old = image(repo)
    flip_bytes(os.path.join(repo, "models", "big_mlp", "network_atonbuf.xSPI2.raw"), [20 * S + 3])
    flash(repo)
    new = image(repo)
    changed = sorted({i // S for i in range(len(new)) if old[i:i + 1] != new[i:i + 1]})
    assert len(changed) == 2 and changed[0] == 0          # the image: rt_ctx (params CRC) + its copy of the weight
    n_pool, n_image = -(-len(raw(repo)) // S), -(-len(new) // S)
    assert pieces(repo) == [("pool", "0x71000000", 1, n_pool), ("network", "0x72000000", 2, n_image)]
    assert board(repo).read(POOL, len(raw(repo))) == raw(repo)


def test_the_simulated_board_runs_the_model_from_the_flashed_pool(repo):
    proc = scons(repo, "validate-big_mlp", ABSOLUTE, "BOARD=pool-dk.toml")
    with open(os.path.join(repo, "build", "big_mlp", "run", "validate.json")) as f:
        report = json.load(f)
    assert report["passed"] is True and [o["max_abs_lsb"] for o in report["outputs"]] == [0], proc.stdout


def test_a_3x_image_moves_past_the_pools_and_the_header_gives_its_address(repo):
    """With the multi-model header the firmware finds an image anywhere: it goes on the first
    sector clear of the pools (the layout alone: no 3.x install is needed for it)."""
    from n6.board import load_board
    from n6.board_files import board_path
    from n6.flash import mrel
    from n6.flash.deploy import ModelFiles, layout
    from n6.flash.gate import check_layout
    dk = load_board(board_path("stm32n6570-dk"))
    images = layout([ModelFiles("big_mlp", os.path.join(repo, "build", "big_mlp", "network_rel.bin"))], dk,
                    multi_model=True)
    end = POOL + len(raw(repo))
    assert [(im.role, im.address) for im in images] == [("header", 0x70FFF000), ("pool", POOL),
                                                        ("network", -(-end // S) * S)]
    assert mrel.parse(images[0].data)[1] == [(-(-end // S) * S, 0)]
    check_layout([im.placed for im in images], dk)


@pytest.mark.parametrize("address, message", [
    (0x7A00_0000, "is outside the flash 0x70000000-0x78000000 (fix: move the pool into the board's flash in the "
                  ".mpool and regenerate)"),
    (0x7038_0000, "would write the boot area 0x70000000-0x70FF0000 (FSBL and applications) (fix: move the pool "
                  "out of it in the .mpool and regenerate)"),
])
def test_a_pool_the_board_cannot_hold_is_refused_naming_the_mpool(address, message):
    """The loader's window and the boot area hold for pools too; their address is network.c's."""
    from n6.board import load_board
    from n6.board_files import board_path
    from n6.errors import N6Error
    from n6.flash.deploy import FlashImage
    from n6.flash.gate import check_layout
    from n6.mpool import EXTERNAL_FLASH
    pool = FlashImage("n.bin pool xSPI2", address, bytes(100), "pool", ("m",), ("external flash", *EXTERNAL_FLASH))
    with pytest.raises(N6Error) as e:
        check_layout([pool.placed], load_board(board_path("stm32n6570-dk")))
    assert str(e.value) == f"n.bin pool xSPI2: 100 bytes at 0x{address:08X}-0x{address + 100:08X} {message}"
