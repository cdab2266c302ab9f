"""The relocatable image built end to end (simulated generate, real arm-none-eabi-gcc, our
linker script and packer): header words, flags, descriptors, REL table and padding checked
against the ELF as binutils reads it, in every variant; the checker installs every image."""
import json
import os
import shutil
import struct
import subprocess
import zlib

import pytest

from n6.reloc import check
from n6.reloc.image import Image, MAGIC, off

from conftest import BUNDLED, copy_repo, scons

MODELS = BUNDLED + ("tiny_prebuilt",)
VARIANTS = {
    "secure": [],
    "nonsecure-split": ["RELOC_SECURE=0", "RELOC_SPLIT=1"],
    "v3.0": ["STEDGEAI_SIM_RELEASE=3.0", *BUNDLED],   # the prebuilt folder is a 2.2 output
    "nodbg-ecblob": ["RELOC_DBG_INFO=0", "RELOC_ECBLOB_IN_PARAMS=1"],
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("reloc-repo"))


@pytest.fixture(scope="module")
def variant(repo):
    built = {}

    def get(name):
        if name not in built:
            scons(repo, f"BUILD_DIR=build-{name}", *VARIANTS[name])
            built[name] = os.path.join(repo, f"build-{name}")
        return built[name]
    return get


def _image(build, model, split=False):
    path = os.path.join(build, model, "network_rel.bin")
    data = open(path, "rb").read()
    params = open(path.replace(".bin", "_params.bin"), "rb").read() if split else None
    return data, params, Image.parse(data, path, params=params)


