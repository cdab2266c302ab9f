"""The flash library's rules in-process, with an in-memory board in place of the programmer: the
record folder of a probe, which records a save drops (and which touching ones it keeps), sectors
and runs at their edges, the read-back ranges of each image kind, the 2.x layout, the report's
figures, and each reason a whole image is written. test_flash_deploy.py runs the same through the
simulated programmer, seconds per test."""
import dataclasses
import json
import struct

import pytest

from n6.board import load_board
from n6.board_files import board_path
from n6.errors import N6Error
from n6.flash.deploy import FlashImage, ImageResult, ModelFiles, deploy, layout, readback_ranges
from n6.flash.gate import (Placed, board_firmware, check_external_pools, check_firmware, check_layout,
                           default_firmware, parse_image)
from n6.flash.records import RecordStore, runs, sectors_of
from n6.reloc.firmware import Firmware
from n6.reloc.image import MAGIC
from test_flash_deploy import COPY, RELOC, RESET, _image, _pools_image

S = 0x10000
A = 0x71800000
DK = load_board(board_path("stm32n6570-dk"))
REGION = ("params", A, 0x78000000)


class Board:
    """A programmer on an in-memory board: reads back ranges, then writes each download."""
    notes = ()

    def __init__(self, serial="S1"):
        self.serial, self.memory, self.calls, self.downloads = serial, {}, [], []

    def exchange(self, ranges, downloads, verify=True, reset="none", on_progress=None):
        self.calls.append(("exchange", list(ranges), [d.address for d in downloads]))
        read = {a: bytes(self.memory.get(a + i, 0xFF) for i in range(n)) for a, n in ranges}
        return self.serial, read, self._write(downloads)

    def program(self, downloads, verify=True, reset="none", on_progress=None):
        self.calls.append(("program", [d.address for d in downloads]))
        return self._write(downloads)

    def _write(self, downloads):
        for d in downloads:
            data = open(d.path, "rb").read()
            self.downloads.append((d.address, len(data)))
            self.memory.update((d.address + i, b) for i, b in enumerate(data))
        return [0.5] * len(downloads)


def _params(data, address=A):
    return FlashImage("p.bin", address, bytes(data), "params", ("m",), REGION)


def _flash(tmp_path, board, images, hint="S1", **kw):
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return deploy(images, board, RecordStore(tmp_path / "records"), S, str(work), serial_hint=hint, **kw)


# -- records ------------------------------------------------------------------------------------

def test_a_probes_records_live_in_a_folder_named_by_its_serial(tmp_path):
    store = RecordStore(tmp_path)
    store.save("00:42/ab-c_D", A, b"x", "p.bin")
    store.save("0042", A, b"y", "p.bin")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0042", "00_42_ab-c_D"]
    assert json.loads((tmp_path / "0042" / "71800000.json").read_text()) == {
        "address": "0x71800000", "size": 1, "source": "p.bin",
        "sha256": "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa"}


@pytest.mark.parametrize("other, size, dropped", [(A - 10, 10, False), (A - 10, 11, True), (A + 100, 5, False),
                                                  (A + 99, 5, True), (A + 40, 2, True)])
def test_a_save_drops_the_records_it_overwrites_and_keeps_those_it_touches(tmp_path, other, size, dropped):
    store = RecordStore(tmp_path)
    store.save("S", other, b"o" * size, "o.bin")
    store.save("S", A, b"n" * 100, "n.bin")
    assert store.load("S", other) == ((None, "no record for this board") if dropped else (b"o" * size, None))
    assert store.load("S", A) == (b"n" * 100, None)


def test_sectors_and_runs_at_their_edges():
    assert sectors_of(A, 0, S) == [A] and sectors_of(A + 5, 0, S) == [A]     # an empty image names its sector
    assert sectors_of(A + 5, S - 5, S) == [A] and sectors_of(A + 5, S - 4, S) == [A, A + S]
    assert runs([A + 3 * S, A, A + 2 * S], S) == [(A, A + S), (A + 2 * S, A + 4 * S)]
    assert runs([A, A + 2 * S, A + 4 * S, A + 5 * S], S) == [(A, A + S), (A + 2 * S, A + 3 * S), (A + 4 * S, A + 6 * S)]


