"""The loader model's pieces (n6.reloc.check) in process, without a build: the memory it installs
into, the pool table's rules per descriptor kind, and the exact figures its refusals name. Written
against the survivors of tools/mutate.py (target `reloc-check`); the rules are ST's loader's
(`_ai_reloc_prepare_mpools`), as tests/test_st_loader_judge.py establishes on built images."""
import struct
from types import SimpleNamespace

import pytest

from n6.reloc import check
from n6.reloc.check import InstallMemory, LoaderError
from n6.reloc.firmware import Firmware
from n6.reloc.pools import ATTR_CACHEABLE, ATTR_READ, ATTR_WRITE, DATA_ACTIV, DATA_MIXED, DATA_PARAM, TYPE_COPY, \
    TYPE_RELOC, TYPE_RESET

FILE = 0x7100_0000


# -- the memory the loader is given ------------------------------------------------------------------

def test_fill_zeroes_writable_memory_and_refuses_read_only():
    mem = InstallMemory()
    mem.map(0x3400_0000, bytearray(b"\xAA" * 16))
    mem.map(FILE, b"\xBB" * 16)
    mem.fill(0x3400_0004, 8)
    assert mem.read(0x3400_0000, 16) == b"\xAA" * 4 + bytes(8) + b"\xAA" * 4
    mem.fill(FILE, 0)                                   # memset of nothing: no access at all
    with pytest.raises(LoaderError, match="write of 4 bytes into read-only 0x71000000"):
        mem.fill(FILE, 4)
    with pytest.raises(LoaderError, match="write of 4 bytes at 0x90000000, outside"):
        mem.fill(0x9000_0000, 4)
    mem.fill(0x9000_0000, 4, create=True)
    assert mem.read(0x9000_0000, 4) == bytes(4)


@pytest.mark.parametrize("addr, n, past_file", [
    (FILE + 16 + 8, 4, False), (FILE + 16 + 7, 4, True),   # after the file: 8 bytes of slack and no more
    (FILE - 8 - 4, 4, False), (FILE - 8 - 3, 4, True),     # before it, likewise
])
def test_a_read_near_a_file_is_past_file_within_8_bytes(addr, n, past_file):
    mem = InstallMemory()
    mem.map(FILE, b"\0" * 16)
    with pytest.raises(LoaderError) as e:
        mem.read(addr, n)
    assert e.value.rule == ("past_file" if past_file else None)
    assert e.value.detail.endswith("beyond the image or params file" if past_file else
                                   "outside the image and the memory the loader is given")


def test_a_writable_region_is_no_file():
    mem = InstallMemory()
    mem.map(0x3400_0000, bytearray(16))
    with pytest.raises(LoaderError) as e:
        mem.read(0x3400_0010, 4)
    assert e.value.rule is None


# -- the exact figures of the runtime refusals ---------------------------------------------------------

def test_runtime_version_message_names_each_byte():
    fw = Firmware("2.2", True, True, True, 0xD22)
    with pytest.raises(LoaderError) as e:
        check.check_runtime(0xFE_FF_FD_00, 0, fw)
    assert e.value.detail == f"runtime 254.255.253 but the firmware's LL_ATON is {'.'.join(map(str, fw.version))}"
    assert e.value.fact == "version"


def test_struct_sizes_message_names_each_byte():
    fw = Firmware("2.2", True, True, True, 0xD22, struct_sizes=0x0C18)
    with pytest.raises(LoaderError) as e:
        check.check_runtime(fw.version[0] << 24 | fw.version[1] << 16 | fw.version[2] << 8, 0xFF_FF, fw)
    assert e.value.detail.endswith("are 255 / 255 in the image, 24 / 12 in the firmware")
    check.check_runtime(fw.version[0] << 24 | fw.version[1] << 16 | fw.version[2] << 8 | 0xFF, 0xAB_0C18, fw)


# -- the pool table, descriptor by descriptor (_ai_reloc_prepare_mpools) -----------------------------

TABLE, PARAMS, EXT = 0x100, 0x300, 0x9010_0000
NAME = 0x2000_0010                                   # "p" in the RO part
CONTENT = bytes(range(256))                          # the params: 0x300..0x400 of the file


