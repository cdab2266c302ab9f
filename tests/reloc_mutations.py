"""Deterministic damage to a valid `network_rel.bin`, for judging a loader model against ST's loader:
header words (±1, ±4, bit flips), every flags bit (async, secure, ...), REL sites (misaligned,
another segment, out of range, duplicated, in the GOT) and the words they relocate, GOT words,
pool descriptors, rt_ctx words (runtime versions ±1 and 9.9.9 among them), truncated and extended
files; a split params file with bytes prepended (`prepended_params`). Each mutation has a stable
name ("<part>.<what>") and the same bytes from run to run (one seeded generator)."""
import random
import struct

from n6.reloc.image import LAYOUTS, PoolDescriptor, RtCtx, align8, off, seg

SEGMENTS = (0x0, 0x2, 0x3, 0x4, 0x5, 0x8, 0x9, 0xF)


def word_at(data, at):
    """The little-endian word at `at`."""
    return struct.unpack_from("<I", data, at)[0]


def with_word(data, at, value):
    """`data` with the little-endian word at `at` replaced."""
    out = bytearray(data)
    struct.pack_into("<I", out, at, value & 0xFFFF_FFFF)
    return bytes(out)


def _word_changes(rng, word):
    """±1, ±4, a bit flip in each byte and each bit of the segment nibble."""
    yield from (("+1", word + 1), ("-1", word - 1), ("+4", word + 4), ("-4", word - 4))
    for bit in sorted({8 * byte + rng.randrange(8) for byte in range(4)} | {28, 29, 30, 31}):
        yield f"^bit{bit}", word ^ (1 << bit)


def header(data, rng):
    for i, name in enumerate(LAYOUTS[24]):
        word = word_at(data, 4 * i)
        if name == "flags":
            for bit in range(32):   # every flag bit
                yield f"header.flags^bit{bit}", with_word(data, 4, word ^ (1 << bit))
            continue
        for what, value in _word_changes(rng, word):
            yield f"header.{name}{what}", with_word(data, 4 * i, value)


def rel_sites(data, img, rng):
    """REL entries: the first, the last and one between, each damaged several ways."""
    h = img.header
    start, sites = off(h.rel_start), img.rel_sites
    rw, ro = off(h.bss_end), img.ro_size
    picks = sorted({0, len(sites) - 1, rng.randrange(len(sites))})
    for i in picks:
        at, site = start + 4 * i, sites[i]
        for delta in (1, 2, 3):
            yield f"rel[{i}].misaligned+{delta}", with_word(data, at, site + delta)
        for s in SEGMENTS:
            if s != seg(site):
                yield f"rel[{i}].segment{s:X}", with_word(data, at, (s << 28) | off(site))
        for what, offset in (("bss_end", rw), ("bss_end+4", rw + 4), ("ram_need", align8(rw)),
                             ("ram_need+4", align8(rw) + 4), ("far", 0x10_0000), ("max", 0x0FFF_FFFC)):
            yield f"rel[{i}].ram.{what}", with_word(data, at, 0x4000_0000 | offset)
        for what, offset in (("ro_end", ro), ("ro_end+4", ro + 4), ("far", 0x10_0000)):
            yield f"rel[{i}].flash.{what}", with_word(data, at, 0x2000_0000 | offset)
        if i:
            yield f"rel[{i}].duplicate", with_word(data, at, sites[i - 1])
        for what, offset in (("got_start", off(h.got_start)), ("got_end-4", off(h.got_end) - 4),
                             ("rt_ctx", off(h.rt_ctx))):
            yield f"rel[{i}].into.{what}", with_word(data, at, 0x4000_0000 | offset)
        target = ro + off(site) if seg(site) == 0x4 else off(site)   # the word it relocates, in the file
        if target + 4 <= len(data):
            value = word_at(data, target)
            for s in (0x3, 0x5, 0xF):
                yield f"rel[{i}].value.segment{s:X}", with_word(data, target, (s << 28) | off(value))
            yield f"rel[{i}].value.null+4", with_word(data, target, 4)


def got_words(data, img, rng):
    h = img.header
    first, end = img.ro_size + off(h.got_start), img.ro_size + off(h.got_end)
    count = (end - first) // 4
    if count <= 0:
        return
    for i in sorted({0, count - 1, rng.randrange(count)}):
        at = first + 4 * i
        value = word_at(data, at)
        for s in (0x3, 0x5, 0x7, 0xF):
            yield f"got[{i}].segment{s:X}", with_word(data, at, (s << 28) | off(value))
        yield f"got[{i}].null+4", with_word(data, at, 4)
        yield f"got[{i}].misaligned", with_word(data, at, value + 1)
        yield f"got[{i}].ram.far", with_word(data, at, 0x4FFF_FFF0)
        yield f"got[{i}].into.got", with_word(data, at, 0x4000_0000 | off(h.got_start))
        if i:
            yield f"got[{i}].duplicate", with_word(data, at, word_at(data, at - 4))


