"""Unit tests of the pure-Python format readers."""
import json
import os

import pytest

from n6.errors import N6Error
from n6.jsonfile import loads_lenient
from n6.models import discover, read_model
from n6.mpool import read_mpool
from n6.placement import activation_pools, params_pool
from n6.neural_art_profile import read_profile, split_profile_arg
from n6.releases import c_symbol, generate_outputs, release

from conftest import MODELS, stedgeai_output_folder


def test_lenient_json_accepts_comments_and_trailing_commas():
    text = '{"a": [1, 2,], // note\n "b": {"c": "x // not a comment",},}'
    assert loads_lenient(text) == {"a": [1, 2], "b": {"c": "x // not a comment"}}


def test_mpool_magnitudes_modes_and_rights(tmp_path):
    path = tmp_path / "m.mpool"
    path.write_text(json.dumps({"memory": {"mem_file_prefix": "atonbuf", "mempools": [
        {"fname": "xSPI2", "name": "octoFlash", "offset": {"value": "0x71000000", "magnitude": "BYTES"},
         "size": {"value": "112", "magnitude": "MBYTES"}, "mode": "USEMODE_RELATIVE",
         "prop": {"rights": "ACC_READ", "cacheable": "CACHEABLE_ON", "constants_preferred": "true"}},
        {"fname": "AXISRAM5", "name": "npuRAM5", "offset": {"value": "832", "magnitude": "MBYTES"},
         "size": {"value": "448", "magnitude": "KBYTES"}, "prop": {"rights": "ACC_WRITE"}}]}}))
    m = read_mpool(path)
    flash, ram = m.pools
    assert (flash.offset, flash.size, flash.relative, flash.read_only, flash.cacheable) == \
        (0x71000000, 112 << 20, True, True, True)
    assert (ram.offset, ram.size, ram.relative, ram.read_only) == (0x34000000, 448 << 10, False, False)
    assert params_pool(m) is flash and activation_pools(m) == [ram]


@pytest.mark.parametrize("content, problem", [
    ("{", "malformed .mpool file"),
    ('{"memory": {}}', "no 'memory.mempools' list"),
    ('{"memory": {"mempools": [{"fname": "a"}]}}', "lacks name, offset, size"),
    ('{"memory": {"mempools": [{"fname": "a", "name": "b", "offset": {"value": "zz"}, "size": {"value": "1"}}]}}',
     "is not a number"),
    ('{"memory": {"mempools": [{"fname": "a", "name": "b", "offset": {"value": "1", "magnitude": "GB"}, '
     '"size": {"value": "1"}}]}}', "unknown magnitude"),
])
def test_malformed_mpool_names_file_and_problem(tmp_path, content, problem):
    path = tmp_path / "bad.mpool"
    path.write_text(content)
    with pytest.raises(N6Error) as e:
        read_mpool(path)
    assert str(e.value).startswith(str(path)) and problem in str(e.value) and "\n" not in str(e.value)


def test_profile_argument_and_lookup(tmp_path):
    assert split_profile_arg("test@dir/p.json") == ("test", "dir/p.json")
    with pytest.raises(N6Error, match="<profile>@<file.json>"):
        split_profile_arg("p.json")
    prof = read_profile(f"{MODELS}/cifar_cnn/neural_art.json", "default")
    assert prof.epoch_controller and prof.all_buffers_info
    assert prof.memory_pool.endswith("cifar_cnn/cifar_cnn.mpool")
    with pytest.raises(N6Error, match="profile 'nope' is not defined \\(defined: default\\)"):
        read_profile(f"{MODELS}/cifar_cnn/neural_art.json", "nope")
    with pytest.raises(N6Error, match="not found"):
        read_profile(tmp_path / "missing.json", "default")


def test_c_name_rules_per_release():
    r22, r30 = release("2.2"), release("3.0")
    assert [c_symbol(r22, n) for n in (None, "network", "kws")] == ["Default", "Default", "kws"]
    assert [c_symbol(r30, n) for n in (None, "network", "kws")] == ["network", "network", "kws"]
    assert release("v3.0.0-20426 5c81e2f7a") is r30
    with pytest.raises(N6Error, match="not supported"):
        release("1.0")