def pool(kind, dtype=DATA_PARAM, attr=ATTR_READ, pool_id=0, foff=0, dst=0, size=8, name=NAME):
    return struct.pack("<5I", name, kind << 24 | dtype << 16 | attr << 8 | pool_id, foff, dst, size)


def prepare(*descriptors, ext_param_addr=0, params_offset=PARAMS, ext=EXT, ext_size=64, mode=check.MODE_CLEAR):
    """_prepare_pools on a file holding `descriptors` then a terminator: (param0, memory, warnings)."""
    data = bytearray(0x400)
    data[0x10:0x12] = b"p\0"
    table = b"".join(descriptors) + bytes(20)
    data[TABLE:TABLE + len(table)] = table
    data[PARAMS:] = CONTENT
    mem = InstallMemory()
    mem.map(FILE, bytes(data))
    if ext:
        mem.map(ext, bytearray(b"\xEE" * 64))
    cfg = check.Config(ext_ram_addr=ext, ext_ram_size=ext_size, ext_param_addr=ext_param_addr,
                       mode=check.MODE_XIP | mode)
    h = SimpleNamespace(params_offset=params_offset, params_start=0x4000_0000, data_data=0x2000_0000 | TABLE)
    warnings = []
    return check._prepare_pools(mem, bytes(data), FILE, h, cfg, warnings), mem, warnings


def refusal(*descriptors, **kw):
    with pytest.raises(LoaderError) as e:
        prepare(*descriptors, **kw)
    return e.value.name, e.value.detail


def test_params_base_from_the_file_or_the_config():
    assert prepare(pool(TYPE_RELOC, foff=8))[0] == FILE + PARAMS + 8
    assert prepare(pool(TYPE_RELOC, DATA_ACTIV))[0] == FILE + PARAMS      # no PARAM pool: the params' base
    assert prepare(pool(TYPE_RELOC, foff=8), ext_param_addr=0x7180_0000, params_offset=0)[0] == 0x7180_0008
    assert refusal(params_offset=0) == ("PARAM_ADDR", "no params: split image installed without ext_param_addr")
    assert refusal(ext_param_addr=0x7180_0002) == ("PARAM_ADDR", "params address not 4-aligned")


def test_the_table_ends_at_a_null_name_or_flags_within_10_entries():
    wrong = pool(TYPE_RELOC, pool_id=2)                 # refused if the walk reaches it
    assert prepare(pool(TYPE_RELOC, name=0), wrong)[0] == FILE + PARAMS
    assert prepare(struct.pack("<5I", NAME, 0, 0, 0, 0), wrong)[0] == FILE + PARAMS
    assert prepare(*[pool(TYPE_RESET, dst=0x3410_0000)] * 9)[0] == FILE + PARAMS
    assert refusal(*[pool(TYPE_RESET, dst=0x3410_0000)] * 10) == (
        "INVALID_BIN", "descriptor table not terminated within 10 entries")


def test_reloc_pool_0_is_read_only_params():
    for dtype, attr in ((DATA_MIXED, ATTR_READ), (DATA_PARAM, ATTR_READ | ATTR_WRITE)):
        assert refusal(pool(TYPE_RELOC, dtype, attr)) == ("PARAM_DESC", "pool 'p': RELOC id 0 must be read-only params")
    assert refusal(pool(TYPE_RELOC, pool_id=2)) == ("PARAM_DESC", "pool 'p': RELOC id 2")


@pytest.mark.parametrize("base, ok", [(0x6000_0000, False), (0x6000_0004, True)])
def test_cacheable_params_above_the_external_base(base, ok):
    cacheable = pool(TYPE_RELOC, attr=ATTR_READ | ATTR_CACHEABLE)
    if ok:
        assert prepare(cacheable, ext_param_addr=base)[0] == base
    else:
        assert refusal(cacheable, ext_param_addr=base) == ("PARAM_ADDR", "cacheable pool 'p' needs params above "
                                                                          "0x60000000")
    assert prepare(pool(TYPE_RELOC), ext_param_addr=0x2000_0000)[0] == 0x2000_0000   # not cacheable: anywhere


