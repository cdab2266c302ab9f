"""Board files (n6.board) and the simulated board's on-disk state (programmer_sim.board_state)."""
import os

import pytest

from n6.board import Region, load_board
from n6.board_files import BOARDS_DIR, available_boards, board_path
from n6.errors import N6Error
from programmer_sim.board_state import BoardState, FlashError


def test_bundled_boards_load():
    assert available_boards() == ["nucleo-n657x0-q", "stm32n6570-dk"]
    dk = load_board(board_path("stm32n6570-dk"))
    assert (dk.flash.base, dk.flash.size, dk.flash.sector_size, dk.flash.page_size) == \
        (0x70000000, 128 << 20, 64 << 10, 4 << 10)
    assert dk.flash.no_write == ((0x70000000, 0x70FF0000),)
    assert (dk.images.network, dk.images.params, dk.images.multi_model_header) == (0x71000000, 0x71800000, 0x70FFF000)
    assert dk.flash.external_loader == "MX66UW1G45G_STM32N6570-DK.stldr"
    assert (dk.memory.exec_ram.size, dk.memory.external_ram.size) == (640 << 10, 27 << 20)
    assert dk.memory.external_ram_span == Region("external_ram_device", 0x90000000, 32 << 20)
    assert [r.name for r in dk.memory.npu_ram] == ["npuRAM3", "npuRAM4", "npuRAM5", "npuRAM6"]
    assert (dk.validation.baudrate, dk.validation.header, dk.programmer.backend) == (921600, "2byte", "auto")
    assert dk.key == "stm32n6570-dk" and dk.firmware is None
    nucleo = load_board(board_path("nucleo-n657x0-q"))
    assert nucleo.flash.external_loader == "MX25UM51245G_STM32N6570-NUCLEO.stldr"
    assert nucleo.memory.external_ram_span == nucleo.memory.external_ram     # no external_ram_device key
    # the boot area ends on the sector boundary below the sector holding the multi-model header
    assert dk.flash.no_write[0][1] == dk.images.multi_model_header - dk.images.multi_model_header % dk.flash.sector_size


@pytest.mark.parametrize("edit, message", [
    (("sector_size = 0x10000", "sector_size = 0x10001"), "key flash.sector_size: 0x10001 is not a power of two"),
    (("page_size = 0x1000", "page_size = 0x1000\ncolour = 1"), "key flash.colour: unknown key"),
    (("backend = \"auto\"", "backend = \"jlink\""), "key programmer.backend: 'jlink' is not one of"),
    (("baudrate = 921600", "baudrate = \"fast\""), "key validation.baudrate: 'fast' is not an integer"),
    (("network = 0x71000000", ""), "key images.network: missing"),
    (("[validation]", "[validation2]"), "key [validation]: missing table"),
    (("no_write = [[0x70000000, 0x70FF0000]]", "no_write = [[0x70FF0000, 0x70000000]]"), "key flash.no_write:"),
    (("exec_ram = { base = 0x34060000, size = 0xA0000 }", "exec_ram = { base = 0x34060000 }"),
     "key memory.exec_ram.size: missing"),
    (("{ name = \"npuRAM4\", base", "{ nam = \"npuRAM4\", base"), "key memory.npu_ram[1].name: missing"),
    (("header = \"2byte\"", "header = \"3byte\""), "key validation.header: '3byte' is not one of 2byte, 1byte"),
    (("[flash]", "[flash"), "malformed board file"),
    (("external_ram_device = { base = 0x90000000, size = 0x02000000 }",
      "external_ram_device = { base = 0x90000000, size = 0x01000000 }"),
     "key memory.external_ram: 0x90100000-0x91C00000 is not inside external_ram_device 0x90000000-0x91000000"),
])
def test_board_errors_name_file_and_key(tmp_path, edit, message):
    text = open(os.path.join(BOARDS_DIR, "stm32n6570-dk.toml")).read()
    assert edit[0] in text
    path = tmp_path / "myboard.toml"
    path.write_text(text.replace(edit[0], edit[1], 1))
    with pytest.raises(N6Error) as e:
        load_board(path)
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value)
    assert "\n" not in str(e.value)


def test_board_parsed_once_per_content(tmp_path):
    """Every model's steps ask for the board: one parse per build, yet a rewritten file (here of
    the same size, within the same clock tick) is never answered from the memo."""
    path = tmp_path / "b.toml"
    text = open(os.path.join(BOARDS_DIR, "stm32n6570-dk.toml")).read()
    path.write_text(text)
    first = load_board(path)
    assert load_board(path) is first
    path.write_text(text.replace("baudrate = 921600", "baudrate = 115200"))
    assert load_board(path).validation.baudrate == 115200


def test_missing_board_lists_the_bundled_ones():
    with pytest.raises(N6Error, match="board file not found.*nucleo-n657x0-q, stm32n6570-dk"):
        load_board(board_path("nosuchboard"))


@pytest.mark.parametrize("make, problem", [
    (lambda p: p.write_bytes(b"name = \"dk\xe9\"\n"), r"board file is not UTF-8 \(byte 0xE9"),
    (lambda p: p.mkdir(), "board file is a folder"),
])
def test_unreadable_board_file_is_one_line(tmp_path, make, problem):
    path = tmp_path / "b.toml"
    make(path)
    with pytest.raises(N6Error, match=problem):
        load_board(path)


def test_board_state_sparse_erase_before_program(tmp_path):
    state = BoardState(tmp_path / "board")
    assert state.probe() == {"serial": "004200000000000000000001", "boot": "development"}
    assert state.read(0x7100FFFE, 4) == b"\xff" * 4
    state.program(0x7100FFFE, b"abcd")                # crosses a sector boundary
    assert state.sectors() == [0x71000000, 0x71010000]
    assert sorted(os.listdir(tmp_path / "board" / "flash")) == ["71000000.bin", "71010000.bin"]
    assert all(os.path.getsize(tmp_path / "board" / "flash" / n) == 0x10000 for n in ("71000000.bin", "71010000.bin"))
    assert state.read(0x7100FFFC, 8) == b"\xff\xffabcd\xff\xff"
    with pytest.raises(FlashError, match="not erased"):
        state.program(0x71010000, b"x")
    state.erase_sector(0x71010000)
    state.program(0x71010000, b"x")
    assert state.read(0x7100FFFE, 3) == b"abx"
    with pytest.raises(FlashError, match="sector boundary"):
        state.erase_sector(0x71001000)
    assert [e["op"] for e in state.events()] == ["program", "erase", "program"]
    state.set_probe(serial="ABC", boot="flash")
    assert BoardState.from_env({"N6_SIM_BOARD": str(tmp_path / "board")}).probe() == {"serial": "ABC", "boot": "flash"}