# -- read-back, layout, report --------------------------------------------------------------------

def _network_record(words, data_at=0x100, rt_at=0x10, extra=0):
    """An image's first bytes: data_data and rt_ctx words, rt_ctx `rt_at` bytes into the data."""
    hdr = [0] * words
    hdr[4], hdr[words - 1] = 0x2000_0000 + data_at, 0x4000_0000 + rt_at
    if words == 26:
        hdr[23] = 0x2000_0010
    return struct.pack(f"<{words}I", *hdr).ljust(data_at + rt_at + 68 + extra, b"\0")


@pytest.mark.parametrize("words", [24, 26])
def test_a_network_image_is_trusted_by_its_header_and_rt_ctx(words):
    record = _network_record(words)
    image = FlashImage("n.bin", 0x71000000, record, "network", ("m",), ("network", 0x71000000, A))
    assert readback_ranges(image, record) == [(0x71000000, 4 * words), (0x71000000 + 0x110, 68)]
    assert readback_ranges(image, record[:-1]) == [(0x71000000, 4 * words)]     # rt_ctx past the record
    assert readback_ranges(image, record[:103]) == [(0x71000000, 103)]           # too short for a header: all


def test_params_are_trusted_by_their_first_256_bytes_and_a_header_whole():
    assert readback_ranges(_params(bytes(1000)), bytes(1000)) == [(A, 256)]
    assert readback_ranges(_params(bytes(100)), bytes(100)) == [(A, 100)]
    header = FlashImage("h", 0x70FFF000, bytes(36), "header", ("a", "b"), ("h", 0x70FFF000, 0x71000000))
    assert readback_ranges(header, bytes(36)) == [(0x70FFF000, 36)]


def test_a_2x_board_takes_one_model_at_its_addresses(tmp_path):
    net, par = tmp_path / "m_rel.bin", tmp_path / "m_rel_params.bin"
    net.write_bytes(b"n" * 10)
    par.write_bytes(b"p" * 20)
    images = layout([ModelFiles("m", str(net), str(par))], DK, multi_model=False)
    assert [(im.role, im.address, im.data, im.region) for im in images] == [
        ("network", DK.images.network, b"n" * 10, ("network", DK.images.network, DK.images.params)),
        ("params", DK.images.params, b"p" * 20, ("params", DK.images.params, DK.flash.end))]


def test_an_image_result_reports_its_figures():
    r = ImageResult(_params(b"x" * 10), 3, [A], bytes_written=10, seconds=0.12345, full_reason="FORCE=1")
    assert r.as_dict() == {"path": "p.bin", "role": "params", "models": ["m"], "address": "0x71800000", "size": 10,
                           "sha256": _params(b"x" * 10).sha256, "sectors": 3, "sectors_written": 1,
                           "sectors_skipped": 2, "bytes_written": 10, "seconds": 0.123, "full_write_reason": "FORCE=1"}


# -- deploy ---------------------------------------------------------------------------------------

def test_an_unreadable_pending_list_writes_every_image_whole(tmp_path):
    board = Board()
    data = bytes(range(256)) * 600                                   # 3 sectors
    _flash(tmp_path, board, [_params(data)])
    r = _flash(tmp_path, board, [_params(data)])
    assert r.images[0].written == [] and r.images[0].full_reason is None
    (tmp_path / "records" / "S1" / "pending.json").write_text("{")
    r = _flash(tmp_path, board, [_params(data)])
    assert r.images[0].full_reason == "damaged record of an interrupted flash" and len(r.images[0].written) == 3
    assert not (tmp_path / "records" / "S1" / "pending.json").exists()
    r = _flash(tmp_path, board, [_params(data)], force=True)
    assert r.images[0].full_reason == "FORCE=1" and r.images[0].bytes_written == len(data)


def test_a_dry_run_writes_no_record_and_no_pending_list(tmp_path):
    board = Board()
    r = _flash(tmp_path, board, [_params(b"d" * 100)], dry_run=True)
    assert (r.serial, r.programmer_calls, len(r.images[0].written)) == ("S1", 0, 1)
    assert not (tmp_path / "records").exists() or not any((tmp_path / "records").rglob("*"))