def test_reloc_pool_1_in_external_ram():
    need = ("PARAM_ADDR", "pool 'p' needs 16 bytes of external RAM above 0x60000000")
    mixed = pool(TYPE_RELOC, DATA_MIXED, pool_id=1, foff=4, size=12)        # 12 bytes, 16 with the round-up
    assert prepare(mixed, ext_size=16)[1].read(EXT, 20) == CONTENT[4:20] + b"\xEE" * 4
    assert refusal(mixed, ext_size=15) == need
    assert refusal(mixed, ext=0) == need
    cacheable = pool(TYPE_RELOC, DATA_MIXED, ATTR_READ | ATTR_CACHEABLE, 1, 4, size=12)
    assert refusal(cacheable, ext=0x6000_0000) == need
    assert prepare(cacheable, ext=0x6000_0008)[1].read(0x6000_0008, 4) == CONTENT[4:8]
    assert prepare(pool(TYPE_RELOC, DATA_MIXED, ATTR_READ, 1, 4, size=12), ext=0x6000_0000)[1].read(
        0x6000_0000, 4) == CONTENT[4:8]                                     # not cacheable: any base
    activ = pool(TYPE_RELOC, DATA_ACTIV, ATTR_READ | ATTR_WRITE, 1, size=12)
    assert prepare(activ)[1].read(EXT, 20) == bytes(16) + b"\xEE" * 4      # cleared in MODE_CLEAR
    assert prepare(activ, mode=0)[1].read(EXT, 4) == b"\xEE" * 4           # left as it is otherwise


@pytest.mark.parametrize("dst, in_flash", [(0x6FFF_FFF8, False), (0x7000_0000, True), (0x7FFF_FFF8, True),
                                           (0x8000_0000, False)])
def test_copy_pools_into_memory_mapped_flash_are_a_warning(dst, in_flash):
    param0, mem, warnings = prepare(pool(TYPE_COPY, foff=4, dst=dst, size=6))
    if in_flash:
        assert warnings == [f"COPY pool 'p' targets read-only flash 0x{dst:08X}..0x{dst + 8:08X}: the loader cannot "
                            "write there"]
    else:
        assert warnings == [] and mem.read(dst, 8) == CONTENT[4:12]


@pytest.mark.parametrize("dst, clash", [(FILE - 8, False), (FILE - 7, True), (FILE + 0x3FF, True),
                                        (FILE + 0x400, False)])
def test_copy_into_flash_over_the_image_says_so(dst, clash):
    warnings = prepare(pool(TYPE_COPY, dst=dst, size=8))[2]
    assert warnings[0].endswith((f", over the image at 0x{FILE:08X}" if clash else "") +
                                ": the loader cannot write there")


def test_copy_reads_the_whole_rounded_length_from_the_params():
    assert refusal(pool(TYPE_COPY, foff=0xF8, dst=0x7000_0000, size=9))[0] == "INVALID_BIN"   # 16 bytes at 0xF8


def test_reset_pools_cleared_only_in_clear_mode():
    mem = prepare(pool(TYPE_RESET, dst=0x3410_0000, size=5))[1]
    assert mem.read(0x3410_0000, 8) == bytes(8)
    with pytest.raises(LoaderError):
        prepare(pool(TYPE_RESET, dst=0x3410_0000, size=5), mode=0)[1].read(0x3410_0000, 8)


# -- the image's first checks and the loops' bounds ---------------------------------------------------

@pytest.mark.parametrize("start, end, words", [(0, 0, []), (8, 0, []), (0, 4, [0]), (0, 5, [0, 4]), (0, 7, [0, 4]),
                                               (0, 8, [0, 4]), (4, 9, [4, 8])])
def test_words_a_for_loop_to_end_visits(start, end, words):
    assert list(check._words(start, end)) == words


def _refused_install(data, file_addr=FILE):
    with pytest.raises(LoaderError) as e:
        check.install(data, file_addr, check.Config())
    return e.value.name, e.value.detail


def test_the_image_is_refused_before_its_header_is_read():
    from n6.reloc.image import MAGIC, Header
    head = struct.pack("<I", MAGIC) + bytes(92)
    assert _refused_install(head, 0) == ("INVALID_BIN", "null image")
    assert _refused_install(b"\1\2\3") == ("INVALID_BIN", "truncated")
    assert _refused_install(b"\1\2\3\4") == ("INVALID_BIN", "bad magic 0x04030201")
    assert _refused_install(head, FILE + 2) == ("INVALID_BIN", "image address not 4-aligned")
    short = head[:Header.offset_of("params_offset") + 3]        # too short to say whether it is split
    with pytest.raises(LoaderError, match=f"truncated: {len(short)} bytes, shorter than a header"):
        check.check_image(short)