def descriptors(data, img, rng):
    base = img.ro_size + off(img.header.params_start)
    for i, d in enumerate(img.descriptors):
        at = base + i * PoolDescriptor.SIZE
        flags = d.flags
        yield f"pool[{i}].name.null", with_word(data, at, 0)
        yield f"pool[{i}].flags.zero", with_word(data, at + 4, 0)
        for t in (1, 2, 3, 4):
            if t != d.type:
                yield f"pool[{i}].type{t}", with_word(data, at + 4, (flags & 0x00FF_FFFF) | t << 24)
        for dtype in (1, 2, 3):
            if dtype != (flags >> 16) & 0xFF:
                yield f"pool[{i}].dtype{dtype}", with_word(data, at + 4, (flags & 0xFF00_FFFF) | dtype << 16)
        for bit in (1, 2, 4):
            yield f"pool[{i}].attr^{bit}", with_word(data, at + 4, flags ^ bit << 8)
        for pid in (0, 1, 2):
            if pid != d.pool_id:
                yield f"pool[{i}].id{pid}", with_word(data, at + 4, (flags & ~0xFF) | pid)
        for what, value in (("+8", d.foff + 8), ("-8", d.foff - 8), ("far", d.foff + 0x100_0000)):
            yield f"pool[{i}].foff{what}", with_word(data, at + 8, value)
        for what, value in (("+4", d.dst + 4), ("^bit" + str(b := rng.randrange(8, 24)), d.dst ^ 1 << b)):
            yield f"pool[{i}].dst{what}", with_word(data, at + 12, value)
        for what, value in (("+1", d.size + 1), ("+8", d.size + 8), ("-8", d.size - 8), ("far", d.size + 0x100_0000)):
            yield f"pool[{i}].size{what}", with_word(data, at + 16, value)
    end = base + len(img.descriptors) * PoolDescriptor.SIZE
    if end + PoolDescriptor.SIZE <= len(data):   # the terminator now a pool
        yield "pool[end].unterminated", with_word(with_word(data, end, 0x2000_0000), end + 4, 0x0302_0200)


def rt_ctx(data, img, rng):
    at = img.ro_size + off(img.header.rt_ctx)
    names = [f.name for f in RtCtx.__dataclass_fields__.values()]
    for name in ("c_name", "acts_sz", "params_sz", "ext_ram_sz", "rt_version", "rt_version_extra", "params_bin_sz",
                 "params_bin_crc32", "rt_c_struct_sizes", "itf_network"):
        where = at + 4 * names.index(name)
        word = word_at(data, where)
        for what, value in (("+8", word + 8), ("-8", word - 8), ("+0x100", word + 0x100),
                            ("^bit" + str(b := rng.randrange(32)), word ^ 1 << b)):
            yield f"rt_ctx.{name}{what}", with_word(data, where, value)
    where = at + 4 * names.index("rt_version")      # runtime versions ST never released
    for what, value in (("9.9.9", 0x0909_0900), ("micro-1", word_at(data, where) - 0x100)):
        yield f"rt_ctx.rt_version={what}", with_word(data, where, value)


def lengths(data, img, rng):
    h = img.header
    cuts = {"len-1": len(data) - 1, "len-4": len(data) - 4, "len-8": len(data) - 8,
            "at_params": h.params_offset or len(data) - 1, "at_rel_end": off(h.rel_end),
            "in_rel": off(h.rel_start) + 4, "at_rel_start": off(h.rel_start), "at_data": img.ro_size,
            "header": 96, "header-1": 95, "magic": 4, "empty": 0}
    for what, n in cuts.items():
        if 0 <= n < len(data):
            yield f"file.truncated.{what}", data[:n]
    for n in (1, 4, 8, 4096):
        yield f"file.extended+{n}", data + bytes(n)
    yield "file.extended+4.ff", data + b"\xff" * 4


def mutations(data, img, seed=19):
    """[(name, damaged bytes)] for one valid image."""
    rng = random.Random(seed)
    out = []
    for part in (header(data, rng), rel_sites(data, img, rng), got_words(data, img, rng),
                 descriptors(data, img, rng), rt_ctx(data, img, rng), lengths(data, img, rng)):
        out.extend(part)
    names = [n for n, _ in out]
    assert len(names) == len(set(names)), "mutation names must be unique"
    return out


def prepended_params(params):
    """[(name, params file)] of a split params file with bytes before it."""
    return [(f"params.prepended+{n}", bytes(n) + params) for n in (4, 8)]
