"""ST's validation firmware of an install: the variant that loads an image (ST's fallbacks), and
the facts its loader checks read from the ELF, on tiny firmwares this test builds with the real
GNU Arm toolchain (and, with the real test bed, on ST's own prebuilt ELFs)."""
import glob
import os
import subprocess
from dataclasses import replace

import pytest

from n6.board import load_board
from n6.errors import N6Error
from n6.flash import validation_firmware as vf
from n6.flash.gate import check_firmware
from n6.stedgeai_install import VALIDATION_FIRMWARE_DIR

from test_flash_deploy import _image

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
DK = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "firmware", "boards",
                  "stm32n6570-dk.toml")

FIRMWARE_C = r"""
typedef struct { unsigned int words[14]; } LL_Buffer_InfoTypeDef;            /* 56 bytes */
typedef struct {
    void (*start_epoch_block)(const void *);
    void (*end_epoch_block)(const void *);
    unsigned int blob_address, wait_mask;
    unsigned int flags;
#ifdef DBG_INFO
    unsigned short epoch_num, last_epoch_num;
    unsigned int in_streng_mask, out_streng_mask;
    unsigned long long estimated_npu_cycles, estimated_tot_cycles;
#endif
} EpochBlock_ItemTypeDef;
LL_Buffer_InfoTypeDef buffers[2];
EpochBlock_ItemTypeDef epochs[2];
#ifdef VERSION
__attribute__((used)) const char version_desc[] = VERSION;
#endif
#ifdef SECURE
int __attribute__((cmse_nonsecure_entry)) entry(int x) { return x + (int)epochs[0].flags; }
#else
int entry(int x) { return x + (int)epochs[0].flags + (int)buffers[0].words[0]; }
#endif
"""


def build(tmp_path, name="fw.elf", version="atonn-v1.1.1-12-g0123abcd", secure=True, dbg=True, debug=True,
          hard=True):
    src = tmp_path / "fw.c"
    src.write_text(FIRMWARE_C)
    out = tmp_path / name
    argv = ["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-O1", "-nostdlib", "-Wl,--entry=entry",
            "-Wl,-Ttext=0x34000000", "-Wl,--section-start=.gnu.sgstubs=0x34010000",   # SRAM, as ST's firmware
            f"-mfloat-abi={'hard' if hard else 'soft'}", "-o", str(out), str(src)]
    argv += (["-g"] if debug else []) + (["-mcmse", "-DSECURE"] if secure else []) + (["-DDBG_INFO"] if dbg else [])
    argv += [f'-DVERSION="{version}"'] if version else []
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    return str(out)


@pytest.mark.parametrize("kwargs, name", [
    ({}, "stm32n6570-dk-validation-reloc-copy.elf"),
    ({"mode": "xip"}, "stm32n6570-dk-validation-reloc-xip.elf"),
    ({"copy_size": 640 << 10}, "stm32n6570-dk-validation-reloc-copy.elf"),
    ({"copy_size": (640 << 10) + 8}, "stm32n6570-dk-validation-reloc-copy-ext.elf"),     # ST's COPY fallback
    ({"mode": "xip", "copy_size": 2 << 20}, "stm32n6570-dk-validation-reloc-xip.elf"),
    ({"usbc": True}, "stm32n6570-dk-validation-reloc-copy-usbc.elf"),
    ({"copy_size": 1 << 20, "usbc": True}, "stm32n6570-dk-validation-reloc-copy-ext-usbc.elf"),
    ({"max_speed": True, "mode": "xip"}, "stm32n6570-dk-validation-reloc-xip-5529600.elf"),
])
def test_variant_choice(kwargs, name):
    v = vf.choose_variant("2.2", **kwargs)
    assert v.name == name and v.exec_ram_size == (4 << 20 if "-ext" in name else 640 << 10)


def test_variant_limits():
    assert vf.choose_variant("2.2", ext_ram_size=27 << 20).name == "stm32n6570-dk-validation-reloc-copy.elf"
    with pytest.raises(N6Error, match=r"^x.bin: Model requires more external RAM than available 28311560 > 28311552"):
        vf.choose_variant("2.2", ext_ram_size=(27 << 20) + 8, where="x.bin")
    with pytest.raises(N6Error, match="more than the 4194304 of the -ext firmware"):
        vf.choose_variant("2.2", copy_size=(4 << 20) + 8)
    assert vf.choose_variant("3.0", copy_size=8 << 20).name == "stm32n6570-dk-validation-reloc.elf"


def test_variant_for_an_image_and_a_board():
    from n6.reloc.image import Image
    board = load_board(DK)
    img = Image.parse(_image())
    assert vf.variant_for("2.2", img, board, copy_mode=False).name == "stm32n6570-dk-validation-reloc-xip.elf"
    fast = replace(board, validation=replace(board.validation, baudrate=5_529_600))
    assert vf.variant_for("2.2", img, fast, copy_mode=True).name == "stm32n6570-dk-validation-reloc-copy-5529600.elf"
    assert [v.name for v in vf.possible_variants("2.2", board, True)] == [
        "stm32n6570-dk-validation-reloc-copy.elf", "stm32n6570-dk-validation-reloc-copy-ext.elf"]


def test_facts_of_a_firmware_elf(tmp_path):
    fw = vf.read_firmware(build(tmp_path))
    assert (fw.release, fw.secure, fw.dbg_info, fw.fpu, fw.cpu_part, fw.ll_aton, fw.struct_sizes) == \
        ("2.2", True, True, True, 0xD22, (1, 1, 1), 56 | 48 << 8)
    fw = vf.read_firmware(build(tmp_path, version="atonn-v1.1.3-8-g0123abcd", secure=False, dbg=False, hard=False))
    assert (fw.release, fw.secure, fw.dbg_info, fw.fpu, fw.ll_aton, fw.struct_sizes) == \
        ("3.0", False, False, False, (1, 1, 3), 56 | 20 << 8)


