"""The deploy library against the simulated programmer (no SCons): records and the sector diff,
read-back checks, the gate's refusals with their numbers, the multi-model header, and each
documented programmer failure as its one line."""
import os
import struct

import pytest

from n6.board import load_board
from n6.board_files import board_path
from n6.errors import N6Error
from n6.flash import mrel
from n6.flash.backend import ProgrammerError
from n6.flash.cubeprogrammer import CubeProgrammer, find_cli
from n6.flash.deploy import FlashImage, ModelFiles, deploy, layout
from n6.flash.gate import Placed, check_firmware, check_layout, default_firmware
from n6.flash.records import RecordStore, changed_sectors, runs
from n6.tool_runner import ToolRunner
from programmer_sim.board_state import BoardState

S = 0x10000
DK = load_board(board_path("stm32n6570-dk"))
REGION = ("params", 0x71800000, 0x78000000)


def sim(tmp_path, fail="", serial=None):
    board_dir = tmp_path / "board"
    if serial:
        BoardState(board_dir).set_probe(serial=serial)
    install = find_cli({"PATH": ""})
    env = install.environ(dict(os.environ, N6_SIM_BOARD=str(board_dir), N6_SIM_PROGRAMMER_FAIL=fail))
    runner = ToolRunner(str(tmp_path / "programmer.log"), env=env, echo=lambda t: None)
    return CubeProgrammer(install, runner, DK.flash.external_loader, log_path="build/m/flash/programmer.log"), \
        BoardState(board_dir)


def flash(tmp_path, images, fail="", force=False, serial=None, hint="004200000000000000000001"):
    backend, state = sim(tmp_path, fail, serial)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    result = deploy(images, backend, RecordStore(tmp_path / "records"), S, str(work), force=force, serial_hint=hint)
    return result, state, backend.runner.calls


def params(data, address=0x71800000):
    return FlashImage("p.bin", address, bytes(data), "params", ("m",), REGION)


