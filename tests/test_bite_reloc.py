"""The image writer's format in-process, in seconds: a hand-made `network_rel.bin` parsed word by
word, the flags word bit by bit, the pack step's params offset, size and CRC-32 words with and
without params and split, the params blob's padding and checks, and the pool rules at the bytes
where a buffer starts or stops touching a pool. The slow builds (test_reloc_image.py) judge the
same format against binutils; these fail at once when one rule breaks."""
import hashlib
import json
import os
import struct
import zlib

import pytest

from n6.errors import N6Error
from n6.network_c import Buffer, NetworkC, PoolComment
from n6.reloc.image import (FLASH_BASE, MAGIC, RAM_BASE, SEG_PARAM0, CodeImage, Flags, Header, Image, PoolDescriptor,
                            RtCtx, c_string, detect_header_words, off)
from n6.reloc.pack import pack
from n6.reloc.params import ParamsBlob, ParamsPart
from n6.reloc.pools import TYPE_COPY, TYPE_RELOC, TYPE_RESET, TYPE_UNUSED, describe_flags, flags_word, pools_of

RO = 0x100                  # header + strings; the data image follows
DESC_AT = 0x44              # the descriptor table, after rt_ctx at the start of the data image
DATA = DESC_AT + 3 * PoolDescriptor.SIZE
REL_AT = RO + DATA          # two REL sites after the data image
GOT = 0x10                  # two GOT words at data offset 0x10 (inside rt_ctx's first words: any words do)


def _image_bytes(n_words=24, terminated=True):
    """A 2.x (24 words) or 3.x (26 words) image: strings in the RO part, rt_ctx and two pool
    descriptors in the data image, then two REL sites."""
    words = dict(magic=MAGIC, flags=0x22AB1345, data_start=RAM_BASE, data_end=RAM_BASE + DATA,
                 data_data=FLASH_BASE + RO, bss_start=RAM_BASE + DATA, bss_end=RAM_BASE + DATA + 0x11,
                 got_start=RAM_BASE + GOT, got_end=RAM_BASE + GOT + 8, rel_start=FLASH_BASE + REL_AT,
                 rel_end=FLASH_BASE + REL_AT + 8, params_start=RAM_BASE + DESC_AT, params_offset=0)
    names = [n for n in Header.parse(bytes(4 * n_words), n_words).words]
    words.update({n: FLASH_BASE + 0x200 + 4 * i for i, n in enumerate(names[13:-1])})
    words["rt_ctx"] = RAM_BASE
    buf = bytearray(REL_AT + 8)
    struct.pack_into(f"<{n_words}I", buf, 0, *(words[n] for n in names))
    buf[0xC0:0xC0 + 14] = b"xSPI2\0AXISRAM\0"
    rt = RtCtx.parse(bytes(range(RtCtx.SIZE)), 0)
    rt.rt_version, rt.rt_version_extra = 0x0A0B0C0D, 7
    buf[RO:RO + RtCtx.SIZE] = rt.pack()
    struct.pack_into("<2I", buf, RO + GOT, 0x8000_0040, 0x2000_0010)     # GOT: a params reference, a flash one
    descriptors = [PoolDescriptor(FLASH_BASE + 0xC0, 0x01010500, 0, 0, 0x400),
                   PoolDescriptor(FLASH_BASE + 0xC6, 0x03020613, 0, 0x34100000, 0x80)]
    if terminated:
        descriptors.append(PoolDescriptor(0, 0, 0, 0, 0))
    else:
        descriptors.append(PoolDescriptor(FLASH_BASE + 0xC6, 0x03020600, 0, 0, 0))
    for i, d in enumerate(descriptors):
        buf[RO + DESC_AT + i * 20:RO + DESC_AT + (i + 1) * 20] = d.pack()
    struct.pack_into("<2I", buf, REL_AT, RAM_BASE + GOT + 4, FLASH_BASE + 0xD0)   # a data site, a flash site
    struct.pack_into("<I", buf, 0xD0, 0x8000_0100)    # the flash site's word: another params reference
    return bytes(buf)


# -- image.py -------------------------------------------------------------------------------------

