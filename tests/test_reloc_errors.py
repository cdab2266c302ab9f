"""Bad input to the relocatable pipeline: one-line errors that name the file and the fix."""
import json
import os
import shlex
import shutil

import pytest

from n6.errors import N6Error
from n6.network_c import Buffer, NetworkC, PoolComment
from n6.reloc.pools import pools_of
from n6.reloc.prepare import prepare

from conftest import MODELS, bump, copy_repo, scons

PREBUILT = os.path.join(MODELS, "tiny_prebuilt")


@pytest.fixture
def folder(tmp_path):
    """A copy of the bundled prebuilt stedgeai output."""
    dst = tmp_path / "out"
    shutil.copytree(PREBUILT, dst)
    return dst


def _prepare_error(folder, tmp_path):
    with pytest.raises(N6Error) as e:
        prepare(str(folder / "network.c"), str(tmp_path / "reloc"))
    text = str(e.value)
    assert "\n" not in text and "(fix: " in text
    return text


def test_missing_raw_for_a_params_pool(folder, tmp_path):
    os.unlink(folder / "network_atonbuf.xSPI2.raw")
    assert "network_atonbuf.xSPI2.raw: missing: pool 'xSPI2' holds parameters" in _prepare_error(folder, tmp_path)
    assert not (tmp_path / "reloc").exists()   # nothing half-written


@pytest.mark.parametrize("delta", [-1, 8])
def test_raw_of_the_wrong_size(folder, tmp_path, delta):
    raw = folder / "network_atonbuf.xSPI2.raw"
    data = raw.read_bytes()
    raw.write_bytes(data[:delta] if delta < 0 else data + bytes(delta))
    assert f"is {len(data) + delta} bytes but pool 'xSPI2' uses {len(data)} bytes" in _prepare_error(folder, tmp_path)


def test_generated_without_all_buffers_info(folder, tmp_path):
    c = folder / "network.c"
    c.write_text(c.read_text().replace(" * --all-buffers-info = true\n", ""))
    assert "network.c: generated without --all-buffers-info" in _prepare_error(folder, tmp_path)


def test_missing_c_info(folder, tmp_path):
    os.unlink(folder / "network_c_info.json")
    assert "network_c_info.json: c_info.json not found" in _prepare_error(folder, tmp_path)


def test_malformed_c_info(folder, tmp_path):
    (folder / "network_c_info.json").write_text('{"json_schema_version": "1.0"}')
    assert "not a c_info.json of schema 2.0" in _prepare_error(folder, tmp_path)
    (folder / "network_c_info.json").write_text('{"json_schema_version": ')
    assert "malformed c_info.json" in _prepare_error(folder, tmp_path)


def test_ll_aton_version_differs_from_the_install(folder, tmp_path):
    with pytest.raises(N6Error, match="generated for LL_ATON 1.1.1-14 but the ST Edge AI install has 1.1.3-8"):
        prepare(str(folder / "network.c"), str(tmp_path / "reloc"), install_version=(1, 1, 3, 8))


def _net(*pools):
    """A parsed network with pools (index, postfix, offset, relative, rw) each holding one buffer."""
    net = NetworkC(path="build/x/network.c", text="")
    for index, postfix, offset, relative, rw, param in pools:
        desc = f"offset=0x{offset:08x} {'' if relative else 'absolute_mode '}size=1000 " \
               f"{'READ_WRITE' if rw else 'READ_ONLY'} cacheable=ON"
        net.pools.append(PoolComment(index, postfix, postfix, offset, desc, "1000 B"))
        base = f"_mem_pool_{postfix}_Default" if relative else offset
        if relative:
            net.labels.append((base, 1000))
        net.buffers.append(Buffer("Input", f"b{index}", base, 0, 1000, 1000, param))
    return net


def test_two_relative_read_only_pools():
    net = _net((1, "xSPI2", 0x71000000, True, False, True), (2, "xSPI3", 0x72000000, True, False, True))
    with pytest.raises(N6Error, match="network.c: two relative read-only pools \\('xSPI3' and 'xSPI2'\\)"):
        pools_of(net)


def test_relative_pool_below_external_memory():
    net = _net((1, "AXISRAM5", 0x342E0000, True, True, False))
    with pytest.raises(N6Error, match="relative pool 'AXISRAM5' at 0x342E0000 is below 0x60000000"):
        pools_of(net)