def test_another_probe_gets_everything_and_the_expected_ones_pending_list_stays(tmp_path):
    board = Board("S2")
    data = b"z" * (2 * S)
    store = RecordStore(tmp_path / "records")
    store.save("S1", A, data, "p.bin")
    store.set_pending("S1", {0x71000000})
    r = _flash(tmp_path, board, [_params(data)])
    assert r.serial == "S2" and r.images[0].full_reason == "another probe answered than the records are for"
    assert r.images[0].written == [A, A + S] and board.calls[-1] == ("program", [A])
    assert store.pending("S1") == {0x71000000} and store.pending("S2") == set()
    assert store.load("S2", A) == (data, None)
    r = _flash(tmp_path, board, [_params(data)], hint=None)
    assert r.serial == "S2" and r.images[0].full_reason == "no record for this board"


def test_pending_sectors_of_other_images_stay_pending_after_a_flash(tmp_path):
    board = Board()
    store = RecordStore(tmp_path / "records")
    store.set_pending("S1", {0x71000000})                            # another model's image, interrupted
    _flash(tmp_path, board, [_params(b"p" * 10)])
    assert store.pending("S1") == {0x71000000}


def test_a_probe_that_does_not_say_its_serial_is_the_expected_one(tmp_path):
    board = Board(serial=None)
    assert _flash(tmp_path, board, [_params(b"p" * 10)]).serial == "S1"
    assert _flash(tmp_path, board, [_params(b"p" * 10)], hint=None).serial == "unknown"


def test_another_probe_with_an_unreadable_pending_list_is_written_whole(tmp_path):
    board = Board("S2")
    store = RecordStore(tmp_path / "records")
    store.save("S1", A, b"q" * 10, "p.bin")
    store.set_pending("S2", {A})
    (tmp_path / "records" / "S2" / "pending.json").write_text("[")
    r = _flash(tmp_path, board, [_params(b"q" * 10)])
    assert r.images[0].written == [A] and store.pending("S2") == set() and store.load("S2", A) == (b"q" * 10, None)


# -- the gate -------------------------------------------------------------------------------------

def _refusal(placed):
    with pytest.raises(N6Error) as e:
        check_layout(placed, DK)
    return str(e.value)


def test_layout_refusals_at_their_edges():
    page = DK.flash.page_size
    assert f"address 0x70FFF100 is not aligned to {page // 1024} KB (page)" in _refusal(
        [Placed("h", 0x70FFF100, 20, "header", ("h", 0x70FFF000, 0x71000000))])
    below = Placed("a", 0x70FF0000, 0x810000, "network", ("network", 0x71000000, 0x71800000))   # ends at the end
    assert "(8388608 bytes; 65536 bytes over)" in _refusal([below])
    a = Placed("a", 0x71000000, S + 1, "network", ("network", 0x71000000, 0x71800000))
    b = Placed("b", 0x71020000, 10, "network", ("network", 0x71000000, 0x71800000))
    check_layout([a, b], DK)
    assert "b: 10 bytes at 0x71010000-0x7101000A overlaps a (65537 bytes at 0x71000000-0x71010001) (fix" in _refusal(
        [a, Placed("b", 0x71010000, 10, "network", ("network", 0x71000000, 0x71800000))])     # a's last byte
    assert "overlaps a (65537 bytes at 0x71000000-0x71010001) within the same 64 KB erase sector" in _refusal(
        [a, Placed("h", 0x71011000, 20, "header", ("h", 0x71011000, 0x71012000))])


def test_the_board_files_firmware_decides_first():
    fw = Firmware("3.0", secure=False)
    board = dataclasses.replace(DK, firmware=fw)
    assert board_firmware(board, None) == (fw, f"{DK.name}: the [firmware] of {DK.path}")


def test_an_image_is_its_magic_and_a_96_byte_header_at_least():
    assert parse_image("x", MAGIC.to_bytes(4, "little") + bytes(92)).header.magic == MAGIC
    with pytest.raises(N6Error, match="x: Invalid magic value - 4030201 instead 4e49424e"):
        parse_image("x", bytes([1, 2, 3, 4, 5]) + bytes(200))
    with pytest.raises(N6Error, match="Invalid magic value - 4e49424e instead 4e49424e"):
        parse_image("x", MAGIC.to_bytes(4, "little") + bytes(91))