def test_an_image_is_read_word_by_word():
    img = Image.parse(_image_bytes())
    h = img.header
    assert (h.n_words, h.size, h.magic, h.rt_ctx) == (24, 96, 0x4E49424E, RAM_BASE)
    assert Header.offset_of("params_offset") == 48 and h.pack() == _image_bytes()[:96]
    assert (img.ro_size, img.rw_size, img.xip_size, img.copy_size) == (0x100, 0x91, 0x98, 0x198)
    assert img.rel_sites == [RAM_BASE + GOT + 4, FLASH_BASE + 0xD0]
    assert [(d.name, d.flags, d.dst, d.size) for d in img.descriptors] == [
        ("xSPI2", 0x01010500, 0, 0x400), ("AXISRAM", 0x03020613, 0x34100000, 0x80)]
    assert img.descriptors_terminated
    assert [(d.type, d.pool_id, d.flags_desc) for d in img.descriptors] == [
        (1, 0, "RELOC.PARAM.0.RCACHED"), (3, 0x13, "RESET.ACTIV.WCACHED")]
    assert img.rt_ctx.ll_aton_version == (0x0A, 0x0B, 0x0C, 7)
    assert (img.rt_ctx.state, img.rt_ctx.itf_network) == (0x03020100, 0x43424140)
    assert img.string_at(FLASH_BASE + 0xC6) == "AXISRAM" and img.string_at(RAM_BASE + 0xC6) == ""
    assert img.params_references() == [0x40, 0x100]    # the GOT word and the flash REL site's word


def test_a_3x_header_is_told_by_its_rt_ctx_word():
    data = _image_bytes(26)
    assert detect_header_words(data) == 26 and detect_header_words(_image_bytes()) == 24
    assert detect_header_words(data[:103]) == 24
    assert Image.parse(data).header.rt_ctx == RAM_BASE


def test_a_table_without_terminator_is_read_up_to_the_loaders_limit():
    img = Image.parse(_image_bytes(terminated=False))
    assert not img.descriptors_terminated and len(img.descriptors) == 3


def test_a_header_is_96_bytes_at_least():
    assert Image.parse(bytes(96)).header.magic == 0
    with pytest.raises(N6Error, match="truncated: 95 bytes, shorter than a header"):
        Image.parse(bytes(95))
    with pytest.raises(N6Error, match="truncated: .* the header describes more"):
        Image.parse(_image_bytes()[:-1])


@pytest.mark.parametrize("field, word", [("vers_major", 1 << 28), ("vers_minor", 1 << 24), ("async_mode", 1 << 22),
                                         ("dbg_info", 1 << 21), ("secure", 1 << 20), ("toolchain", 1 << 16),
                                         ("float_abi", 1 << 13), ("fpu", 1 << 12), ("cpuid", 1)])
def test_each_flag_has_its_own_bit(field, word):
    flags = Flags.decode(word)
    assert [f for f, v in vars(flags).items() if v] == [field]
    assert flags.encode() == word


def test_flags_at_their_widest_and_as_text():
    flags = Flags.decode(0xFFFFFFFF)
    assert (flags.vers_major, flags.vers_minor, flags.toolchain, flags.float_abi, flags.cpuid) == (15, 15, 15, 3, 0xFFF)
    assert flags.encode() == 0xFFFFFFFF & ~(1 << 23 | 1 << 15)    # two bits mean nothing
    d = Flags.decode(0x22A94D22).as_dict()
    assert d == {"vers_major": 2, "vers_minor": 2, "secure": False, "dbg_info": True, "async_mode": False,
                 "toolchain": "LLVM", "float-abi": "hard", "fpu": False, "cpuid": "0xD22"}
    assert Flags.decode(0x0008_3000).as_dict()["float-abi"] == "softfp"


def test_a_code_image_counts_its_tables(tmp_path):
    c = CodeImage(_image_bytes(), b"EC")
    assert (c.rel_entries, c.got_entries, c.params_words_at) == (2, 2, RO + 48)
    c.save(str(tmp_path / "code.bin"))
    assert (tmp_path / "code.bin").read_bytes() == b"N6CODE1\0" + struct.pack("<I", len(c.code)) + c.code + b"EC"
    assert CodeImage.load(str(tmp_path / "code.bin")) == c
    (tmp_path / "code.bin").write_bytes(b"N6CODE1\0" + struct.pack("<I", len(c.code)) + c.code[:-1])
    with pytest.raises(N6Error, match=f"code.bin: is {len(c.code) + 11} bytes, its code alone should end at "
                                      f"{len(c.code) + 12}"):
        CodeImage.load(str(tmp_path / "code.bin"))
    (tmp_path / "code.bin").write_bytes(c.code)
    with pytest.raises(N6Error, match="code.bin: is not a code image"):
        CodeImage.load(str(tmp_path / "code.bin"))