def test_classification_of_every_documented_kind():
    net = _net((1, "xSPI2", 0x71000000, True, False, True), (2, "xSPI1", 0x90000000, True, True, False),
               (3, "AXISRAM5", 0x342E0000, False, True, False), (4, "AXISRAM2", 0x34100000, False, True, True))
    flags = {p.name: p.flags for p in pools_of(net)}
    assert flags == {"xSPI2": 0x01010500, "xSPI1": 0x01020601, "AXISRAM5": 0x03020600, "AXISRAM2": 0x02030600}
    assert [p.name for p in pools_of(net)] == ["xSPI1", "xSPI2", "AXISRAM5", "AXISRAM2"]   # offset descending


# -- through SCons: link-level problems ------------------------------------------------------------

@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("reloc-errors"))


def _inject(repo, code):
    path = os.path.join(repo, "models", "tiny_prebuilt", "network.c")
    text = open(os.path.join(PREBUILT, "network.c")).read()
    anchor = "bool LL_ATON_EC_Network_Init_Default(void)\n{\n"
    assert anchor in text
    with open(path, "w") as f:
        f.write(text.replace(anchor, anchor + code))
    bump(path)


def _scons_error(repo, *args):
    proc = scons(repo, *args, check=False)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("scons: ***")]
    assert proc.returncode != 0 and len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return errors[0]


def test_unsupported_relocation_type(repo):
    _inject(repo, '  extern int network_counter;\n  __asm__ volatile("movw r0, #:lower16:network_counter" ::: "r0");\n')
    with open(os.path.join(repo, "models", "tiny_prebuilt", "network.c"), "a") as f:
        f.write("int network_counter;\n")
    err = _scons_error(repo, "tiny_prebuilt")
    assert "network.elf: unsupported relocation type 47 against 'network_counter'" in err and "fix:" in err


def test_unresolved_symbol(repo):
    _inject(repo, "  extern int network_missing __attribute__((weak));\n  if (&network_missing) return false;\n")
    err = _scons_error(repo, "tiny_prebuilt")
    assert "network.elf: unresolved symbol 'network_missing'" in err and "fix:" in err


def test_raw_resized_after_a_build_fails_the_pack_and_leaves_no_image(repo):
    """Prepare reads only the .raw names; pack finds a weight file that no longer fits its pool."""
    network_c = os.path.join(repo, "models", "tiny_prebuilt", "network.c")
    shutil.copyfile(os.path.join(PREBUILT, "network.c"), network_c)
    bump(network_c)
    scons(repo, "tiny_prebuilt")
    raw = os.path.join(repo, "models", "tiny_prebuilt", "network_atonbuf.xSPI2.raw")
    size = os.path.getsize(raw)
    try:
        with open(raw, "ab") as f:
            f.write(bytes(8))
        bump(raw)
        err = _scons_error(repo, "tiny_prebuilt")
        assert f"network_atonbuf.xSPI2.raw: is {size + 8} bytes but pool 'xSPI2' uses {size} bytes" in err
        assert "fix: use the .raw files written by the same stedgeai run as network.c" in err
        assert not os.path.exists(os.path.join(repo, "build", "tiny_prebuilt", "network_rel.bin"))
        assert scons(repo, "-q", "tiny_prebuilt", check=False).returncode != 0
    finally:
        shutil.copyfile(os.path.join(PREBUILT, "network_atonbuf.xSPI2.raw"), raw)
        bump(raw)


def test_no_st_edge_ai_install(repo, tmp_path):
    err = _scons_error(repo, f"STEDGEAI_CORE_DIR={tmp_path}")
    assert f"{tmp_path}: not an ST Edge AI Core install (no Utilities/linux/stedgeai)" in err


def test_post_check_rejects_a_rel_site_pointing_nowhere(repo):
    import struct
    from n6.reloc.image import off
    from n6.reloc.elf import post_check
    scons(repo, "kws_mlp")
    data = bytearray(open(os.path.join(repo, "build", "kws_mlp", "network_rel.bin"), "rb").read())
    post_check("network_rel.bin", bytes(data))   # the built image passes
    h = struct.unpack_from("<13I", data, 0)
    site = struct.unpack_from("<I", data, off(h[9]))[0]
    struct.pack_into("<I", data, off(h[4]) + off(site), 0x40000000 | off(h[7]))   # into the GOT gap
    with pytest.raises(N6Error, match="network_rel.bin: REL site .* points nowhere the loader can rebase"):
        post_check("network_rel.bin", bytes(data))


