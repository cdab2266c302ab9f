"""`scons flash` of an image whose params pool is absolute in the flash window (as ST's flow builds
its public samples, RELOC_ABSOLUTE_FLASH_POOLS=1): the pool's bytes go at the pool's address, the
image clear of it where the board's firmware reads it (else, as ST's flow, over it with a
warning), each piece a download of its own in the programmer's call; a params change writes only
the sectors that changed, and the simulated board runs the model from the flashed pool (validate,
0 LSB against onnxruntime)."""
import json
import os

import pytest

from programmer_sim.board_state import BoardState

from conftest import copy_repo, flip_bytes, make_prebuilt, scons

S = 0x10000
POOL, IMAGE = 0x7100_0000, 0x7200_0000
ABSOLUTE = "RELOC_ABSOLUTE_FLASH_POOLS=1"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """big_mlp with its xSPI2 weights pool absolute at 0x71000000 (the .mpool's default mode),
    turned into a prebuilt folder; `pool-dk.toml`: the DK with a firmware reading the image at
    0x72000000."""
    repo = copy_repo(tmp_path_factory.mktemp("pools"))
    mpool = os.path.join(repo, "models", "big_mlp", "big_mlp.mpool")
    spec = json.load(open(mpool))
    for pool in spec["memory"]["mempools"]:
        if pool["fname"] == "xSPI2":
            del pool["mode"]
    json.dump(spec, open(mpool, "w"))
    scons(repo, "big_mlp", ABSOLUTE)
    make_prebuilt(repo, "big_mlp")
    text = open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")).read()
    open(os.path.join(repo, "pool-dk.toml"), "w").write(
        text.replace("network = 0x71000000", "network = 0x72000000").replace("params = 0x71800000",
                                                                             "params = 0x72800000"))
    return repo


def flash(repo, *args, **kw):
    return scons(repo, "flash", "MODEL=big_mlp", ABSOLUTE, "BOARD=pool-dk.toml", *args, **kw)


def board(repo):
    return BoardState(os.path.join(repo, "build", "sim-board"))


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


def test_where_the_firmware_reads_the_image_at_the_pool_the_image_goes_there_as_st_puts_it(repo):
    """ST's flow (and a 2.x firmware reading the image at 0x71000000) puts the image over the
    pool: never stricter than ST's tool, the flash does the same and says what follows."""
    proc = scons(repo, "flash", "MODEL=big_mlp", ABSOLUTE, "BUILD_DIR=build-st")
    assert "  WARNING  build-st/big_mlp/network_rel.bin: its absolute flash pool at 0x71000000-0x71443E28 lies " \
        "where the firmware reads the image (0x71000000, [images] network of firmware/boards/stm32n6570-dk.toml): " \
        "the image goes there, as ST's flow puts it, and the network reads the image's bytes as its weights. For " \
        "its weights make the pool USEMODE_RELATIVE (ST's 2.x firmware reads the image at 0x71000000 only), or " \
        "give a firmware that reads the image clear of the pool ([images] network = 0x72000000)  SIMULATED" in \
        proc.stdout.splitlines()
    with open(os.path.join(repo, "build-st", "big_mlp", "flash", "flash.json")) as f:
        assert [(i["role"], i["address"]) for i in json.load(f)["images"]] == [("network", "0x71000000")]


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