def test_offsets_drop_the_segment_nibble_only():
    assert off(0x2FFF_FFFF) == 0x0FFF_FFFF and off(0x8000_0040) == 0x40
    assert SEG_PARAM0 == 0x8


# -- params.py and pack.py ------------------------------------------------------------------------

def _blob(tmp_path, sizes=(5, 8)):
    parts = []
    for i, n in enumerate(sizes):
        raw = tmp_path / f"network_atonbuf.pool{i}.raw"
        raw.write_bytes(bytes(range(1 + 16 * i, 1 + 16 * i + n)))
        parts.append(ParamsPart(f"pool{i}", str(raw), n))
    return ParamsBlob(parts)


def _blob_bytes(tmp_path, sizes=(5, 8)):
    return b"".join(bytes(range(1 + 16 * i, 1 + 16 * i + n)) + bytes(-n % 8) for i, n in enumerate(sizes))


def test_the_params_blob_is_each_raw_padded_to_8_bytes(tmp_path):
    blob = _blob(tmp_path)
    assert blob.size == 16

    class Sink(list):
        write = list.append
    out = Sink()
    crc = blob.stream(out)
    assert b"".join(out) == _blob_bytes(tmp_path) and crc == zlib.crc32(_blob_bytes(tmp_path))
    assert blob.stream(Sink(), crc=5) == zlib.crc32(_blob_bytes(tmp_path), 5)


def test_a_raw_shorter_than_described_stops_the_stream(tmp_path):
    blob = _blob(tmp_path)
    blob.parts[1] = ParamsPart("pool1", blob.parts[1].path, 9)
    with pytest.raises(N6Error, match="pool1.raw: shrank while it was being packed"):
        blob.stream(open(os.devnull, "wb"))


def test_a_params_description_keeps_relative_paths(tmp_path, monkeypatch):
    blob = _blob(tmp_path)
    monkeypatch.chdir(tmp_path)
    blob.save("params.json")                  # a bare file name: its folder is "."
    doc = json.loads((tmp_path / "params.json").read_text())
    parts = [{"pool": f"pool{i}", "path": f"network_atonbuf.pool{i}.raw", "size": n} for i, n in enumerate((5, 8))]
    assert doc == {"version": 2, "size": 16, "lead": None, "parts": parts}
    assert ParamsBlob.load("params.json").parts == [ParamsPart(p["pool"], p["path"], p["size"]) for p in doc["parts"]]
    assert ParamsBlob.load(str(tmp_path / "params.json")).parts == blob.parts
    for bad in ('{"version": 1, "parts": []}', '[1]'):
        (tmp_path / "params.json").write_text(bad)
        with pytest.raises(N6Error, match="not a params description of version 2"):
            ParamsBlob.load("params.json")
    (tmp_path / "params.json").write_text('{"version": 2, "parts": []}')     # no lead: none reserved
    assert ParamsBlob.load("params.json").lead is None
    for lead in ('"32"', "true", "1.5"):
        (tmp_path / "params.json").write_text(f'{{"version": 2, "lead": {lead}, "parts": []}}')
        with pytest.raises(N6Error) as e:
            ParamsBlob.load("params.json")
        assert str(e.value) == f"params.json: lead {json.loads(lead)!r} is not a byte count (fix: rebuild: the " \
            "prepare step writes it)"


def test_verify_names_a_missing_or_resized_raw(tmp_path):
    blob = _blob(tmp_path)
    blob.verify()
    os.truncate(blob.parts[0].path, 4)
    with pytest.raises(N6Error, match="pool0.raw: is 4 bytes but pool 'pool0' uses 5 bytes"):
        blob.verify()
    os.unlink(blob.parts[0].path)
    with pytest.raises(N6Error, match="pool0.raw: missing: pool 'pool0' holds parameters"):
        blob.verify()


def _pack(tmp_path, ec=b"", sizes=(5, 8), split=False):
    CodeImage(_image_bytes(), ec).save(str(tmp_path / "code.bin"))
    ParamsBlob(_blob(tmp_path, sizes).parts, lead=len(ec)).save(str(tmp_path / "params.json"))
    return pack(str(tmp_path / "code.bin"), str(tmp_path / "params.json"), str(tmp_path / "rel.bin"), split=split)