def _nm(elf):
    out = subprocess.run(["arm-none-eabi-nm", elf], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


def _readelf_sections(elf):
    out = subprocess.run(["arm-none-eabi-readelf", "-SW", elf], capture_output=True, text=True, check=True).stdout
    secs = {}
    for line in out.splitlines():
        parts = line.replace("[ ", "[").split()
        if len(parts) > 6 and parts[0].startswith("[") and parts[1].startswith("."):
            secs[parts[1]] = (int(parts[3], 16), int(parts[4], 16), int(parts[5], 16))   # addr, file off, size
    return secs


def _skip_prebuilt_in_3_0(name, model):
    if name == "v3.0" and model == "tiny_prebuilt":
        pytest.skip("a 2.2 prebuilt output cannot be built against a 3.0 install (tested below)")


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("model", MODELS)
def test_header_words_match_the_elf(variant, name, model):
    _skip_prebuilt_in_3_0(name, model)
    build = variant(name)
    split = "split" in name
    data, params, img = _image(build, model, split)
    elf = os.path.join(build, model, "reloc", "network.elf")
    sym, secs = _nm(elf), _readelf_sections(elf)
    h = img.header
    assert data[:4] == bytes.fromhex("4E42494E") and h.magic == MAGIC
    assert h.size == (104 if name == "v3.0" else 96)
    assert (h.data_start, h.data_end, h.bss_start, h.bss_end, h.got_start, h.got_end) == (
        0x40000000, sym["__data_end"], sym["__bss_start"], sym["__bss_end"], sym["__got_start"], sym["__got_end"])
    assert h.data_data == secs[".flash"][0] + secs[".flash"][2] == sym["__data_data"]
    assert h.params_start == sym["_params_desc"] and h.rt_ctx == sym["_network_rt_ctx"]
    assert h.ec_network_init == sym["LL_ATON_EC_Network_Init_" + ("network" if name == "v3.0" else "Default")] | 1
    # layout: RO part, data image padded to 8, REL table padded to 8, then params
    ro, data_len = off(h.data_data), secs[".data"][2]
    assert data[ro:ro + data_len] == _data_image(elf, secs, data, ro)
    rel_at = ro + (data_len + 7) // 8 * 8
    assert h.rel_start == 0x20000000 | rel_at and data[ro + data_len:rel_at] == bytes(rel_at - ro - data_len)
    rel_end = off(h.rel_end)
    padded = (rel_end + 7) // 8 * 8
    assert data[rel_end:padded] == bytes(padded - rel_end)
    if split:
        assert h.params_offset == 0 and len(data) == padded and params
    else:
        assert h.params_offset == padded and len(data) > padded


def _data_image(elf, secs, image, ro):
    """The ELF's .data bytes, with the two words the packer writes (params size/CRC) taken from the image."""
    with open(elf, "rb") as f:
        f.seek(secs[".data"][1])
        raw = bytearray(f.read(secs[".data"][2]))
    rt = _nm(elf)["_network_rt_ctx"] - 0x40000000 + 48
    raw[rt:rt + 8] = image[ro + rt:ro + rt + 8]
    return bytes(raw)


@pytest.mark.parametrize("name, flags", [("secure", 0x80785D22), ("nonsecure-split", 0x80685D22),
                                         ("v3.0", 0x80785D22), ("nodbg-ecblob", 0x80585D22)])
def test_flags_word_and_struct_sizes(variant, name, flags):
    _, _, img = _image(variant(name), "cifar_cnn", "split" in name)
    assert img.header.flags == flags
    assert img.rt_ctx.rt_c_struct_sizes == (0x1438 if "nodbg" in name else 0x3038)


def test_rel_table_is_the_abs32_sites_in_data(variant):
    build = variant("secure")
    for model in MODELS:
        _, _, img = _image(build, model)
        elf = os.path.join(build, model, "reloc", "network.elf")
        out = subprocess.run(["arm-none-eabi-readelf", "-rW", elf], capture_output=True, text=True, check=True).stdout
        section, sites = None, []
        for line in out.splitlines():
            if line.startswith("Relocation section"):
                section = line.split("'")[1]
            elif "R_ARM_ABS32" in line and section == ".rel.data":
                sites.append(int(line.split()[0], 16))
        assert img.rel_sites == sites and sites


EXPECTED_POOLS = {
    "kws_mlp": [("AXISRAM5", 0x03020200, 0x342E0000), ("AXISRAM2", 0x02030200, 0x34100000)],
    "cifar_cnn": [("xSPI2", 0x01010500, 0), ("AXISRAM5", 0x03020200, 0x342E0000)],
    "big_mlp": [("xSPI1", 0x01020601, 0), ("xSPI2", 0x01010500, 0)],
    "tiny_prebuilt": [("xSPI2", 0x01010500, 0), ("AXISRAM5", 0x03020200, 0x342E0000)],
}


@pytest.mark.parametrize("model", MODELS)
def test_descriptor_table(variant, model):
    build = variant("secure")
    _, _, img = _image(build, model)
    info = json.load(open(os.path.join(build, model, "st_ai_output", "network_c_info.json")
                          if model != "tiny_prebuilt" else os.path.join(build, "..", "models", model,
                                                                        "network_c_info.json")))
    used = {p["fname"].split(".")[1]: p["used_size_bytes"] for p in info["memory_pools"]}
    assert [(d.name, d.flags, d.dst) for d in img.descriptors] == EXPECTED_POOLS[model]
    assert [d.size for d in img.descriptors] == [used[d.name] for d in img.descriptors]
    foff = 0
    for d in img.descriptors:
        if (d.flags >> 16) & 0xFF in (1, 3):
            assert d.foff == foff
            foff += (d.size + 7) // 8 * 8
    assert img.rt_ctx.params_bin_sz == foff == len(img.params)
    assert img.rt_ctx.params_bin_crc32 == zlib.crc32(img.params)


def test_ecblobs_lead_the_params_area(variant):
    _, _, img = _image(variant("nodbg-ecblob"), "cifar_cnn")
    ec = img.rt_ctx and len(img.params) - img.rt_ctx.params_bin_sz
    assert ec > 0 and ec % 8 == 0
    blob = img.params[:ec]
    assert struct.unpack_from("<II", blob, 0) == (0xCA05_7A7A, 2)   # ST's blob magic, first in the params area


@pytest.mark.parametrize("name", list(VARIANTS))
@pytest.mark.parametrize("model", MODELS)
def test_checker_installs_every_image(variant, name, model):
    _skip_prebuilt_in_3_0(name, model)
    data, params, img = _image(variant(name), model, "split" in name)
    fw = check.Firmware(dbg_info="nodbg" not in name, ll_aton=(1, 1, 3) if name == "v3.0" else (1, 1, 1),
                        struct_sizes=0x1438 if "nodbg" in name else 0x3038)
    xip, copy = check.check_image(data, params, fw)
    assert (xip.mode, copy.mode) == ("XIP", "COPY")
    assert copy.ram_base - copy.ro_base == img.ro_size
    for d in img.descriptors:   # COPY pools received their initial content from the params area
        if d.type == 2:
            for inst in (xip, copy):
                assert inst.memory.read(d.dst, d.size) == bytes(img.params[d.foff:d.foff + d.size])
    for inst in (xip, copy):   # every relocated GOT word now points at mapped memory
        h = img.header
        for a in range(inst.ram_base + off(h.got_start), inst.ram_base + off(h.got_end) - 12, 4):
            word = inst.memory.u32(a)
            assert word == 0 or inst.memory.find(word, 1)[0] is not None, hex(word)


def test_prebuilt_of_another_release_is_one_line_error(repo, variant):
    variant("v3.0")
    proc = scons(repo, "BUILD_DIR=build-v3.0", "STEDGEAI_SIM_RELEASE=3.0", "tiny_prebuilt", check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode != 0 and len(errors) == 1 and "Traceback" not in proc.stderr
    assert "models/tiny_prebuilt/network.c: generated for LL_ATON 1.1.1-14 but the ST Edge AI install has " \
           "1.1.3-8" in errors[0]


def test_ecblobs_in_params_shift_copy_sources(tmp_path):
    """With EC blobs in the params area, a COPY pool's source moves behind them; the installed
    pool holds exactly the .raw bytes."""
    repo = copy_repo(tmp_path / "copy")
    src, dst = os.path.join(repo, "models", "cifar_cnn"), os.path.join(repo, "models", "cnn_copy")
    os.makedirs(dst)
    for f in ("model.onnx", "neural_art.json"):
        shutil.copyfile(os.path.join(src, f), os.path.join(dst, f))
    pools = json.load(open(os.path.join(repo, "models", "kws_mlp", "kws_mlp.mpool")))   # absolute pools only
    json.dump(pools, open(os.path.join(dst, "cifar_cnn.mpool"), "w"))
    scons(repo, "RELOC_ECBLOB_IN_PARAMS=1", "cnn_copy")
    data, _, img = _image(os.path.join(repo, "build"), "cnn_copy")
    copy_pool = next(d for d in img.descriptors if d.type == 2)
    ec = len(img.params) - img.rt_ctx.params_bin_sz
    assert ec > 0 and copy_pool.foff == ec
    xip, _ = check.check_image(data, None, check.Firmware())
    raw = open(os.path.join(repo, "build", "cnn_copy", "st_ai_output", "network_atonbuf.AXISRAM2.raw"), "rb").read()
    assert xip.memory.read(copy_pool.dst, len(raw)) == raw


# -- the checker rejects broken images ------------------------------------------------------------

def _reject(data, params=None, fw=None):
    with pytest.raises(check.LoaderError) as e:
        check.check_image(bytes(data), params, fw)
    return e.value.name


def test_rejections_carry_the_loader_error_names(variant):
    data, _, img = _image(variant("secure"), "kws_mlp")
    bad = bytearray(data)
    bad[0] ^= 0xFF
    assert _reject(bad) == "INVALID_BIN"                                    # corrupted magic
    assert _reject(data[:img.ro_size + 16]) == "INVALID_BIN"                  # truncated
    bad = bytearray(data)
    site = struct.unpack_from("<I", bad, off(img.header.rel_start))[0]
    struct.pack_into("<I", bad, off(img.header.rel_start), site ^ 0x10000000)  # flipped: segment 0x5
    assert _reject(bad) == "INVALID_BIN"
    bad = bytearray(data)
    bad[-1] ^= 0x01                                                           # params no longer match the CRC
    assert _reject(bad) == "PARAMS_CRC"
    bad = bytearray(data)
    struct.pack_into("<I", bad, 4, (img.header.flags & ~0xFFF) | 0xD21)       # CPUID of another core
    assert _reject(bad) == "INVALID_BIN"
    assert _reject(data, fw=check.Firmware(secure=False)) == "INVALID_BIN"     # secure image, non-secure firmware
    assert _reject(data, fw=check.Firmware(ll_aton=(1, 1, 3))) == "INVALID_BIN"
    cfg = check.Config(exec_ram_size=16)
    with pytest.raises(check.LoaderError) as e:
        check.install(data, check.FILE_ADDR, cfg)
    assert e.value.name == "MEMORY"


def test_split_image_needs_the_params_address(variant):
    data, params, _ = _image(variant("nonsecure-split"), "cifar_cnn", split=True)
    with pytest.raises(check.LoaderError) as e:
        check.install(data, check.FILE_ADDR, check.Config(), check.Firmware())
    assert e.value.name == "PARAM_ADDR"


def test_inspect_and_check_cli(variant, repo):
    image = os.path.join(variant("secure"), "big_mlp", "network_rel.bin")
    env = dict(os.environ, PYTHONPATH=os.path.join(repo, "site_scons"))
    out = subprocess.run(["python3" if False else __import__("sys").executable, "-m", "n6.reloc", "inspect", image,
                          "--json"], capture_output=True, text=True, env=env, check=True).stdout
    info = json.loads(out)
    assert info["flags"]["cpuid"] == "0xD22" and [d["decoded"] for d in info["descriptors"]] == \
        ["RELOC.ACTIV.1.WCACHED", "RELOC.PARAM.0.RCACHED"]
    ok = subprocess.run([__import__("sys").executable, "-m", "n6.reloc", "check", image, "--json"],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and [m["mode"] for m in json.loads(ok.stdout)["modes"]] == ["XIP", "COPY"]


def _check_cli(repo, image, *args):
    env = dict(os.environ, PYTHONPATH=os.path.join(repo, "site_scons"))
    return subprocess.run([__import__("sys").executable, "-m", "n6.reloc", "check", image, *args],
                          capture_output=True, text=True, env=env, cwd=repo)


def test_check_cli_judges_for_the_board_firmware(variant, repo, tmp_path):
    """`./n6 check` answers "will this install on the board?": it judges for the board's firmware
    (--board, default the default board's: ST's validation firmware, secure, async, of the
    release the image's LL_ATON names) and says so; never for one built as the image claims."""
    import reloc_mutations
    data, _, img = _image(variant("secure"), "big_mlp")
    rt_version = img.ro_size + off(img.header.rt_ctx) + 40
    secure_fw = "ST's validation firmware of ST Edge AI Core 2.2 as documented (LL_ATON 1.1.1, secure, dbg-info, async)"
    ok = _check_cli(repo, os.path.join(variant("secure"), "big_mlp", "network_rel.bin"))
    assert ok.returncode == 0 and ok.stdout.splitlines()[0].endswith(f"judged for STM32N6570-DK: {secure_fw}")
    cases = {"9.9.9": (reloc_mutations.with_word(data, rt_version, 0x0909_0900), "runtime 9.9.9 but the firmware's"),
             "micro+1": (reloc_mutations.with_word(data, rt_version, reloc_mutations.word_at(data, rt_version)
                                                   + 0x100), "runtime 1.1.2 but the firmware's LL_ATON is 1.1.1"),
             "micro-1": (reloc_mutations.with_word(data, rt_version, reloc_mutations.word_at(data, rt_version)
                                                   - 0x100), "runtime 1.1.0 but the firmware's LL_ATON is 1.1.1"),
             "async-cleared": (reloc_mutations.with_word(data, 4, img.header.flags & ~(1 << 22)),
                               "runtime mode (async) differs")}
    for name, (bad, why) in cases.items():
        path = tmp_path / f"{name}.bin"
        path.write_bytes(bad)
        proc = _check_cli(repo, str(path))
        assert proc.returncode == 1 and \
            proc.stderr.startswith(f"{path}: rejected by STM32N6570-DK: {secure_fw}: INVALID_BIN (-1): ")
        assert why in proc.stderr, proc.stderr
    # a board whose firmware is not secure: an image with the secure bit set is ST's INVALID_BIN
    nonsecure = tmp_path / "nonsecure.toml"
    nonsecure.write_text(open(os.path.join(repo, "firmware", "boards", "stm32n6570-dk.toml")).read() +
                         '\n[firmware]\nrelease = "2.2"\nsecure = false\ndbg_info = true\n')
    split = variant("nonsecure-split")
    image = os.path.join(split, "big_mlp", "network_rel.bin")
    assert _check_cli(repo, image, "--board", str(nonsecure)).returncode == 0
    flags = reloc_mutations.word_at(open(image, "rb").read(), 4)
    secured = tmp_path / "network_rel.bin"
    secured.write_bytes(reloc_mutations.with_word(open(image, "rb").read(), 4, flags | 1 << 20))
    shutil.copy(image.replace(".bin", "_params.bin"), tmp_path / "network_rel_params.bin")
    proc = _check_cli(repo, str(secured), "--board", str(nonsecure), "--json")
    report = json.loads(proc.stdout)
    assert proc.returncode == 1 and report["error"] == "INVALID_BIN" and report["rule"] is None
    assert report["firmware"] == f"STM32N6570-DK: the [firmware] of {nonsecure}"
    assert "secure image (-mcmse) for a non-secure firmware" in report["detail"]
    # a split params file with bytes before it: our rule, not an error ST's loader gives
    params = open(image.replace(".bin", "_params.bin"), "rb").read()
    for n in (4, 8):
        (tmp_path / "network_rel_params.bin").write_bytes(bytes(n) + params)
        report = json.loads(_check_cli(repo, image, "--params", str(tmp_path / "network_rel_params.bin"),
                                       "--json").stdout)
        assert report["rule"] == "params_size" and report["error"] is None and \
            report["detail"] == f"the params file is {len(params) + n} bytes: {n} bytes before the " \
            f"{len(params)}-byte params blob rt_ctx declares, not the image's epoch-controller blobs (the image " \
            "does not point there)"


# -- stored goldens ---------------------------------------------------------------------------------
# The prebuilt example's image depends only on our runtime sources, linker script and packer and on
# the distribution's arm-none-eabi-gcc; any change to its bytes must be deliberate:
#     N6_UPDATE_GOLDEN=1 ./n6 test -k golden

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")


def _golden_view(data, params):
    import hashlib
    from n6.reloc.__main__ import inspect
    img = Image.parse(data, params=params)
    view = inspect(img)
    view["sha256"] = hashlib.sha256(data).hexdigest()
    view["params_sha256"] = hashlib.sha256(bytes(img.params)).hexdigest()
    view["padding"] = {"after_data": data[off(img.header.data_data) + _data_len(img):off(img.header.rel_start)].hex(),
                       "after_rel": data[off(img.header.rel_end):(off(img.header.rel_end) + 7) // 8 * 8].hex()}
    return json.loads(json.dumps(view))


def _data_len(img):
    return off(img.header.got_end)   # the .data image ends with the GOT


@pytest.mark.parametrize("name", ["secure", "nonsecure-split"])
def test_golden_prebuilt_image(variant, name):
    data, params, _ = _image(variant(name), "tiny_prebuilt", "split" in name)
    view = _golden_view(data, params)
    path = os.path.join(GOLDEN, f"tiny_prebuilt-{name}.json")
    if os.environ.get("N6_UPDATE_GOLDEN"):
        with open(path, "w") as f:
            json.dump(view, f, indent=1, sort_keys=True)
            f.write("\n")
    with open(path) as f:
        assert view == json.load(f)