def _split_image(*copy_foffs, references=()):
    """A stand-in for a split image of a 16-byte params blob whose COPY pools start at `copy_foffs`."""
    return SimpleNamespace(rt_ctx=SimpleNamespace(params_bin_sz=16), params_references=lambda: list(references),
                           descriptors=[SimpleNamespace(type=TYPE_COPY, foff=f) for f in copy_foffs]
                           + [SimpleNamespace(type=TYPE_RELOC, foff=200)])


def test_bytes_before_a_split_params_blob_are_the_blobs_the_first_copy_pool_follows():
    """The epoch-controller blobs end where the first COPY pool's bytes start (or where a GOT or
    REL word points); as many bytes as a later pool's offset are not the blobs."""
    check.check_params_size(_split_image(96, 32), bytes(32 + 16))
    check.check_params_size(_split_image(references=[40]), bytes(40 + 16))
    check.check_params_size(_split_image(96, 32), bytes(16))
    for before in (96, 200, 8):
        with pytest.raises(LoaderError) as e:
            check.check_params_size(_split_image(96, 32), bytes(before + 16))
        assert (e.value.rule, e.value.detail) == ("params_size", f"the params file is {before + 16} bytes: {before} "
                                                  "bytes before the 16-byte params blob rt_ctx declares, not the "
                                                  "image's epoch-controller blobs (the image does not point there)")

# -- layout.py's table rules on a stand-in image --------------------------------------------------------

@pytest.mark.parametrize("entry, ok", [(0x2000_00FF, True), (0x2000_0101, False), (0x2000_00FE, False),
                                       (0x4000_00FF, False)])
def test_an_entry_is_thumb_code_of_the_ro_part(entry, ok):
    """An RO part of 0x101 bytes: its last byte is the last a Thumb entry may name."""
    from n6.reloc.layout import FUNCTIONS, Damaged, _check_tables
    img = SimpleNamespace(header=SimpleNamespace(words={FUNCTIONS[0]: entry}), ro_size=0x101, descriptors=[],
                          params=b"")
    w = {"bss_start": 0x1000, "rt_ctx": 0, "params_start": 0x100}
    if ok:
        _check_tables(img, w)
    else:
        with pytest.raises(Damaged) as e:
            _check_tables(img, w)
        assert e.value.rule == "entries" and e.value.detail == (
            f"entry {FUNCTIONS[0]} 0x{entry:08X} is not Thumb code of the RO part (0x20000000..0x20000101)")


@pytest.mark.parametrize("kind, dtype, takes", [(TYPE_COPY, DATA_ACTIV, True), (TYPE_RELOC, DATA_PARAM, True),
                                                (TYPE_RELOC, DATA_MIXED, True), (TYPE_RELOC, DATA_ACTIV, False),
                                                (TYPE_RESET, DATA_PARAM, False)])
@pytest.mark.parametrize("end", [16, 17])
def test_a_pool_takes_its_content_from_inside_the_params(kind, dtype, takes, end):
    """16 bytes of params: a pool reading 16 fits, 17 do not; RESET pools and RELOC activations read none."""
    from n6.reloc.image import PoolDescriptor
    from n6.reloc.layout import Damaged, _check_tables
    d = PoolDescriptor(0x2000_0000, kind << 24 | dtype << 16 | ATTR_READ << 8, 4, 0, end - 4, "p")
    img = SimpleNamespace(header=SimpleNamespace(words={}), ro_size=0x100, descriptors=[d], params=bytes(16))
    w = {"bss_start": 0x1000, "rt_ctx": 0, "params_start": 0x100}
    if takes and end > 16:
        with pytest.raises(Damaged) as e:
            _check_tables(img, w)
        assert e.value.rule == "pools" and e.value.detail == "pool p takes bytes 0x4..0x11 of 16 bytes of params"
    else:
        _check_tables(img, w)