def test_size_gate_fails_with_the_numbers_and_leaves_no_image(repo):
    err = _scons_error(repo, "RELOC_FLASH_SIZE=4096", "kws_mlp")
    assert "build/kws_mlp/network_rel.bin: does not fit: flash (network_rel.bin) needs 97" in err
    assert "4096 available" in err
    assert not os.path.exists(os.path.join(repo, "build", "kws_mlp", "network_rel.bin"))
    err = _scons_error(repo, "RELOC_EXEC_RAM_SIZE=512", "RELOC_COPY_MODE=1", "kws_mlp")
    assert "does not fit: exec RAM (COPY) needs" in err and "512 available" in err


def test_per_model_reloc_options(repo):
    with open(os.path.join(repo, "models", "cifar_cnn", "model.json"), "w") as f:
        json.dump({"reloc": {"split": True, "secure": False, "name": "cnn"}}, f)
    scons(repo, "cifar_cnn")
    out = os.path.join(repo, "build", "cifar_cnn")
    assert {"cnn_rel.bin", "cnn_rel_params.bin", "cnn_reloc_results.json"} <= set(os.listdir(out))
    res = json.load(open(os.path.join(out, "cnn_reloc_results.json")))["reloc_binary_image"]
    assert res["flags"]["secure"] is False and res["params_offset"] == 0 and res["rt_context"]["c_name"] == "cnn"
    with open(os.path.join(repo, "models", "cifar_cnn", "model.json"), "w") as f:
        json.dump({"reloc": {"splitt": True}}, f)
    assert "models/cifar_cnn/model.json: unknown reloc option 'splitt'" in _scons_error(repo, "cifar_cnn")
    os.unlink(os.path.join(repo, "models", "cifar_cnn", "model.json"))


def test_compile_and_link_command_lines(tmp_path):
    """ST's makefile flags, defines and include order; per-file extras; ST's link order."""
    from n6 import gcc_flags
    repo = copy_repo(tmp_path / "cmd")
    out = scons(repo, "VERBOSE=1", "RELOC_SECURE=0", "tiny_prebuilt").stdout
    lines = {}
    for line in out.splitlines():
        if line.startswith("arm-none-eabi-gcc ") and " -o " in line:
            argv = shlex.split(line)   # as the compiler receives it
            lines[os.path.basename(argv[argv.index("-o") + 1])] = argv
    cc = lines["network_reloc.o"]
    flags = gcc_flags.compile_flags(secure=False)
    at = cc.index(flags[0])
    assert cc[at:at + len(flags)] == flags and "-mcmse" not in cc
    defines = [a for a in cc if a.startswith("-D")]
    assert defines[0] == '-DMODEL_CONF="network_reloc_conf.h"'
    assert defines[1:] == ["-D" + d for d in gcc_flags.DEFINES] + ["-DLL_ATON_EB_DBG_INFO"]
    includes = [a[2:] for a in cc if a.startswith("-I")]
    assert includes[0].endswith("Middlewares/ST/AI/Npu/ll_aton") and includes[1].endswith("scripts/N6_reloc/resources/platform/stm32n6")
    assert includes[2].endswith("scripts/N6_reloc/resources/platform") and includes[3].endswith("build/tiny_prebuilt/reloc")
    assert "-DNDEBUG" in lines["ecloader.o"] and "-DNDEBUG" in lines["ll_aton_lib_sw_operators.o"]
    assert "-DNDEBUG" not in lines["ll_aton.o"]
    assert any(a.endswith("Middlewares/ST/AI/Inc") for a in lines["ll_sw_integer.o"])
    assert not any(a.endswith("Middlewares/ST/AI/Inc") for a in lines["ll_aton.o"])
    link = lines["network.elf"]
    objs = [os.path.basename(a) for a in link if a.endswith((".o", ".a"))]
    assert objs == ["network_reloc.o", "ll_aton.o", "ll_aton_util.o", "ll_sw_integer.o", "ll_sw_float.o",
                    "ll_aton_lib_sw_operators.o", "ecloader.o", "NetworkRuntime1020_CM55_GCC_PIC.a",
                    "network_reloc_mempools.o", "ll_aton_reloc_callbacks.o"]
    tail = link[link.index("-T"):]
    assert tail[2:9] == ["-nostartfiles", "-nostdlib", "-Wl,--gc-sections", "-Wl,--cref", "-Bstatic",
                         "-Wl,--emit-relocs", "-Wl,-Map,build/tiny_prebuilt/reloc/network.map"]
