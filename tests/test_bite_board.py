"""Board files (n6.board): both sides of every range check, exact budgets and defaults. Written
against the survivors of tools/mutate.py (target `board`): each test fails on one of those mutants."""
import os

import pytest

from n6.board import load_board
from n6.board_files import BOARDS_DIR
from n6.errors import N6Error
from n6.reloc.firmware import Firmware

DK = open(os.path.join(BOARDS_DIR, "stm32n6570-dk.toml")).read()


def board(tmp_path, *edits):
    text = DK
    for old, new in edits:
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "b.toml"
    path.write_text(text)
    return load_board(path)


def rejected(tmp_path, key, *edits):
    with pytest.raises(N6Error, match=f"key {key}"):
        board(tmp_path, *edits)


def loads_if(ok, tmp_path, key, edit, read, value):
    """The board file with `edit` loads with `read(board) == value` when `ok`, else is refused naming `key`."""
    if ok:
        assert read(board(tmp_path, edit)) == value
    else:
        rejected(tmp_path, key, edit)


NO_WRITE = "no_write = [[0x70000000, 0x70FF0000]]"


@pytest.mark.parametrize("start, end, ok", [
    (0x70000000 - 1, 0x70FF0000, False),           # lo - 1
    (0x70000000, 0x70FF0000, True),                # lo
    (0x70000000, 0x78000000, True),                # hi: the flash's end (exclusive)
    (0x70000000, 0x78000000 + 1, False),           # hi + 1
    (0x70001000, 0x70001000, False),               # empty range: start < end
    (0x70001000, 0x70001001, True),
])
def test_no_write_range_bounds(tmp_path, start, end, ok):
    loads_if(ok, tmp_path, "flash.no_write", (NO_WRITE, f"no_write = [[{start:#x}, {end:#x}]]"),
             lambda b: b.flash.no_write, ((start, end),))


@pytest.mark.parametrize("pair", ["[true, 0x70FF0000]", "[0x70000000, 1.9e9]", "[0x70000000]"])
def test_no_write_pairs_are_two_integers(tmp_path, pair):
    with pytest.raises(N6Error, match=r"key flash.no_write: .* is not a list of \[start, end\] pairs"):
        board(tmp_path, (NO_WRITE, f"no_write = [{pair}]"))


def test_sector_size_must_be_a_multiple_of_page_size(tmp_path):
    rejected(tmp_path, "flash.sector_size", ("page_size = 0x1000", "page_size = 0x3000"))


EXT = "external_ram = { base = 0x90100000, size = 0x01B00000 }"


@pytest.mark.parametrize("base, size, ok", [
    (0x90000000 - 0x1000, 0x1000, False),          # lo - 1 (by one page)
    (0x90000000, 0x1000, True),                    # lo: the device's base
    (0x92000000 - 0x1000, 0x1000, True),           # hi: ends at the device's end
    (0x92000000 - 0x1000, 0x1001, False),          # hi + 1
    (0x20000000, 0, True),                         # no external RAM: nothing to place
])
def test_external_ram_inside_the_device(tmp_path, base, size, ok):
    loads_if(ok, tmp_path, "memory.external_ram", (EXT, f"external_ram = {{ base = {base:#x}, size = {size:#x} }}"),
             lambda b: b.memory.external_ram.base, base)


def test_budgets_are_the_image_regions_and_rams(tmp_path):
    dk = board(tmp_path)
    assert dk.budgets == {"flash": 0x71800000 - 0x71000000, "params_flash": 0x78000000 - 0x71800000,
                          "exec_ram": 0xA0000, "ext_ram": 0x01B00000}
    assert board(tmp_path, ("size = 0x01B00000", "size = 0")).budgets["ext_ram"] is None   # 0: gate off


def test_programmer_defaults(tmp_path):
    p = board(tmp_path, ("frequency = 2000", ""), ("access_port = 1", ""), ("backend = \"auto\"", "")).programmer
    assert (p.backend, p.frequency, p.access_port) == ("auto", 2000, 1)
    assert board(tmp_path, ("access_port = 1", "access_port = 0")).programmer.access_port == 0   # 0 is a port


@pytest.mark.parametrize("value, ok", [(-1, False), (0, False), (1, True)])
def test_positive_values_start_at_one(tmp_path, value, ok):
    loads_if(ok, tmp_path, "programmer.frequency", ("frequency = 2000", f"frequency = {value}"),
             lambda b: b.programmer.frequency, value)


def test_negative_non_positive_key_rejected(tmp_path):
    rejected(tmp_path, "programmer.access_port", ("access_port = 1", "access_port = -1"))


def test_firmware_table_is_read(tmp_path):
    fw = board(tmp_path, ("[programmer]", "[firmware]\nrelease = \"3.0\"\nsecure = false\ndbg_info = false\n\n"
                                          "[programmer]")).firmware
    assert fw == Firmware("3.0", False, False, True, 0xD22)


def test_a_table_key_that_is_not_a_table(tmp_path):
    with pytest.raises(N6Error, match=r"key validation: must be a table \(\[validation\]\)"):
        board(tmp_path, ('name = "STM32N6570-DK"', 'name = "STM32N6570-DK"\nvalidation = 3'),
              ("[validation]", "[other]"))


def test_sector_size_must_be_a_power_of_two(tmp_path):
    rejected(tmp_path, "flash.sector_size", ("sector_size = 0x10000", "sector_size = 0x3000"))   # 3 pages


@pytest.mark.parametrize("addr, ok", [(0x70000000 - 1, False), (0x70000000, True), (0x77FFFFFF, True),
                                      (0x78000000, False)])
def test_image_addresses_inside_the_flash(tmp_path, addr, ok):
    loads_if(ok, tmp_path, "images.network", ("network = 0x71000000", f"network = {addr:#x}"),
             lambda b: b.images.network, addr)


def test_an_integer_key_given_true_is_refused(tmp_path):
    with pytest.raises(N6Error, match="key flash.page_size: True is not an integer"):
        board(tmp_path, ("page_size = 0x1000", "page_size = true"))
