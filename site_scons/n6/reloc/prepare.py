"""Prepare step: a generated network (network.c, .raw files, c_info.json, _ecblobs.h) → the
sources of a relocatable image: `<name>_reloc.c`, `_reloc_mempools.c`, `_reloc_conf.h`,
`_reloc_params.json` (which `.raw` files make the params blob; pack streams them) and
`_reloc_ecblobs.h` (epoch controller only). The weights themselves are not read here."""
import glob
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ..atomic import write_text
from ..errors import N6Error
from ..jsonfile import read_json
from ..jsonfile import JsonObject
from ..network_c import NetworkC, parse_network_c
from ..stedgeai_install import by_simulated_tool
from ..releases import Release, release_for_atonn
from ..mpool import EXTERNAL_BASE, EXTERNAL_FLASH
from .image import FAKE_SIZE, align8
from .area import ImageArea
from .move import U64_WORD, Moved, Span, blob_refusal, c_blob_words, check_landing, move_addresses, plan
from .params import ParamsBlob, ParamsPart
from .pools import TYPE_RELOC, TYPE_UNUSED, Pool, describe_flags, pools_of


@dataclass
class Prepared:
    name: str
    c_name: str | None
    release: Release
    pools: list[Pool]
    net: NetworkC | None = None                   # the parsed network C file
    ecblobs: str | None = None                    # its _ecblobs.h's text (epoch controller only)
    raws: dict[str, str] = field(default_factory=dict)   # pool name → .raw path
    params_lead: int | None = None   # bytes of epoch-controller blobs before the params (params_lead): where pools
    #                                  are planned past the params region (a split image's), else None
    acts_sz: int = 0
    params_sz: int = 0
    ext_ram_sz: int = 0
    runtime_desc: str = ""
    moved: list[Moved] = field(default_factory=list)   # absolute flash pools moved out of the image area
    kept: str | None = None       # why pools lying in the image area were not moved (their blobs' addresses)
    starts: tuple[int, ...] = ()  # every pool's address before the move (n6.reloc.move.shifted's `starts`)

    @property
    def used_pools(self) -> list[Pool]:
        return [p for p in self.pools if p.type != TYPE_UNUSED]

    @property
    def params_pools(self) -> list[Pool]:
        """The pools whose bytes make the params blob, in blob order."""
        return [p for p in self.used_pools if p.carries_params]