def test_external_ram_need_is_rounded_to_8_bytes():
    check_firmware("x", _image(ext=8), default_firmware("2.2"), 8, "b")
    check_firmware("x", _image(ext=1), default_firmware("2.2"), 8, "b")
    with pytest.raises(N6Error, match="more external RAM than available 16 > 8"):
        check_firmware("x", _image(ext=9), default_firmware("2.2"), 8, "b")


@pytest.mark.parametrize("kind, dst", [(RELOC, 0x90100000), (COPY, 0x70000000), (RESET, 0x7FFFFFF0)])
def test_only_absolute_pools_outside_external_flash_are_placed_in_external_ram(kind, dst):
    check_external_pools("x", _pools_image(1 << 20, ("p", kind, dst, 64)), DK)     # 0x90100000: the loader's pool


def test_a_record_is_damaged_unless_its_description_is_a_dict_with_its_size_and_hash(tmp_path):
    store = RecordStore(tmp_path)
    store.save("S", A, b"abc", "p.bin")
    meta = tmp_path / "S" / "71800000.json"
    good = json.loads(meta.read_text())
    for bad in ([good], dict(good, size=4), dict(good, sha256="0" * 64)):
        meta.write_text(json.dumps(bad))
        assert store.load("S", A) == (None, "damaged record")


def test_files_other_than_records_in_a_probes_folder_are_left_alone(tmp_path):
    store = RecordStore(tmp_path)
    store.set_pending("S", {A})
    (tmp_path / "S" / "notes.bin").write_bytes(b"n")
    store.save("S", A, b"abc", "p.bin")
    assert (tmp_path / "S" / "notes.bin").exists() and store.pending("S") == {A}
    assert sectors_of(A + S - 1, 1, S) == [A] and sectors_of(A + S - 1, 2, S) == [A, A + S]


def test_each_download_holds_exactly_its_run_of_sectors(tmp_path):
    board = Board()
    data = bytearray(b"a" * (4 * S + 10))
    _flash(tmp_path, board, [_params(data)])
    assert board.downloads == [(A, 4 * S + 10)]
    data[S] ^= 1
    data[4 * S + 3] ^= 1
    r = _flash(tmp_path, board, [_params(data)])
    assert board.downloads[1:] == [(A + S, S), (A + 4 * S, 10)] and r.images[0].bytes_written == S + 10


def test_a_refusal_by_a_firmware_read_from_an_elf_says_where_its_facts_come_from():
    fw = dataclasses.replace(default_firmware("2.2"), source="ai_validation.elf")
    with pytest.raises(N6Error) as e:
        check_firmware("x", _image(dbg=False), fw, None, "b.toml")
    assert "(ai_validation.elf): INVALID_BIN" in str(e.value)
    assert str(e.value).endswith("describe the firmware in [firmware] of b.toml (it is read from the install's "
                                 "validation firmware now))")


def test_a_no_write_area_refuses_only_the_images_that_reach_it():
    board = dataclasses.replace(DK, flash=dataclasses.replace(DK.flash, no_write=((0x71020000, 0x71030000),)))
    region = ("network", 0x71000000, 0x71800000)
    check_layout([Placed("below", 0x71000000, 0x20000, "network", region),
                  Placed("above", 0x71030000, 10, "network", region)], board)
    with pytest.raises(N6Error, match="would write the boot area 0x71020000-0x71030000"):
        check_layout([Placed("over", 0x71010000, 0x10001, "network", region)], board)


def test_a_pool_just_past_the_external_flash_window_is_placed_in_external_ram():
    """0x80000000 is the first address after memory-mapped flash: a COPY pool there is checked (and,
    outside the DK's external RAM, refused); one in internal memory below 0x60000000 is not."""
    with pytest.raises(N6Error, match=r"absolute pool 'p' at 0x80000000-0x80000040 \(64 bytes\) is outside the "
                                      r"board's external RAM"):
        check_external_pools("x", _pools_image(1 << 20, ("p", COPY, 0x80000000, 64)), DK)
    check_external_pools("x", _pools_image(1 << 20, ("p", COPY, 0x5FFFFFC0, 64)), DK)