def test_facts_an_elf_does_not_carry_are_unknown(tmp_path):
    path = build(tmp_path, debug=False)
    subprocess.run(["arm-none-eabi-strip", "-s", path], check=True)
    fw = vf.read_firmware(path)
    assert (fw.secure, fw.dbg_info, fw.struct_sizes, fw.ll_aton) == (None, None, None, (1, 1, 1))


@pytest.mark.parametrize("kwargs, message", [
    ({"version": None}, "no LL_ATON version description (atonn-v...) in the firmware's data"),
    ({"version": "atonn-v9.9.9-1-gabc"}, "LL_ATON 9.9.9 of this firmware belongs to no supported ST Edge AI Core"),
])
def test_unusable_firmware_is_one_line(tmp_path, kwargs, message):
    path = build(tmp_path, **kwargs)
    with pytest.raises(N6Error) as e:
        vf.read_firmware(path)
    assert str(e.value).startswith(f"{path}: {message}") and "[firmware]" in str(e.value)
    (tmp_path / "junk.elf").write_bytes(b"\x7fELF" + b"\0" * 60)
    with pytest.raises(N6Error, match="junk.elf: unreadable firmware ELF"):
        vf.read_firmware(str(tmp_path / "junk.elf"))


@pytest.mark.parametrize("kwargs, image, message", [
    ({"dbg": False}, {}, "dbg-info on but the firmware's is off ({fw}): INVALID_BIN"),
    ({"secure": False}, {}, "secure image (-mcmse) for a non-secure firmware ({fw}): INVALID_BIN"),
    ({"hard": False}, {}, "built for an FPU the firmware does not enable (CPACR) ({fw}): INVALID_BIN"),
    ({"version": "atonn-v1.1.0-31-gabc"}, {}, None),   # no 2.1 release: the reader refuses it
    ({}, {"rt": (1, 1, 3)}, "runtime 1.1.3 but the firmware's LL_ATON is 1.1.1 ({fw}): INVALID_BIN"),
])
def test_gate_judges_an_image_by_the_firmware_read_from_its_elf(tmp_path, kwargs, image, message):
    path = build(tmp_path, **kwargs)
    if message is None:
        with pytest.raises(N6Error, match="belongs to no supported"):
            vf.read_firmware(path)
        return
    with pytest.raises(N6Error) as e:
        check_firmware("x_rel.bin", _image(**image), vf.read_firmware(path), None, "board.toml")
    assert message.format(fw=path) in str(e.value)


def test_gate_checks_the_struct_sizes_the_elf_describes(tmp_path):
    fw = vf.read_firmware(build(tmp_path))
    assert check_firmware("x", _image(), fw, None, "b") == []
    with pytest.raises(N6Error, match=r"sizeof\(LL_Buffer_InfoTypeDef\) / sizeof\(EpochBlock_ItemTypeDef\) are "
                                      r"56 / 48 in the image, 56 / 40 in the firmware \(.*fw.elf\): INVALID_BIN"):
        check_firmware("x", _image(), replace(fw, struct_sizes=56 | 40 << 8), None, "b")


def test_installed_firmware(tmp_path):
    from n6.reloc.image import Image
    board, img = load_board(DK), Image.parse(_image())
    assert vf.installed_firmware(str(tmp_path), "2.2", img, board, False) is None    # the simulated install
    folder = tmp_path / VALIDATION_FIRMWARE_DIR
    folder.mkdir(parents=True)
    with pytest.raises(N6Error, match="The 'stm32n6570-dk-validation-reloc-xip.elf' is not available"):
        vf.installed_firmware(str(tmp_path), "2.2", img, board, False)
    build(folder, "stm32n6570-dk-validation-reloc-xip.elf", dbg=False)
    assert vf.installed_firmware(str(tmp_path), "2.2", img, board, False).dbg_info is False


_real = pytest.mark.skipif(not (REAL and glob.glob(os.path.join(REAL, "2.2", VALIDATION_FIRMWARE_DIR, "*.elf"))),
                           reason="no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)")


@_real
def test_st_prebuilt_firmwares():
    """ST's 2.2 reloc validation firmwares: LL_ATON 1.1.1, secure, dbg-info, hard-float, 56/48."""
    root = os.path.join(REAL, "2.2")
    paths = sorted(glob.glob(os.path.join(root, VALIDATION_FIRMWARE_DIR, "stm32n6570-dk-validation-reloc-*.elf")))
    assert len(paths) == 10
    for path in paths:
        fw = vf.read_firmware(path)
        assert (fw.release, fw.secure, fw.dbg_info, fw.fpu, fw.ll_aton, fw.struct_sizes) == \
            ("2.2", True, True, True, (1, 1, 1), 0x3038), path
    board = load_board(DK)
    for kwargs in ({}, {"mode": "xip"}, {"copy_size": 1 << 20}, {"mode": "xip", "usbc": True},
                   {"copy_size": 1 << 20, "usbc": True}, {"max_speed": True}):
        assert os.path.isfile(vf.firmware_path(root, vf.choose_variant("2.2", **kwargs)))
    # an image as a 2.2 install builds it passes; its non-secure build only warns
    from n6.reloc.image import Image
    fw = vf.installed_firmware(root, "2.2", Image.parse(_image()), board, True)
    assert check_firmware("x", _image(), fw, 27 << 20, "b") == []
    assert check_firmware("x", _image(secure=False), fw, 27 << 20, "b") == \
        ["x: non-secure image on a secure firmware (the loader warns, installs)"]