def _words(data):
    """(params_offset, params size, params CRC-32) as the image holds them."""
    return struct.unpack_from("<I", data, 48)[0], *struct.unpack_from("<2I", data, RO + 48)


def test_pack_puts_the_ec_blobs_and_params_after_the_code(tmp_path):
    code, blob = _image_bytes(), _blob_bytes(tmp_path)
    r = _pack(tmp_path, ec=b"EC")
    data = (tmp_path / "rel.bin").read_bytes()
    assert _words(data) == (len(code), 16, zlib.crc32(blob))
    assert data[len(code):] == b"EC" + blob and r.size == len(data) == len(code) + 18
    assert (r.params_path, r.params_size, r.ec_blob_size, r.rel_entries, r.got_entries) == (None, 18, 2, 2, 2)


def test_pack_with_only_params_or_only_ec_blobs_or_neither(tmp_path):
    code = _image_bytes()
    r = _pack(tmp_path)
    assert _words((tmp_path / "rel.bin").read_bytes())[0] == len(code) and r.params_size == 16
    r = _pack(tmp_path, ec=b"EC", sizes=())
    data = (tmp_path / "rel.bin").read_bytes()
    assert _words(data) == (len(code), 0, 0) and data[len(code):] == b"EC" and r.params_size == 2
    r = _pack(tmp_path, sizes=())
    data = (tmp_path / "rel.bin").read_bytes()
    assert _words(data) == (0, 0, 0) and len(data) == len(code) and r.params_size == 0


def test_a_split_pack_writes_the_params_file_and_no_offset(tmp_path):
    code, blob = _image_bytes(), _blob_bytes(tmp_path)
    r = _pack(tmp_path, ec=b"EC", split=True)
    data = (tmp_path / "rel.bin").read_bytes()
    assert _words(data) == (0, 16, zlib.crc32(blob)) and len(data) == len(code) == r.size
    assert (tmp_path / "rel_params.bin").read_bytes() == b"EC" + blob
    assert r.params_path == str(tmp_path / "rel_params.bin") and r.params_size == 18


@pytest.mark.parametrize("split", [False, True])
def test_pack_gives_the_digest_of_every_file_it_wrote(tmp_path, split):
    """The build takes these as the outputs' signatures instead of reading them back."""
    CodeImage(_image_bytes(), b"EC").save(str(tmp_path / "code.bin"))
    ParamsBlob(_blob(tmp_path, (5, 8)).parts, lead=2).save(str(tmp_path / "params.json"))
    r = pack(str(tmp_path / "code.bin"), str(tmp_path / "params.json"), str(tmp_path / "rel.bin"), split=split,
             hash_name="sha256")
    written = ["rel.bin"] + ["rel_params.bin"] * split
    assert r.digests == {str(tmp_path / f): hashlib.sha256((tmp_path / f).read_bytes()).hexdigest() for f in written}


def test_params_changed_between_the_crc_and_the_copy_leave_no_image(tmp_path, monkeypatch):
    """An image holding its params takes their CRC-32 in a first pass: params that changed
    before the second one would be an image whose CRC does not match them."""
    crcs = iter([1, 2])
    monkeypatch.setattr(ParamsBlob, "stream", lambda self, out, crc=0: next(crcs))
    with pytest.raises(N6Error, match="rel.bin: the params changed while they were being packed"):
        _pack(tmp_path)
    assert not [n for n in os.listdir(tmp_path) if n.startswith("rel")]   # nor a temporary


# -- pools.py -------------------------------------------------------------------------------------

def _net(pools, buffers, labels=()):
    """pools: (index, postfix, offset, size, relative, rw, global size text); buffers: (base, start, end, param)."""
    net = NetworkC(path="m/network.c", text="")
    for index, postfix, offset, size, relative, rw, glob in pools:
        desc = f"offset=0x{offset:08x} {'' if relative else 'absolute_mode '}size={size} " \
               f"{'READ_WRITE' if rw else 'READ_ONLY'} cacheable=ON"
        net.pools.append(PoolComment(index, postfix, postfix, offset, desc, glob))
    net.labels = list(labels)
    net.buffers = [Buffer("Internal", f"b{i}", base, s, e, e, param) for i, (base, s, e, param) in enumerate(buffers)]
    return net