def test_generate_outputs_follow_the_naming_rules():
    assert generate_outputs(release("2.2"), "kws", "model", True, ["xSPI2"]) == [
        "kws.c", "kws.h", "kws_c_info.json", "kws_generate_report.txt", "model_OE_3_3_0.onnx",
        "model_OE_3_3_0_Q.json", "LICENSE.txt", "kws_ecblobs.h", "kws_atonbuf.xSPI2.raw"]
    assert generate_outputs(release("3.0"), None, "m", False, []) == [
        "network.c", "network.h", "network_c_info.json", "network_generate_report.txt", "m_OE_3_3_1.onnx",
        "m_OE_3_3_1_Q.json", "LICENSE.txt", "stai_network.c", "stai_network.h"]


def test_discovery_of_bundled_models():
    found, errors = discover(MODELS)
    assert errors == {}
    specs = {s.name: s for s in found}
    assert {"kws_mlp", "cifar_cnn", "big_mlp", "tiny_prebuilt"} <= set(specs)
    assert specs["kws_mlp"].kind == "source" and specs["kws_mlp"].model_file.endswith("model.onnx")
    assert specs["tiny_prebuilt"].kind == "prebuilt" and specs["tiny_prebuilt"].network_c.endswith("network.c")


def test_discovery_errors_name_the_folder(tmp_path):
    with pytest.raises(N6Error, match="no models folder"):
        discover(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(N6Error, match="no model file"):
        read_model(tmp_path / "empty")
    (tmp_path / "noprof").mkdir()
    (tmp_path / "noprof" / "m.onnx").write_bytes(b"\x08\x07")
    with pytest.raises(N6Error, match="neural_art.json: Neural-ART profile file not found"):
        read_model(tmp_path / "noprof")


def test_stedgeai_output_folder_with_side_files_is_prebuilt(tmp_path):
    spec = read_model(stedgeai_output_folder(tmp_path / "gen"))
    assert spec.kind == "prebuilt" and os.path.basename(spec.network_c) == "network.c"
    assert sorted(map(os.path.basename, spec.inputs)) == ["network_atonbuf.xSPI2.raw", "network_c_info.json"]
    spec = read_model(stedgeai_output_folder(tmp_path / "named", "face"))
    assert os.path.basename(spec.network_c) == "face.c"
    (tmp_path / "gen" / "network_c_info.json").unlink()      # ST's relocatable flow needs none
    spec = read_model(tmp_path / "gen")
    assert spec.kind == "prebuilt" and os.path.basename(spec.network_c) == "network.c"
    assert list(map(os.path.basename, spec.inputs)) == ["network_atonbuf.xSPI2.raw"]


def test_model_next_to_generated_network_says_which_to_remove(tmp_path):
    folder = stedgeai_output_folder(tmp_path / "both")
    (folder / "model.onnx").write_bytes(b"\x08\x07")
    with pytest.raises(N6Error) as e:
        read_model(folder)
    assert "holds both a model (model.onnx) and a generated network (network.c)" in str(e.value)
    assert "remove model.onnx" in str(e.value) and "or remove network.c and network_c_info.json" in str(e.value)


def test_a_broken_folder_does_not_hide_the_others(tmp_path):
    stedgeai_output_folder(tmp_path / "good")
    (tmp_path / "bad").mkdir()
    stedgeai_output_folder(tmp_path / "check")
    stedgeai_output_folder(tmp_path / "deploy-records")    # the flash step's records folder
    stedgeai_output_folder(tmp_path / "run-good")           # would shadow model good's run target
    specs, errors = discover(str(tmp_path))
    assert [s.name for s in specs] == ["good"]
    assert "no model file" in str(errors["bad"])
    assert all("also a build target" in str(errors[n]) for n in ("check", "deploy-records", "run-good"))


def test_network_c_buffer_forms(tmp_path):
    """Buffer tables in the three forms generated files use: hex base, label base (inside
    conversion macros), and the older absolute addr_start/addr_end/addr_limit form."""
    from n6.network_c import parse_network_c
    src = tmp_path / "network.c"
    src.write_text("""
/* global pool 1 is 1.00 KB */
/* index=1 file postfix=xSPI2 name=octoFlash offset=0x71000000  size=1000 READ_ONLY cacheable=ON */
/* global pool 2 is 96 B */
/* index=2 file postfix=AXISRAM5 name=npuRAM5 offset=0x342e0000 absolute_mode size=1000 READ_WRITE */
extern unsigned char _mem_pool_xSPI2_Default[]; /* [1000]; */
const EpochBlock_ItemTypeDef *LL_ATON_EpochBlockItems_Default(void) { return 0; }
const LL_Buffer_InfoTypeDef *LL_ATON_Input_Buffers_Info_Default(void)
{
  static const LL_Buffer_InfoTypeDef buff_info[] = {
    {
      .name = "a",
      .addr_base = {(unsigned char *)(0x342e0000UL)} /* Equivalent hex address = 0x342e0000UL */,
      .offset_start = 16,
      .offset_end = 48,
      .offset_limit = 56,
      .is_param = 0,
    },
    {
      .name = "w",
      .addr_base = {(unsigned char *)ATON_LIB_VIRTUAL_TO_PHYSICAL_ADDR((uint32_t)_mem_pool_xSPI2_Default)},
      .offset_start = 0,
      .offset_end = 1000,
      .offset_limit = 1000,
      .is_param = 1,
    },
    {
      .name = "old",
      .addr_start = {(unsigned char *)(0x342e0040UL)},
      .addr_end = {(unsigned char *)(0x342e0050UL)},
      .addr_limit = {(unsigned char *)(0x342e0058UL)},
      .is_param = 0,
    },
    {
      .name = NULL,
    }
  };
  return buff_info;
}
""")
    net = parse_network_c(src)
    got = [(b.name, b.base, b.offset_start, b.offset_end, b.offset_limit, b.is_param) for b in net.buffers]
    assert got == [("a", 0x342E0000, 16, 48, 56, False), ("w", "_mem_pool_xSPI2_Default", 0, 1000, 1000, True),
                   ("old", 0x342E0040, 0, 16, 24, False)]
    assert [(p.index, p.postfix, p.absolute, p.read_write, p.cacheable, p.global_size) for p in net.pools] == \
        [(1, "xSPI2", False, False, True, 1024), (2, "AXISRAM5", True, True, False, 96)]


def test_network_c_older_form_with_a_label_end_is_one_line(tmp_path):
    """The older absolute form ending at a pool's label (not an address): the one-line error of a
    base it cannot read, not a traceback from subtracting an address from a name."""
    from n6.network_c import parse_network_c
    src = tmp_path / "network.c"
    src.write_text("""extern unsigned char _mem_pool_xSPI2_Default[]; /* [1000]; */
const EpochBlock_ItemTypeDef *LL_ATON_EpochBlockItems_Default(void) { return 0; }
const LL_Buffer_InfoTypeDef *LL_ATON_Input_Buffers_Info_Default(void)
{
  static const LL_Buffer_InfoTypeDef buff_info[] = {
    {
      .name = "old",
      .addr_start = {(unsigned char *)(0x342e0040UL)},
      .addr_end = {(unsigned char *)_mem_pool_xSPI2_Default},
      .is_param = 0,
    },
  };
  return buff_info;
}
""")
    with pytest.raises(N6Error, match="buffer 'old' has no readable .addr_base"):
        parse_network_c(src)


@pytest.mark.parametrize("text, complete", [
    ("int a[2] = {1, 2};\nvoid f(void) {\n}\n", True),
    ("void f(void) {\n}\n/* end */\n// done\n#endif\n\n", True),      # trailing comments and # lines
    ("void f(void) {\n}\nint x = 1;  // a declaration last\n", True),
    ("void f(void) {\n  g();\n", False),                                  # cut inside a block
    ("void f(void) {\n}\n/* cut inside a comm", False),
    ("void f(void) {\n}\nint x = ", False),                                # cut after the last block
    ("\n  \n", False),
])
def test_a_cut_network_c_is_reported_as_truncated(text, complete):
    from n6.network_c import check_complete
    big = "/* " + "x" * 200_000 + " */\nstatic const int t[] = {" + "0, " * 100_000 + "0};\n"   # quick on large files
    for body in (text, big + text) if text.strip() else (text,):
        if complete:
            check_complete("network.c", body)
        else:
            with pytest.raises(N6Error, match="network.c: truncated"):
                check_complete("network.c", body)


def test_params_blob_streams_raws_padded_to_8_with_their_crc(tmp_path):
    import io
    import zlib
    from n6.reloc.params import ParamsBlob, ParamsPart
    raws = tmp_path / "model"
    raws.mkdir()
    (raws / "a.raw").write_bytes(bytes(range(13)))
    (raws / "b.raw").write_bytes(b"\xAA" * 8)
    desc = tmp_path / "build" / "network_reloc_params.json"
    desc.parent.mkdir()
    ParamsBlob([ParamsPart("p0", str(raws / "a.raw"), 13), ParamsPart("p1", str(raws / "b.raw"), 8)]).save(str(desc))
    stored = json.loads(desc.read_text())
    assert stored["size"] == 24 and [p["path"] for p in stored["parts"]] == ["../model/a.raw", "../model/b.raw"]
    blob = ParamsBlob.load(str(desc))
    blob.verify()
    out = io.BytesIO()
    crc = blob.stream(out)
    expected = bytes(range(13)) + bytes(3) + b"\xAA" * 8
    assert out.getvalue() == expected and crc == zlib.crc32(expected) and blob.size == len(expected)
    (raws / "b.raw").write_bytes(b"\xAA" * 9)
    with pytest.raises(N6Error, match=r"b\.raw: is 9 bytes but pool 'p1' uses 8 bytes \(fix: use the \.raw files"):
        blob.verify()
    (raws / "a.raw").unlink()
    with pytest.raises(N6Error, match=r"a\.raw: missing: pool 'p0' holds parameters"):
        blob.verify()


@pytest.mark.parametrize("text,expected", [
    ("655360", 655360), ("0xA0000", 0xA0000), ("640K", 640 << 10), ("8M", 8 << 20), ("8m", 8 << 20),
    ("1G", 1 << 30), ("64KiB", 64 << 10), (4096, 4096), ("none", None), ("None", None)])
def test_sizes_parse_hex_suffixes_and_none(text, expected):
    from n6.sizes import parse_size
    assert parse_size(text, "RELOC_FLASH_SIZE", allow_none=True) == expected


@pytest.mark.parametrize("text,problem", [
    ("0", "zero"), ("-1", "negative"), ("-8M", "negative"), (-5, "negative"), ("0x0", "zero"),
    ("8 pages", "not a byte count"), ("", "not a byte count"), (True, "boolean"), (1.5, "float")])
def test_sizes_reject_zero_negative_and_garbage(text, problem):
    from n6.sizes import parse_size
    with pytest.raises(N6Error, match=problem) as e:
        parse_size(text, "RELOC_FLASH_SIZE", allow_none=True)
    assert str(e.value).startswith("RELOC_FLASH_SIZE: ") and "(fix: " in str(e.value)


def test_sizes_none_only_where_allowed():
    from n6.sizes import format_size, parse_size
    with pytest.raises(N6Error, match="not allowed"):
        parse_size("none", "flash.size")
    assert [format_size(n) for n in (8 << 20, 640 << 10, 4660, None)] == ["8M", "640K", "4660", "none"]


def test_stale_outputs_spare_steps_declared_only_on_request():
    """A flash or run step exists only when asked for: its records are not stale in a plain
    build, but are once their model is gone or their folder gets other outputs."""
    from n6.outputs import stale_outputs
    previous = {"kws/network_rel.bin", "kws/network_rel_params.bin", "kws/flash/on_board.json",
                "old/network_rel.bin", "old/flash/on_board.json", "kws/st_ai_output/network_ecblobs.h",
                "kws/st_ai_output/network.c", "broken/network_rel.bin"}
    current = {"kws/network_rel.bin", "kws/st_ai_output/network.c"}
    assert stale_outputs(previous, current, keep=["broken"]) == [
        "kws/network_rel_params.bin", "kws/st_ai_output/network_ecblobs.h", "old/flash", "old/flash/on_board.json",
        "old/network_rel.bin", "old/profile", "old/run"]           # a gone model's board-step folders whole
    assert stale_outputs(previous, current | {"kws/flash/flash.json"}, keep=["broken"])[0] == \
        "kws/flash/on_board.json"


def test_pruning_keeps_the_folders_the_build_writes_into(tmp_path):
    """Every file of a folder renamed (another image name): the files go, the folder stays (SCons
    knows it exists and would not make it again before compiling into it); a gone model's folder
    goes whole."""
    import json
    from n6.outputs import MANIFEST, prune
    old = ["m/reloc/obj/network_reloc.o", "m/network_rel.bin", "gone/reloc/obj/network_reloc.o"]
    for rel in old:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(b"")
    (tmp_path / MANIFEST).write_text(json.dumps(old))
    removed = prune(str(tmp_path), ["m/reloc/obj/tiny_reloc.o", "m/tiny_rel.bin"])
    assert sorted(removed) == ["gone/", "m/network_rel.bin", "m/reloc/obj/network_reloc.o"]
    assert (tmp_path / "m" / "reloc" / "obj").is_dir() and not (tmp_path / "gone").exists()


def test_lock_file_names_its_holder_over_a_longer_one(tmp_path):
    """The lock file is written over in place, never truncated (a truncate costs every build a
    journal commit): the pid is padded so that what a waiting build shows is the holder's alone."""
    from n6.outputs import FileLock
    path = tmp_path / ".lock"
    path.write_text("99999999999999\n")
    lock = FileLock(str(path), "")
    lock.acquire()
    try:
        assert path.read_text().strip() == str(os.getpid())
    finally:
        lock.release()


@pytest.mark.parametrize("data,problem", [
    (b"\xef\xbb\xbf[flash]\nbase = 1\n", "starts with a byte-order mark"),
    (b"[flash]\nname = \"\xe9\"\n", "is not UTF-8 .byte 0xE9"),
    (b"[flash\n", "malformed board file: "),
])
def test_toml_files_are_checked_like_json(tmp_path, data, problem):
    from n6.tomlfile import read_toml
    path = tmp_path / "b.toml"
    path.write_bytes(data)
    with pytest.raises(N6Error, match=problem) as e:
        read_toml(path, "board file")
    assert str(e.value).startswith(f"{path}: ") and "(fix: " in str(e.value)
    path.write_bytes(b"[flash]\nbase = 0x70000000\n")
    assert read_toml(path, "board file") == {"flash": {"base": 0x70000000}}


@pytest.mark.parametrize("data,problem", [
    (b"\xef\xbb\xbf{}", "starts with a byte-order mark"), (b'{"a": "\xe9"}', "is not UTF-8"),
    (b"[1]", "must hold an object"), (b"{", "malformed model options file: ")])
def test_json_files_encoding_and_shape(tmp_path, data, problem):
    from n6.jsonfile import read_json
    path = tmp_path / "model.json"
    path.write_bytes(data)
    with pytest.raises(N6Error, match=problem):
        read_json(path, "model options file", shape=dict)


def test_profile_options_unknown_and_unbalanced(tmp_path):
    from n6.neural_art_profile import parse_options
    assert parse_options("p.json", "d", "--Os --csv-file x.csv --optimization 3 -O3") == \
        (("--Os", "--csv-file", "x.csv", "--optimization", "3", "-O3"), ())
    for text, problem in (("--Os enable-epoch-controller", "follows --Os, which takes no value"),
                          ('--csv-file "x', "no closing quotation"), ("--csv-file", "needs a value"),
                          (["--Os"], "not a string")):
        with pytest.raises(N6Error, match=problem):
            parse_options("p.json", "d", text)


def test_mpool_overlap_and_32_bit_limit(tmp_path):
    def mpool(*pools):
        return {"memory": {"mempools": [{"fname": f, "name": f, "offset": {"value": hex(o), "magnitude": "BYTES"},
                                         "size": {"value": str(s), "magnitude": "BYTES"}} for f, o, s in pools]}}
    from n6.mpool import parse_mpool
    parse_mpool(mpool(("A", 0x34000000, 0x1000), ("B", 0x34001000, 0x1000)), "m.mpool")   # adjacent is fine
    with pytest.raises(N6Error, match="pools 'A' .* and 'B' .* overlap"):
        parse_mpool(mpool(("A", 0x34000000, 0x1001), ("B", 0x34001000, 0x1000)), "m.mpool")
    with pytest.raises(N6Error, match="beyond the 32-bit address space"):
        parse_mpool(mpool(("A", 0xFFFFF000, 0x1001),), "m.mpool")


def test_atomic_write_removes_what_a_killed_writer_left_only(tmp_path):
    from n6.atomic import write_text
    path = tmp_path / "out.json"
    dead, running = tmp_path / "out.json.tmp999999999", tmp_path / f"out.json.tmp{os.getppid()}"
    dead.write_text("half")
    running.write_text("being written")
    write_text(path, "whole")
    assert path.read_text() == "whole" and not dead.exists() and running.exists()


@pytest.mark.parametrize("unlink_first", [False, True])
def test_atomic_write_renames_into_a_free_name_only_when_asked(tmp_path, monkeypatch, unlink_first):
    """unlink_first: the old file is gone when the rename happens (ext4 then writes nothing to
    disk); a write that fails keeps the old file either way."""
    from n6.atomic import atomic_open
    path, seen = tmp_path / "big.bin", []
    path.write_bytes(b"old")
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (seen.append(os.path.exists(dst)), real(src, dst)))
    with atomic_open(path, unlink_first=unlink_first) as f:
        f.write(b"new")
    assert path.read_bytes() == b"new" and seen == [not unlink_first]
    with pytest.raises(RuntimeError), atomic_open(path, unlink_first=unlink_first) as f:
        f.write(b"half")
        raise RuntimeError
    assert path.read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["big.bin"]