def blob(n, seed=1):
    return bytes((i * seed + i // 251) & 0xFF for i in range(n))


def test_diff_writes_exactly_the_changed_sectors(tmp_path):
    data = bytearray(blob(5 * S + 100))
    r, state, calls = flash(tmp_path, [params(data)])
    assert (len(r.images[0].written), r.images[0].full_reason, calls) == (6, "no record for this board", 1)
    assert state.read(0x71800000, len(data)) == data
    data[2 * S + 7] ^= 1                        # one byte in sector 2
    data[5 * S + 99] ^= 1                       # and in the partial last sector
    r, state, calls = flash(tmp_path, [params(data)])
    assert r.images[0].written == [0x71820000, 0x71850000] and r.images[0].bytes_written == S + 100
    assert state.read(0x71800000, len(data)) == data and calls == 1     # read back, write, verify: one call
    r, _, calls = flash(tmp_path, [params(data)])
    assert r.images[0].written == [] and calls == 1      # the read-back alone
    r, _, _ = flash(tmp_path, [params(data)], force=True)
    assert (len(r.images[0].written), r.images[0].full_reason) == (6, "FORCE=1")


def test_record_not_trusted_when_the_board_holds_other_bytes(tmp_path):
    data = blob(3 * S)
    flash(tmp_path, [params(data)])
    state = BoardState(tmp_path / "board")
    state.erase_sector(0x71800000)              # another tool wrote the board
    r, state, calls = flash(tmp_path, [params(data)])
    assert len(r.images[0].written) == 3 and "board holds other bytes at 0x71800000" in r.images[0].full_reason
    assert state.read(0x71800000, len(data)) == data and calls == 2          # the read-back, then everything


def test_a_sector_past_the_read_back_changed_by_another_tool_is_rewritten_by_force_only(tmp_path):
    """The read-back covers an image's first bytes (header and runtime context, a params image's
    start), not every sector: another tool's change past them is not seen (docs/flash.md says so),
    and FORCE=1 writes it back."""
    data = blob(4 * S)
    flash(tmp_path, [params(data)])
    BoardState(tmp_path / "board").erase_sector(0x71800000 + 2 * S)
    r, state, calls = flash(tmp_path, [params(data)])
    assert (r.images[0].written, calls) == ([], 1) and state.read(0x71800000 + 2 * S, S) == b"\xff" * S
    r, state, _ = flash(tmp_path, [params(data)], force=True)
    assert len(r.images[0].written) == 4 and state.read(0x71800000, len(data)) == data


def test_a_foreign_image_is_written_whole_by_a_second_call(tmp_path):
    """The first call writes the sectors that differ from the record while it reads back; the
    read-back shows another tool's image: a second call writes the rest, and only then is the
    record saved."""
    data = bytearray(blob(4 * S))
    flash(tmp_path, [params(data)])
    BoardState(tmp_path / "board").erase_sector(0x71800000)
    data[3 * S] ^= 1
    backend, state = sim(tmp_path)
    store = RecordStore(tmp_path / "records")
    work = tmp_path / "work2"
    work.mkdir()
    r = deploy([params(data)], backend, store, S, str(work), serial_hint="004200000000000000000001")
    first, second = [line for line in open(tmp_path / "programmer.log") if line.startswith("$ ")][-2:]
    assert " -u 0x71800000 " in first and first.count(" -d ") == 1 and "71830000.bin 0x71830000 -v" in first
    assert " -u " not in second and "71800000.bin 0x71800000 -v" in second and "0x71830000" not in second
    assert backend.runner.calls == 2 and r.images[0].bytes_written == 4 * S and len(r.images[0].written) == 4
    assert state.read(0x71800000, len(data)) == data and store.load("004200000000000000000001", 0x71800000)[0] == data


def test_other_probe_and_damaged_record_write_everything(tmp_path):
    data = blob(2 * S)
    flash(tmp_path, [params(data)])
    r, _, _ = flash(tmp_path, [params(data)], serial="OTHER", hint="OTHER")
    assert len(r.images[0].written) == 2 and r.images[0].full_reason == "no record for this board"
    store = RecordStore(tmp_path / "records")
    assert store.load("OTHER", 0x71800000)[0] == data
    with open(os.path.join(tmp_path, "records", "OTHER", "71800000.bin"), "r+b") as f:
        f.write(b"\x55")
    assert store.load("OTHER", 0x71800000) == (None, "damaged record")
    r, _, _ = flash(tmp_path, [params(data)], serial="OTHER", hint="OTHER")
    assert r.images[0].full_reason == "damaged record"


def test_interrupted_flash_keeps_the_record_and_the_pending_sectors_are_rewritten(tmp_path):
    """Change A is interrupted half-way, then reverted: the sectors A touched must still be
    rewritten (without the pending list they would be skipped: the record equals the image)."""
    old = blob(8 * S)
    flash(tmp_path, [params(old)])
    store = RecordStore(tmp_path / "records")
    new = bytearray(old)
    for k in range(1, 8):                     # sector 0 (read back) keeps its bytes
        new[k * S + 5] ^= 0xFF
    with pytest.raises(ProgrammerError) as e:
        flash(tmp_path, [params(new)], fail="probe-lost")
    assert str(e.value).startswith("build/m/flash/programmer.log: probe lost during the flash (fix: ")
    assert store.load("004200000000000000000001", 0x71800000)[0] == old       # record untouched
    state = BoardState(tmp_path / "board")
    assert state.read(0x71800000, 8 * S) not in (old, bytes(new))              # half written
    r, state, _ = flash(tmp_path, [params(old)])                               # back to the old image
    assert state.read(0x71800000, 8 * S) == old and len(r.images[0].written) == 7
    assert store.pending("004200000000000000000001") == set()


def test_an_interrupted_second_call_leaves_its_sectors_pending(tmp_path):
    """The read-back shows another tool's image, the call writing it whole is interrupted after
    the header sector: the next flash finds the header as recorded, and rewrites the rest anyway."""
    data = blob(4 * S)
    flash(tmp_path, [params(data)])
    BoardState(tmp_path / "board").erase_sector(0x71800000)
    BoardState(tmp_path / "board").erase_sector(0x71830000)
    with pytest.raises(ProgrammerError, match="probe lost during the flash"):
        flash(tmp_path, [params(data)], fail="probe-lost")
    assert RecordStore(tmp_path / "records").pending("004200000000000000000001") == \
        {0x71800000 + k * S for k in range(4)}
    r, state, calls = flash(tmp_path, [params(data)])
    assert (len(r.images[0].written), r.images[0].full_reason, calls) == (4, None, 1)
    assert state.read(0x71800000, len(data)) == data


def test_saving_a_record_drops_records_it_overwrote(tmp_path):
    store = RecordStore(tmp_path)
    store.save("S", 0x71010000, b"a" * 10, "x")
    store.save("S", 0x71000000, b"b" * (S + 1), "y")
    assert store.load("S", 0x71010000) == (None, "no record for this board")
    assert store.load("S", 0x71000000)[0] == b"b" * (S + 1)


def test_changed_sectors_and_runs():
    a = 0x71000000
    old = bytes(3 * S)
    assert changed_sectors(a, old, old, S) == []
    assert changed_sectors(a, old + b"x", old, S) == [a + 3 * S]              # grew into a new sector
    assert changed_sectors(a, old[:-1], old, S) == []          # shrank: the bytes it keeps are on the board
    assert changed_sectors(a, old, old, S, pending={a + S}) == [a + S]
    assert runs([a, a + S, a + 3 * S], S) == [(a, a + 2 * S), (a + 3 * S, a + 4 * S)]


# -- failures --------------------------------------------------------------------------------------

@pytest.mark.parametrize("fail, line", [
    ("no-probe", "no ST-LINK probe found (fix: connect the board's ST-LINK USB port and check the cable (PROBE= "
                 "must name a connected probe))"),
    ("not-dev-boot", "board not in development boot (debug access closed, flash erase refused) (fix: set BOOT1 to "
                     "the development position and power-cycle the board)"),
    ("no-loader", "external loader MX66UW1G45G_STM32N6570-DK.stldr cannot be loaded (fix: install it in "
                  "<CubeProgrammer>/bin/ExternalLoader/ or choose the right board with BOARD=)"),
    ("verify", "verify failed: the flash does not hold the bytes written (fix: power-cycle the board and flash again "
               "with FORCE=1)"),
    ("probe-lost", "probe lost during the flash (fix: check the USB cable, power-cycle the board and flash again (the "
                   "record was not updated: the next flash rewrites what was interrupted))"),
    ("busy", "the ST-LINK probe is held by another process (fix: stop that process (e.g. a stale ST-LINK_gdbserver) "
             "and flash again)"),
])
def test_each_documented_failure_is_one_line(tmp_path, fail, line, monkeypatch):
    monkeypatch.setattr("n6.flash.cubeprogrammer.holding_processes", lambda: [])
    with pytest.raises(ProgrammerError) as e:
        flash(tmp_path, [params(blob(3 * S))], fail=fail)
    assert str(e.value) == "build/m/flash/programmer.log: " + line
    assert RecordStore(tmp_path / "records").load("004200000000000000000001", 0x71800000)[0] is None
    assert "Error" in open(tmp_path / "programmer.log").read()        # the full output is in the named log


def test_busy_names_the_process_holding_the_probe(tmp_path, monkeypatch):
    monkeypatch.setattr("n6.flash.cubeprogrammer.holding_processes", lambda: ["ST-LINK_gdbserv pid 4242"])
    with pytest.raises(ProgrammerError, match=r"held by another process \(ST-LINK_gdbserv pid 4242\)"):
        flash(tmp_path, [params(blob(S))], fail="busy")


def test_hotplug_refused_recovers_under_reset(tmp_path):
    r, state, calls = flash(tmp_path, [params(blob(S))], fail="hotplug")
    assert r.notes == ["hot-plug connect refused: retried with connect under reset (mode=UR)"]
    assert state.read(0x71800000, S) == blob(S) and calls == 2            # refused, then under reset


def test_simulated_flash_refuses_boot_area_writes_outside_development_boot(tmp_path):
    backend, state = sim(tmp_path)
    state.set_probe(boot="flash")
    work = tmp_path / "w"
    work.mkdir()
    img = FlashImage("fsbl.bin", 0x70000000, b"x" * 100, "params", ("m",), ("all", 0x70000000, 0x78000000))
    with pytest.raises(ProgrammerError, match="board not in development boot"):
        deploy([img], backend, RecordStore(tmp_path / "r"), S, str(work))
    state.set_probe(boot="development")
    deploy([img], backend, RecordStore(tmp_path / "r"), S, str(work))
    assert state.read(0x70000000, 100) == b"x" * 100


# -- gate ------------------------------------------------------------------------------------------

def P(path, address, size, role="network", region=("network", 0x71000000, 0x71800000)):
    return Placed(path, address, size, role, region)


@pytest.mark.parametrize("placed, message", [
    ([P("a_rel.bin", 0x71000000, 9 << 20)],
     "a_rel.bin: 9437184 bytes at 0x71000000-0x71900000 does not fit the network region 0x71000000-0x71800000 "
     "(8388608 bytes; 1048576 bytes over)"),
    ([P("a_rel.bin", 0x71000000, 0x18000), P("b_rel.bin", 0x71010000, 100)],
     "b_rel.bin: 100 bytes at 0x71010000-0x71010064 overlaps a_rel.bin (98304 bytes at 0x71000000-0x71018000)"),
    ([P("a_rel.bin", 0x70100000, 0x100, region=("n", 0, 1 << 32))],
     "a_rel.bin: 256 bytes at 0x70100000-0x70100100 would write the boot area 0x70000000-0x70FF0000"),
    ([P("a_rel.bin", 0x71001000, 0x100)], "address 0x71001000 is not aligned to 64 KB (erase sector)"),
    ([P("hdr", 0x70FFF000, 20, "header", ("h", 0x70FFF000, 0x71000000)), P("a_rel.bin", 0x70FF0000, 0x100,
                                                                          region=("n", 0, 1 << 32))],
     "hdr: 20 bytes at 0x70FFF000-0x70FFF014 overlaps a_rel.bin (256 bytes at 0x70FF0000-0x70FF0100) within the "
     "same 64 KB erase sector"),
    ([P("a_rel.bin", 0x77FF0000, 0x20000, region=("n", 0, 1 << 32))], "is outside the flash 0x70000000-0x78000000"),
])
def test_gate_refusals_carry_the_numbers(placed, message):
    with pytest.raises(N6Error) as e:
        check_layout(placed, DK)
    assert message in str(e.value) and "(fix: " in str(e.value)


def test_gate_accepts_the_board_layout(tmp_path):
    check_layout([P("hdr", 0x70FFF000, 28, "header", ("h", 0x70FFF000, 0x71000000)), P("a", 0x71000000, 0x10000),
                  P("b", 0x71010000, 5), P("p", 0x71800000, 100, "params", REGION)], DK)


def _image(secure=True, dbg=True, rt=(1, 1, 1), ext=0, words=24, cpu=0xD22, sizes=0x3038, c_name=b""):
    """A minimal image: header, flags, rt_ctx right after the header, and its c-name after that."""
    flags = 8 << 28 | 1 << 22 | dbg << 21 | secure << 20 | 8 << 16 | 2 << 13 | 1 << 12 | cpu
    n = 4 * words
    hdr = [0] * words
    hdr[0], hdr[1], hdr[2], hdr[4] = 0x4E49424E, flags, 0x40000000, 0x20000000 + n
    hdr[5] = hdr[6] = hdr[7] = hdr[8] = 0x40000000 + 68
    hdr[words - 1] = 0x40000000
    if words == 26:
        hdr[23] = 0x20000010
    rt_ctx = [0] * 17
    rt_ctx[8], rt_ctx[10], rt_ctx[14] = ext, rt[0] << 24 | rt[1] << 16 | rt[2] << 8, sizes
    rt_ctx[5] = 0x20000000 + n + 68
    return struct.pack(f"<{words}I", *hdr) + struct.pack("<17I", *rt_ctx) + c_name.ljust(64, b"\0")


@pytest.mark.parametrize("image, fw, message", [
    (_image(dbg=False), "2.2", "dbg-info off but the firmware's is on: INVALID_BIN (fix: build with RELOC_DBG_INFO=1"),
    (_image(rt=(1, 1, 3)), "2.2", "runtime 1.1.3 but the firmware's LL_ATON is 1.1.1: INVALID_BIN"),
    (_image(), "3.0", "ST Edge AI 2.x image (96-byte header) for a 3.0 firmware (104-byte header): ST's loader takes "
                      "rt_ctx from a code word and reads past the image (bus fault, no error)"),
    (_image(words=26, rt=(1, 1, 3)), "2.2", "3.x image (104-byte header) for a 2.2 firmware (96-byte header): the "
                                            "loader refuses it (INVALID_BIN)"),
    (_image(cpu=0xD21), "2.2", "built for CPU part 0xD21, the firmware runs on 0xD22: INVALID_BIN"),
    (_image(ext=(27 << 20) + 1), "2.2", "Model requires more external RAM than available 28311560 > 28311552"),
    (b"ELF!" + bytes(200), "2.2", "Invalid magic value - 21464c45 instead 4e49424e"),
])
def test_firmware_gate_uses_the_loader_error_names(image, fw, message):
    with pytest.raises(N6Error) as e:
        check_firmware("x_rel.bin", image, default_firmware(fw), 27 << 20, "board.toml")
    assert message in str(e.value)


def test_firmware_gate_secure_rules():
    from n6.reloc.firmware import Firmware
    nonsecure_fw = Firmware("2.2", False, True, True, 0xD22)
    with pytest.raises(N6Error, match="secure image \\(-mcmse\\) for a non-secure firmware: INVALID_BIN"):
        check_firmware("x", _image(), nonsecure_fw, None, "b")
    assert check_firmware("x", _image(secure=False), default_firmware("2.2"), None, "b") == \
        ["x: non-secure image on a secure firmware (the loader warns, installs)"]
    assert check_firmware("x", _image(words=26, rt=(1, 1, 3)), default_firmware("3.0"), None, "b") == []


def _sized_image(ro, rw, words=26, c_name=b"m"):
    """A 3.x image whose RO part is `ro` bytes and RW part `rw` bytes (XIP size = rw, COPY size =
    rw + ro, rounded to 8 as ST's tools do); rt_ctx at the start of the data image."""
    base = _image(words=words, rt=(1, 1, 3), c_name=c_name)
    hdr = list(struct.unpack_from(f"<{words}I", base))
    hdr[4] = 0x20000000 + ro                                   # data_data: the RO part ends here
    hdr[5] = hdr[6] = hdr[7] = hdr[8] = 0x40000000 + rw        # bss_start, bss_end, got_start, got_end
    data = bytearray(ro + max(rw, 68) + 64)
    data[:4 * words] = struct.pack(f"<{words}I", *hdr)
    data[ro:ro + 68] = base[4 * words:4 * words + 68]
    data[4 * words + 68:4 * words + 69 + len(c_name)] = c_name + b"\0"     # where rt_ctx's c_name points
    return bytes(data)


def _models(tmp_path, *sizes):
    files = []
    for i, (ro, rw) in enumerate(sizes):
        net = tmp_path / f"m{i}_rel.bin"
        net.write_bytes(_sized_image(ro, rw, c_name=f"m{i}".encode()))
        files.append(ModelFiles(f"m{i}", str(net)))
    return files


K = 1024


@pytest.mark.parametrize("sizes, flags, want", [
    ([(400 * K, 200 * K)], 0, 0),                                   # COPY 600 KB: internal exec RAM
    ([(400 * K, 240 * K)], 0, 0),                                   # COPY 640 KB exactly
    ([(400 * K, 240 * K + 8)], 0, mrel.FLAG_EXT_EXEC),              # COPY above 640 KB: -ext, as ST's script
    ([(700 * K, 100 * K)], mrel.FLAG_XIP, mrel.FLAG_XIP),           # XIP needs the RW part only
    ([(10 * K, 641 * K)], mrel.FLAG_XIP, mrel.FLAG_XIP | mrel.FLAG_EXT_EXEC),
    ([(100 * K, 200 * K), (500 * K, 100 * K)], 0, 0),               # overlay: the largest counts
    ([(100 * K, 200 * K), (500 * K, 100 * K)], mrel.FLAG_NO_OVERLAY, mrel.FLAG_NO_OVERLAY | mrel.FLAG_EXT_EXEC),
    ([(400 * K, 400 * K)], mrel.FLAG_CLEAR, mrel.FLAG_CLEAR | mrel.FLAG_EXT_EXEC),
])
def test_multi_model_header_flags_as_st_sets_them(tmp_path, sizes, flags, want):
    header = layout(_models(tmp_path, *sizes), DK, multi_model=True, flags=flags)[0]
    assert mrel.parse(header.data)[0] == want


def test_multi_model_header_bytes_for_a_copy_model_above_640_kb(tmp_path):
    images = layout(_models(tmp_path, (600 * K, 100 * K), (8 * K, 4 * K)), DK, multi_model=True)
    second = 0x71000000 + (700 * K + 64 + 0xFFFF) // S * S
    assert images[0].data == bytes.fromhex("4d52454c" "02000000" "02000000" "00000071" "00000000") + \
        second.to_bytes(4, "little") + bytes(4)
    assert [(im.role, im.address) for im in images] == [("header", 0x70FFF000), ("network", 0x71000000),
                                                        ("network", second)]


def test_multi_model_layout_and_header(tmp_path):
    files = []
    for name, n, p in (("a", S + 1, 3), ("b", 300, None), ("c", 400, 2 * S)):
        net = tmp_path / f"{name}_rel.bin"
        net.write_bytes(_image(words=26, rt=(1, 1, 3), c_name=name.encode()).ljust(n, b"\0"))
        par = None
        if p:
            par = tmp_path / f"{name}_rel_params.bin"
            par.write_bytes(bytes(p))
        files.append(ModelFiles(name, str(net), str(par) if par else None))
    images = layout(files, DK, multi_model=True, flags=mrel.FLAG_XIP)
    assert [(im.role, hex(im.address), len(im.data)) for im in images] == [
        ("header", "0x70fff000", 12 + 3 * 8), ("network", "0x71000000", S + 1), ("params", "0x71800000", 3),
        ("network", "0x71020000", 300), ("network", "0x71030000", 400), ("params", "0x71810000", 2 * S)]
    assert mrel.parse(images[0].data) == (1, [(0x71000000, 0x71800000), (0x71020000, 0), (0x71030000, 0x71810000)])
    assert images[0].data[:4] == b"MREL"
    check_layout([im.placed for im in images], DK)
    with pytest.raises(N6Error, match="3 models for a 2.x install"):
        layout(files, DK, multi_model=False)
    with pytest.raises(N6Error, match="5 models; the multi-model header holds at most 4"):
        layout(files + files[:2], DK, multi_model=True)


def test_a_3x_set_never_holds_two_models_of_one_c_name(tmp_path):
    """ST's firmware runs the first model of the c-name the host asks for: the gate refuses a set
    holding a name twice, and a whole project's sets keep the models of one name apart."""
    from n6.flash.step import board_sets
    files = []
    for model, c_name in (("a", b"network"), ("b", b"kws"), ("c", b"network")):
        net = tmp_path / f"{model}_rel.bin"
        net.write_bytes(_image(words=26, rt=(1, 1, 3), c_name=c_name))
        files.append(ModelFiles(model, str(net)))
    assert len(layout(files[:2], DK, multi_model=True)) == 3
    with pytest.raises(N6Error, match=f"^{tmp_path}/c_rel.bin: its model is named 'network' on the board, as "
                       f"{tmp_path}/a_rel.bin's is: .* \\(fix: give each model its own c-name"):
        layout(files, DK, multi_model=True)
    names = {"a": "network", "b": "kws", "c": "network", "d": "network", "e": "x", "f": "y", "g": "z"}
    assert board_sets("abcdefg", True, (), names) == [("a", "b", "e", "f"), ("c", "g"), ("d",)]
    assert board_sets("abcdefg", True, ("f",), names) == [("f",), ("a", "b", "e", "g"), ("c",), ("d",)]
    assert board_sets("abc", False, (), names) == [("a",), ("b",), ("c",)]
    assert board_sets("a", False, ("a", "b")) == [("a",)]          # a 3.x set held, then a 2.x install


# -- absolute external-RAM pools ---------------------------------------------------------------------

def _pools_image(ext_ram_sz, *pools):
    """What check_external_pools reads of an image: rt_ctx's ext_ram_sz and the descriptors."""
    from types import SimpleNamespace
    from n6.reloc.image import PoolDescriptor, RtCtx
    from n6.reloc.pools import flags_word
    descs = [PoolDescriptor(0, flags_word(kind, 1, 3, 0), 0, dst, size, name) for name, kind, dst, size in pools]
    return SimpleNamespace(rt_ctx=RtCtx(ext_ram_sz=ext_ram_sz), descriptors=descs)


COPY, RESET, RELOC = 2, 3, 1


@pytest.mark.parametrize("ext_ram_sz, pools, ext_exec, message", [
    (0, [("xSPI1", COPY, 0x90000000, 32 << 20)], None, None),                   # the whole PSRAM, nothing else there
    (0, [("xSPI1", COPY, 0x91E00000, 2 << 20)], (0x91C00000, 0x100008), None),   # above the -ext exec RAM
    (1 << 20, [("xSPI1", RESET, 0x90000000, 1 << 20)], None, None),              # below the loader's pool
    (1 << 20, [("xSPI1", RESET, 0x90200000, 4)], None, None),                    # above it
    (1 << 20, [("AXISRAM5", COPY, 0x342E0000, 0x70000), ("xSPI2", RELOC, 0, 1 << 30)], None, None),  # not external RAM
    (0, [("xSPI1", COPY, 0x90000000, (32 << 20) + 1)], None,
     "absolute pool 'xSPI1' at 0x90000000-0x92000008 (33554440 bytes) is outside the board's external RAM "
     "0x90000000-0x92000000 (fix: move the pool in the .mpool, or describe the RAM in [memory] external_ram_device"),
    (0, [("hyperRAM", RESET, 0x8FFFFFF8, 64)], None, "outside the board's external RAM 0x90000000-0x92000000"),
    (0x100001, [("xSPI1", RESET, 0x90200000, 64)], None,
     "absolute pool 'xSPI1' at 0x90200000-0x90200040 (64 bytes) overlaps the loader's relocatable external-RAM pool "
     "0x90100000-0x90200008 (8 bytes) (fix: move the pool in the .mpool above it, or make it USEMODE_RELATIVE)"),
    (0, [("xSPI1", COPY, 0x91D00000, 1 << 20)], (0x91C00000, 0x100008),
     "absolute pool 'xSPI1' at 0x91D00000-0x91E00000 (1048576 bytes) overlaps the -ext firmware's exec RAM "
     "0x91C00000-0x91D00008 (8 bytes)"),
])
def test_absolute_external_ram_pools(ext_ram_sz, pools, ext_exec, message):
    from n6.flash.gate import check_external_pools
    board = load_board(board_path("stm32n6570-dk"))
    img = _pools_image(ext_ram_sz, *pools)
    if message is None:
        check_external_pools("x_rel.bin", img, board, ext_exec)
        return
    with pytest.raises(N6Error) as e:
        check_external_pools("x_rel.bin", img, board, ext_exec)
    assert str(e.value).startswith("x_rel.bin: ") and message in str(e.value) and "\n" not in str(e.value)


def test_absolute_external_ram_pool_on_a_board_without_external_ram():
    from n6.flash.gate import check_external_pools
    board = load_board(board_path("nucleo-n657x0-q"))
    with pytest.raises(N6Error, match="is outside the board's external RAM \\(it has none\\)"):
        check_external_pools("x", _pools_image(0, ("xSPI1", COPY, 0x90000000, 64)), board)