RAM = (1, "AXISRAM5", 0x342E0000, 0x100, False, True, "?")


@pytest.mark.parametrize("start, end, used", [(-0x10, 0, 0), (-0x10, 1, 1), (0xFF, 0x110, 1), (0x100, 0x110, 0)])
def test_a_buffer_touches_a_pool_from_its_first_to_its_last_byte(start, end, used):
    got = pools_of(_net([RAM], [(0x342E0000, start, end, False)]))[0]
    assert got.used == used and got.type == (TYPE_RESET if used else TYPE_UNUSED)


def test_used_and_constant_bytes_span_lowest_to_highest():
    got = pools_of(_net([RAM], [(0x342E0000, 0x10, 0x20, False), (0x342E0000, 0x40, 0x41, True)]))[0]
    assert (got.used, got.const, got.rw, got.has_params, got.params_only) == (0x31, 1, 0x30, True, False)
    assert (got.type, got.flags) == (TYPE_COPY, 0x02030600)


def test_a_read_only_pool_of_constants_only_is_a_param_copy():
    rom = (2, "xSPI2", 0x71000000, 0x100, False, False, "?")
    got = pools_of(_net([rom], [(0x71000000, 0, 0x80, True)]))[0]
    assert (got.params_only, got.type, got.flags, got.dst) == (True, TYPE_COPY, 0x02010500, 0x71000000)


def test_relative_pools_are_found_by_their_label_and_numbered_by_their_rights():
    pools = [(1, "xSPI2", 0x71000000, 0x1000, True, False, "?"), (2, "xSPI1", 0x90000000, 0x1000, True, True, "?")]
    buffers = [("_mem_pool_xSPI2", 0, 0x10, True), ("_mem_pool_xSPI1", 0, 0x20, False), ("other", 0, 0x40, False)]
    got = {p.name: p for p in pools_of(_net(pools, buffers, [("_mem_pool_xSPI2", 1), ("_mem_pool_xSPI1", 1)]))}
    assert [(p.type, p.pool_id, p.used, p.flags, p.dst) for p in got.values()] == [
        (TYPE_RELOC, 1, 0x20, 0x01020601, 0), (TYPE_RELOC, 0, 0x10, 0x01010500, 0)]


@pytest.mark.parametrize("relative", [True, False])
@pytest.mark.parametrize("end", [0x80, 0x180])      # inside the pool, or running past its end
def test_a_read_only_pool_with_one_activation_buffer_is_refused(relative, end):
    rom = (2, "xSPI2", 0x71000000, 0x100, relative, False, "?")
    labels = [("_mem_pool_xSPI2", 1)] if relative else []
    with pytest.raises(N6Error, match="read-only pool 'xSPI2' holds"):
        pools_of(_net([rom], [("_mem_pool_xSPI2" if relative else 0x71000000, 0, end, False)], labels))


def test_relative_pools_and_labels_must_pair():
    pools = [(1, "xSPI2", 0x71000000, 0x1000, True, False, "?")]
    with pytest.raises(N6Error, match="m/network.c: 1 relative pools but 0 extern pool labels"):
        pools_of(_net(pools, []))


def test_a_raw_file_alone_earns_a_descriptor():
    got = pools_of(_net([RAM], [(0x342E0000, 0, 0x10, False)]), raw_postfixes=["network_atonbuf.AXISRAM5"])[0]
    assert got.described and got.type == TYPE_RESET


def test_flags_words_and_their_text():
    assert flags_word(1, 2, 3, 4) == 0x01020304
    assert describe_flags(0x01010501) == "RELOC.PARAM.1.RCACHED"
    assert describe_flags(0x02030200) == "COPY.MIXED.WRITE" and describe_flags(0x03020100) == "RESET.ACTIV.READ"
    assert describe_flags(0x07090607) == "0x07.0x09.WCACHED"
    got = pools_of(_net([RAM], []))[0]
    assert (got.type, got.flags) == (TYPE_UNUSED, 0x00000600)