def c_info_path(folder: str, stem: str) -> str:
    """`<fname>_c_info.json`, else `<fname>.json`, else `c_info.json`."""
    for name in (f"{stem}_c_info.json", f"{stem}.json", "c_info.json"):
        if os.path.exists(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return os.path.join(folder, f"{stem}_c_info.json")


def check_c_info(path: str, net: NetworkC) -> JsonObject | None:
    """A c_info.json beside network.c must be this network's; none is fine (ST's flow reads none)."""
    if not os.path.exists(path):
        return None
    info = read_json(path, "c_info.json", lenient=False)
    if not isinstance(info, dict) or info.get("json_schema_version") != "2.0" or "graphs" not in info:
        raise N6Error(path, "not a c_info.json of schema 2.0 with a 'graphs' entry",
                      "use the <name>_c_info.json written by stedgeai generate")
    check_io_formats(path, info, net)
    return info


# c_info.json's `format` of a buffer → the data type network.c gives it. Other formats (Q, NONE,
# fixed point) have no single data type: they are not compared.
FORMAT_TYPES = {"STAI_FORMAT_FLOAT": "DataType_FLOAT", "STAI_FORMAT_FLOAT32": "DataType_FLOAT",
                "STAI_FORMAT_FLOAT64": "DataType_DOUBLE", "STAI_FORMAT_BOOL": "DataType_BOOL",
                **{f"STAI_FORMAT_{s}{n}": f"DataType_{t}INT{n}" for n in (8, 16, 32, 64)
                   for s, t in (("S", ""), ("U", "U"))}}
# Every format name ST's stai.h declares (and c_info.json's spelling STAI_FORMAT_FLOAT).
STAI_FORMATS = {*FORMAT_TYPES, "STAI_FORMAT_NONE", "STAI_FORMAT_Q", "STAI_FORMAT_UQ",
                *(f"STAI_FORMAT_{s}{n}" for s in ("S", "U") for n in (1, 4)),
                *(f"STAI_FORMAT_{q}{n}" for q in ("Q", "UQ") for n in (3, 7, 15))}


def check_io_formats(path: str, info: JsonObject, net: NetworkC) -> None:
    """The model's inputs and outputs as c_info.json describes them must be what network.c
    declares: a format that is not an STAI_FORMAT_ name, or one naming another data type than
    network.c's, is a c_info.json from another generation (or edited)."""
    io = {b.name: b.data_type for b in net.buffers if b.table in ("Input", "Output") and not b.is_param}
    buffers = info.get("buffers")
    for b in buffers if isinstance(buffers, list) else ():
        if not isinstance(b, dict) or not isinstance(b.get("name"), str) or b["name"] not in io or "format" not in b:
            continue
        fmt, c_type = b["format"], io[b["name"]]
        if not isinstance(fmt, str) or fmt not in STAI_FORMATS:
            raise N6Error(path, f"buffer '{b['name']}': format {fmt!r} is not an STAI_FORMAT_ name",
                          "use the c_info.json stedgeai generate wrote with this network.c")
        if FORMAT_TYPES.get(fmt, c_type) != c_type and c_type in FORMAT_TYPES.values():
            raise N6Error(path, f"buffer '{b['name']}' is {fmt} here but {c_type} in {os.path.basename(net.path)}",
                          "use the c_info.json stedgeai generate wrote with this network.c")


def raw_candidates(folder: str, release: Release, c_name: str | None, stem: str) -> list[str]:
    """The `.raw` files a network folder offers: any `*.raw` (2.x); `<c_name>*.raw` from 3.0,
    falling back to `network*.raw` for the `Default` c-name."""
    if release.core < "3":
        return sorted(glob.glob(os.path.join(folder, "*.raw")))
    found = sorted(glob.glob(os.path.join(folder, f"{c_name}*.raw")))
    if not found and c_name == "Default":
        found = sorted(glob.glob(os.path.join(folder, "network*.raw")))
    return found


def _match_raw(candidates: Sequence[str], postfix: str) -> str | None:
    hits = [r for r in candidates if r.endswith(f"{postfix}.raw") and
            os.path.basename(r)[:-len(f"{postfix}.raw")].endswith((".", "_"))]
    return hits[0] if hits else None


# LL_ATON versions of releases we know but do not build for (the release that wrote them).
FOREIGN_RELEASES: dict[tuple[int, ...], str] = {(1, 1, 0): "2.1"}


def check_version(network_c: str, version: Sequence[int] | None, install_version: Sequence[int] | None) -> Release:
    """The image takes its runtime version from network.c; the firmware's loader compares it
    with its own LL_ATON, so a network from another release cannot run on this install's."""
    if version is None:
        raise N6Error(network_c, "no LL_ATON version guard found", "regenerate network.c with stedgeai")
    found = "{}.{}.{}-{}".format(*version)
    rel = release_for_atonn(version)
    install = release_for_atonn(install_version) if install_version else None
    if rel is None:
        core = FOREIGN_RELEASES.get(tuple(version[:3]))
        wrote = f"ST Edge AI Core {core} (LL_ATON {found})" if core else f"LL_ATON {found}"
        target = f"the install's {install.core} runtime" if install else "a supported runtime"
        raise N6Error(network_c, f"generated by {wrote}: the image would carry that runtime version and "
                      f"{target}'s loader refuses it", "regenerate network.c with ST Edge AI Core " +
                      (install.core if install else "2.2 or 3.0"))
    if install_version and tuple(install_version) != tuple(version):
        raise N6Error(network_c, f"generated for LL_ATON {found}" +
                      " but the ST Edge AI install has {}.{}.{}-{}".format(*install_version),
                      "regenerate the model with the installed stedgeai, "
                      "or point STEDGEAI_CORE_DIR at the matching release")
    return rel


def in_external_flash(pool: Pool) -> bool:
    return EXTERNAL_FLASH[0] <= pool.offset < EXTERNAL_FLASH[1] and not pool.read_write


def check_absolute_flash(network_c: str, pools: Sequence[Pool]) -> None:
    """An absolute pool in read-only external memory becomes a COPY descriptor: the loader would
    copy the params into memory-mapped NOR flash, where the image itself lives. ST's flow builds
    it without a word; a relocatable model needs USEMODE_RELATIVE for external pools."""
    for p in pools:
        if p.absolute and p.type != TYPE_UNUSED and in_external_flash(p):
            raise N6Error(network_c, f"absolute pool '{p.name}' at 0x{p.offset:08X} is in read-only external flash: "
                          "the loader would copy its params into flash",
                          f"set \"mode\": \"USEMODE_RELATIVE\" for '{p.name}' in the .mpool and regenerate, or build "
                          "it anyway like ST's flow with RELOC_ABSOLUTE_FLASH_POOLS=1")


def analyse(network_c: str, name: str | None = None, install_version: Sequence[int] | None = None,
            absolute_flash_pools: bool = False, simulated_install: bool = False,
            image_area: ImageArea | None = None, ecblob_in_params: bool = False) -> Prepared:
    """Parse and classify; no file is written. `install_version` is the LL_ATON version of the
    ST Edge AI install the image will be compiled against (`simulated_install`: the simulated one,
    whose runtime compiles the simulated tool's outputs only); `image_area`: where the firmware
    reads the image (absolute flash pools lying there move out of it); `ecblob_in_params`: the
    constant epoch-controller blobs lead the params region."""
    net = parse_network_c(network_c)
    if simulated_install and not by_simulated_tool(net.text):
        raise N6Error(network_c, "written by a real ST Edge AI Core: the simulated install's runtime cannot compile it",
                      "set STEDGEAI_CORE_DIR to the ST Edge AI Core install that generated it")
    folder = os.path.dirname(network_c) or "."
    stem = os.path.splitext(os.path.basename(network_c))[0]
    rel = check_version(network_c, net.version, install_version)
    check_c_info(c_info_path(folder, stem), net)
    candidates = raw_candidates(folder, rel, net.c_name, stem)
    prep = Prepared(name or stem, net.c_name, rel, pools_of(net, [os.path.basename(r)[:-4] for r in candidates]), net)
    if not absolute_flash_pools:
        check_absolute_flash(network_c, prep.pools)
    offset = 0
    for p in prep.params_pools:
        prep.raws[p.name] = _match_raw(candidates, p.name) or os.path.join(folder, f"{stem}_atonbuf.{p.name}.raw")
        p.foff = offset
        offset += align8(p.used)
    ecblobs = ecblobs_path(network_c)
    if os.path.exists(ecblobs):
        with open(ecblobs) as f:
            prep.ecblobs = f.read()
    if image_area and image_area.split:   # pools are planned past the params file: its blobs' lead counts
        prep.params_lead = params_lead(prep.ecblobs, rel) if ecblob_in_params and prep.ecblobs else 0
    blob = params_blob(prep)
    blob.verify()   # every pool's .raw is there, with the pool's size
    if image_area:
        move_flash_pools(network_c, prep, image_area, blob.region_size)
    internal = [p for p in prep.pools if p.offset < EXTERNAL_BASE]
    external = [p for p in prep.pools if p.offset >= EXTERNAL_BASE]
    prep.acts_sz = sum(p.rw for p in internal) + sum(p.rw for p in external)
    prep.params_sz = sum(p.const for p in internal) + sum(p.const for p in external)
    prep.ext_ram_sz = next((p.used for p in prep.used_pools if p.type == TYPE_RELOC and p.pool_id == 1), 0)
    prep.runtime_desc = f"{net.git_description} (RELOC.GCC)"
    return prep


def move_flash_pools(network_c: str, prep: Prepared, area: ImageArea, region_size: int) -> None:
    """A 2.x firmware reads the image at one flash address: an absolute flash pool lying in the
    image area (or under a split build's params file, `region_size` bytes: ParamsBlob.region_size)
    would be written over by the image (ST's flow flashes it so, and the network reads the image's
    bytes as its weights). Such pools move (n6.reloc.move.plan); the new offset is the
    one definition network.c's and _ecblobs.h's addresses (prepare, moved_text) and the pool's
    descriptor (where `scons flash` puts its bytes) follow. Blobs holding addresses inside a
    moving pool keep the pools where they are, `kept` saying why."""
    prep.starts = tuple(p.offset for p in prep.pools)
    spans = [Span(p.name, p.offset, p.used, in_external_flash(p)) for p in prep.used_pools if p.absolute]
    moved = plan(spans, area, region_size)
    if moved and prep.ecblobs is not None:
        prep.kept = blob_refusal(c_blob_words(prep.ecblobs), moved, network_c, prep.starts)
    if prep.kept:
        return
    check_landing(moved, spans, area, network_c)
    new = {mv.name: mv.new for mv in moved}
    for p in prep.used_pools:
        p.offset = new.get(p.name, p.offset)
    prep.moved = moved


def ecblobs_path(network_c: str) -> str:
    """The `<stem>_ecblobs.h` beside a network C file (an epoch-controller network's blobs)."""
    return os.path.splitext(network_c)[0] + "_ecblobs.h"


def check_generated(network_c: str) -> None:
    """What `stedgeai generate` just wrote, read as PREPARE reads it (network.c whole, its
    c_info.json, every params .raw of its pool's size): damage there is the generate step's
    failure, reported by it, so that its next run writes the files again."""
    try:
        analyse(network_c, absolute_flash_pools=True)
    except N6Error as e:
        raise N6Error(e.path, f"stedgeai generate wrote a damaged file: {e.problem}",
                      "run the build again (generate runs again); if it fails the same way, check the ST Edge "
                      "AI Core install and the free disk space") from None


def params_blob(prep: Prepared) -> ParamsBlob:
    """The params pools' raws in pool order (each zero-padded to 8 in the blob), after the blobs' lead."""
    return ParamsBlob([ParamsPart(p.name, prep.raws[p.name], p.used) for p in prep.params_pools], prep.params_lead)


def conf_h(prep: Prepared) -> str:
    major, minor, micro, dev = prep.release.atonn
    return "\n".join([
        f"/* Configuration of the relocatable network '{prep.name}' - generated by n6, do not edit. */",
        f"#ifndef {prep.name.upper()}_RELOC_CONF_H", f"#define {prep.name.upper()}_RELOC_CONF_H", "",
        f'#define RUNTIME_DESC "{prep.runtime_desc}"',
        f"#define RUNTIME_VERSION 0x{major << 24 | minor << 16 | micro << 8:08X}",
        f"#define RUNTIME_VERSION_DEV {dev}",
        f'#define C_NAME "{prep.name.lower()}"',
        f"#define C_FCT_SUFFIX {prep.c_name}",
        f"#define ACTS_SZ {prep.acts_sz}",
        f"#define PARAMS_SZ {prep.params_sz}",
        f"#define EXT_RAM_SZ {prep.ext_ram_sz}",
        "/* Size and CRC-32 of the params blob are written into _network_rt_ctx when the image is",
        " * packed, so that new weights never recompile the model. */",
        "#define PARAMS_BIN_SZ 0",
        "#define PARAMS_BIN_CRC32 0", "", "#endif", ""])


def mempools_c(prep: Prepared) -> str:
    L = [f"/* Memory-pool descriptors of the relocatable network '{prep.name}' - generated by n6, do not edit. */",
         "#undef BUILD_AI_NETWORK_RELOC", '#include "ll_aton_reloc_network.h"', "",
         f"#define _FAKE_SIZE {FAKE_SIZE}", ""]
    relocs = [p for p in prep.used_pools if p.type == TYPE_RELOC]
    for p in relocs:
        L.append(f'__attribute__((section(".params_{p.pool_id}"), used, aligned(8))) '
                 f"const unsigned char {p.label}[_FAKE_SIZE] = {{0}};")
    if not relocs:
        L.append('__attribute__((section(".params_0"), used, aligned(8))) '
                 "const unsigned char _unreferenced_buffer[_FAKE_SIZE] = {0};")
    L += ["", '__attribute__((section(".params_desc"), used))', "ll_aton_reloc_mem_pool_desc _params_desc[] = {"]
    for p in prep.used_pools:
        L.append(f'  {{.name = "{p.name}", .flags = 0x{p.flags:08X}, .foff = {p.foff}, .dst = 0x{p.dst:08X}, '
                 f".size = {p.used}}}, /* {describe_flags(p.flags)} */")
    L += ["  {.name = NULL, .flags = 0, .foff = 0, .dst = 0, .size = 0},", "};", ""]
    return "\n".join(L)


_BLOB_DECL = re.compile(r"^(\s*)(static\s+)?const\s+uint64_t\s+(_ec_blob_(\w+?))\s*\[")
_COUNT = re.compile(r"\s*(\d*)\s*\]")
_ALIGNED = re.compile(r"\baligned\s*\(\s*(\d+)\s*\)")


@dataclass(frozen=True)
class ConstBlob:
    """A constant epoch-controller blob of an _ecblobs.h (one ECBLOB_CONST_SECTION array)."""
    line: int       # its declaration's line index
    name: str       # `_ec_blob_<suffix>`
    align: int      # bytes: 8, or its aligned(N)
    words: int      # its 8-byte words: the declared count, else its initializer's


def const_blobs(lines: Sequence[str], release: Release) -> Iterator[ConstBlob]:
    """The arrays marked ECBLOB_CONST_SECTION, found as ST's prepare_network.py finds them: a line
    that is the marker (stripped), the declaration 1 line after it (3 on 3.x, past the comment and
    the aligned attribute). Words are the hex words c_blob_words reads (move.U64_WORD)."""
    look = 3 if release.core >= "3" else 1
    for i, line in enumerate(lines[:len(lines) - look]):
        if line.strip() != "ECBLOB_CONST_SECTION" or not (m := _BLOB_DECL.match(lines[i + look])):
            continue
        body = []
        for text in lines[i + look:]:
            body.append(text)
            if "}" in text:
                break
        count = _COUNT.match(lines[i + look], m.end())
        words = int(count[1]) if count and count[1] else len(U64_WORD.findall("\n".join(body)))
        align = max([8] + [int(a) for a in _ALIGNED.findall("\n".join(lines[i + 1:i + look + 1]))])
        yield ConstBlob(i + look, m[3], align, words)


def params_lead(text: str, release: Release) -> int:
    """The bytes an _ecblobs.h's constant blobs take at the start of the params region with
    --ecblob-in-params: the linker script lays every array marked ECBLOB_CONST_SECTION in
    .const_ec_blob, 8-aligned, before the params (pack writes them there, from the ELF). Each is
    its 8-byte words after at most its own alignment's padding: exact for 8-aligned blobs (ST
    2.x's, and the simulated tool's), at least the linked size for ST 3.0's 64-byte aligned ones,
    whose order the compiler chooses. The one size the pools moved past the params must clear
    (pack refuses an image whose blobs came out longer)."""
    return sum(b.align - 8 + 8 * b.words for b in const_blobs(text.splitlines(), release))


def patch_ecblobs(text: str, release: Release) -> str:
    """--ecblob-in-params: constant blobs become `_ec_blob_PARAM_*` arrays placed by
    ECBLOB_CONST_SECTION in .const_ec_blob; #defines keep the old names working."""
    lines = text.splitlines()
    renamed = []
    for b in list(const_blobs(lines, release)):
        new = f"_ec_blob_PARAM_{b.name[len('_ec_blob_'):]}"
        lines[b.line] = _BLOB_DECL.sub(
            lambda mm, new=new: f"{mm.group(1)}const uint64_t {new}[",  # type: ignore[misc]  # a default: untyped
            lines[b.line])
        renamed.append((b.name, new))
    if not renamed:
        return text
    # the defines and the pointer table go right after the last blob definition
    text = "\n".join(lines) + "\n"
    extra = ["", "/* Constant blobs live in the params area (--ecblob-in-params). */"]
    extra += [f"#define {old} {new}" for old, new in renamed]
    extra += ["const uint64_t *const _ec_blobs_in_params[] = {"] + [f"  {new}," for _, new in renamed] + ["};", ""]
    anchor = text.rfind("};\n", 0, text.find("bool LL_ATON_EC_Network_Init_"))
    return text[:anchor + 3] + "\n".join(extra) + text[anchor + 3:]


def moved_text(prep: Prepared, text: str) -> str:
    """Generated C (network.c, _ecblobs.h) with the addresses inside the moved pools following them."""
    return move_addresses(text, prep.moved, prep.starts)


def reloc_c(prep: Prepared, network_c_text: str, stem: str) -> str:
    text = moved_text(prep, network_c_text)
    text = text.replace(f'#include "{stem}_ecblobs.h"', f'#include "{prep.name}_reloc_ecblobs.h"')
    return text.rstrip("\n") + "\n\n/* Relocatable-image objects (rt_ctx, header entries, flags): added by n6. */\n" \
        "#if defined(BUILD_AI_NETWORK_RELOC)\n#include \"ll_aton_reloc_network.h\"\nAI_RELOC_NETWORK();\n#endif\n"


def prepare(network_c: str, outdir: str, name: str | None = None, ecblob_in_params: bool = False,
            install_version: Sequence[int] | None = None, absolute_flash_pools: bool = False,
            simulated_install: bool = False, image_area: ImageArea | None = None) -> Prepared:
    """Run the prepare step; returns the Prepared description."""
    prep = analyse(network_c, name, install_version, absolute_flash_pools, simulated_install, image_area,
                   ecblob_in_params)
    stem = os.path.splitext(os.path.basename(network_c))[0]
    n = prep.name
    os.makedirs(outdir, exist_ok=True)
    write_text(os.path.join(outdir, f"{n}_reloc.c"), reloc_c(prep, prep.net.text, stem))   # type: ignore[union-attr]  # analyse sets net
    if prep.ecblobs is not None:
        text = moved_text(prep, prep.ecblobs)
        write_text(os.path.join(outdir, f"{n}_reloc_ecblobs.h"),
                   patch_ecblobs(text, prep.release) if ecblob_in_params else text)
    write_text(os.path.join(outdir, f"{n}_reloc_mempools.c"), mempools_c(prep))
    write_text(os.path.join(outdir, f"{n}_reloc_conf.h"), conf_h(prep))
    params_blob(prep).save(os.path.join(outdir, f"{n}_reloc_params.json"))
    return prep