def test_summary_says_why_a_model_did_not_run(tmp_path):
    """Without -k a model not run is one the build stopped before; with -k, one whose steps need a
    step that failed (the build went on)."""
    from n6.run.summary import ModelResult, not_run, summary
    rows = [ModelResult("a", "failed"), not_run("b")]
    stopped, _ = summary("run", rows, str(tmp_path / "s.json"))
    kept, _ = summary("run", rows, str(tmp_path / "s.json"), kept_going=True)
    assert stopped.splitlines()[-1] == "not run: the build stopped at the first failure (`scons -k` goes on with " \
        "the other models)"
    assert kept.splitlines()[-1] == "not run: a step the model needs failed (its error is above)"


@pytest.mark.parametrize("code, fix", [("ENOSPC", "free space on its disk"),
                                       ("EDQUOT", "free space within your disk quota"),
                                       ("EROFS", "make the folder writable"), ("EACCES", "make the folder writable")])
def test_what_the_machine_refuses_names_the_file_a_temporary_was_for_and_the_machines_fix(code, fix):
    import errno
    from n6.errors import machine_error
    e = machine_error(OSError(getattr(errno, code), "refused", "build/m/network_rel.bin.tmp4242"), "build/m")
    assert (e.path, e.problem) == ("build/m/network_rel.bin", "cannot write: refused") and e.fix.startswith(fix)
    assert machine_error(OSError(errno.ENOENT, "gone", "x"), "build/m") is None