def test_the_edges_of_reading_an_image(tmp_path):
    data = _image_bytes(26)
    assert detect_header_words(data[:104]) == 26
    assert c_string(b"a" * 300, 0) == "a" * 256
    words = bytearray(_image_bytes())
    struct.pack_into("<I", words, Header.offset_of("bss_start"), RAM_BASE + 0x200)   # the RW part past the file
    with pytest.raises(N6Error, match="the header describes more"):
        Image.parse(bytes(words))
    last = bytearray(_image_bytes()) + struct.pack("<I", 0x8000_0200)   # a flash REL site at the last word
    struct.pack_into("<I", last, REL_AT + 4, FLASH_BASE + len(last) - 4)
    assert Image.parse(bytes(last)).params_references() == [0x40, 0x200]


def test_a_split_image_needs_its_params_file(tmp_path):
    path = tmp_path / "network_rel.bin"
    path.write_bytes(_image_bytes())                       # params offset 0, rt_ctx's params size not 0
    with pytest.raises(N6Error, match="missing: this split image's params file .* is not there"):
        Image.load(str(path))
    (tmp_path / "p.bin").write_bytes(b"P" * 8)
    assert bytes(Image.load(str(path), str(tmp_path / "p.bin")).params) == b"P" * 8
    joined = bytearray(_image_bytes()) + b"Q" * 8
    struct.pack_into("<I", joined, 48, len(joined) - 8)
    path.write_bytes(bytes(joined))
    assert bytes(Image.load(str(path)).params) == b"Q" * 8


def test_a_pool_without_cache_has_no_cacheable_bit():
    net = _net([RAM], [(0x342E0000, 0, 0x10, False)])
    net.pools[0].description = net.pools[0].description.replace("cacheable=ON", "cacheable=OFF")
    assert pools_of(net)[0].flags == 0x03020200


def test_buffers_outside_a_pool_do_not_stretch_its_figure():
    got = pools_of(_net([RAM], [(0x342E0000, 0x10, 0x20, False), (0x342E0000, 0x200, 0x210, False),
                                (0x342E0000, -0x100, -0x80, False)]))[0]
    assert (got.used, got.type) == (0x10, TYPE_RESET)


def test_a_pool_of_size_0_keeps_its_global_figure_and_one_at_address_0_counts():
    empty = (2, "xSPI1", 0x90000000, 0, False, True, "1 KB")
    zero = (3, "AXISRAM1", 0, 0x100, False, True, "?")
    nothing = (4, "NONE", 0, 0, False, True, "?")
    got = {p.name: p for p in pools_of(_net([empty, zero, nothing], [(0x8FFFFFF0, 0, 0x20, False),
                                                                     (0, 0, 0x10, False)]))}
    assert sorted(got) == ["AXISRAM1", "xSPI1"]
    assert (got["xSPI1"].used, got["AXISRAM1"].used) == (1024, 0x10)


@pytest.mark.parametrize("relative", [True, False])
def test_a_read_only_pool_whose_constants_straddle_its_end_is_a_param_pool(relative):
    rom = (2, "xSPI2", 0x71000000, 0x100, relative, False, "?")
    labels = [("_mem_pool_xSPI2", 1)] if relative else []
    got = pools_of(_net([rom], [("_mem_pool_xSPI2" if relative else 0x71000000, 0x80, 0x180, True)], labels))[0]
    assert (got.params_only, got.flags) == (True, 0x01010500 if relative else 0x02010500)


def test_a_relative_read_write_pool_of_constants_is_mixed():
    pool = (1, "xSPI1", 0x90000000, 0x100, True, True, "?")
    got = pools_of(_net([pool], [("_mem_pool_xSPI1", 0, 0x10, True)], [("_mem_pool_xSPI1", 1)]))[0]
    assert got.flags == 0x01030601


def test_a_read_only_pool_of_constants_and_activations_is_refused():
    rom = (2, "xSPI2", 0x71000000, 0x100, False, False, "?")
    with pytest.raises(N6Error, match="read-only pool 'xSPI2' holds activations"):
        pools_of(_net([rom], [(0x71000000, 0, 0x10, True), (0x71000000, 0x20, 0x30, False)]))


def test_ten_used_pools_are_refused():
    pools = [(i, f"P{i}", 0x34000000 + 0x1000 * i, 0x100, False, True, "?") for i in range(10)]
    buffers = [(0x34000000 + 0x1000 * i, 0, 0x10, False) for i in range(10)]
    pools_of(_net(pools[:9], buffers[:9]))
    with pytest.raises(N6Error, match="more than 9 used memory pools"):
        pools_of(_net(pools, buffers))
