"""The .mpool reader on the facts of ST's own files: a size-0 pool is a memory not to use, both
spellings ST writes (2.x snake_case, 3.x camelCase) mean the same, every field is kept."""
import json

import pytest

from n6.errors import N6Error
from n6.mpool import parse_mpool
from n6.placement import activation_pools, params_pool


def _pool(fname, offset, size, magnitude="KBYTES", fformat="FORMAT_RAW", mode=None, **prop):
    p = {"fname": fname, "name": fname.lower(), "fformat": fformat, "prop": dict({"rights": "ACC_WRITE"}, **prop),
         "offset": {"value": str(offset), "magnitude": "BYTES"}, "size": {"value": str(size), "magnitude": magnitude}}
    if mode:
        p["mode"] = mode
    return p


def _mpool(*pools, **memory):
    return {"memory": dict({"mempools": list(pools)}, **memory)}


def test_a_size_0_pool_is_kept_but_never_used():
    """ST's stm32n6.mpool lists flexMEM and cpuRAM1 with size 0, at addresses inside other pools' ranges."""
    m = parse_mpool(_mpool(_pool("AXIFLEXMEM", 0x34000000, 0), _pool("AXISRAM2", 0x34000000, 1024),
                           _pool("xSPI2", 0x70000000, 0, rights="ACC_READ", constants_preferred="true")), "p.mpool")
    assert [p.fname for p in m.pools] == ["AXIFLEXMEM", "AXISRAM2", "xSPI2"]     # ids as in the file
    assert [p.usable for p in m.pools] == [False, True, False]
    assert params_pool(m).fname == "AXISRAM2"                   # the preferred pool has no room
    assert [p.fname for p in activation_pools(m)] == ["AXISRAM2"]


def test_a_negative_size_is_refused():
    with pytest.raises(N6Error, match="pool 'A': size is -1024"):
        parse_mpool(_mpool(_pool("A", 0x34000000, -1)), "p.mpool")


def test_both_spellings_of_st_keys_mean_the_same():
    snake = parse_mpool(_mpool(_pool("xSPI2", 0x70000000, 16, rights="ACC_READ", constants_preferred="true",
                                     read_power=110, write_power=400), mem_file_prefix="buf"), "a.mpool")
    camel = parse_mpool(_mpool(_pool("xSPI2", 0x70000000, 16, rights="ACC_READ", constantsPreferred=True,
                                     readPower=110, writePower=400), memFilePrefix="buf"), "b.mpool")
    assert snake.pools == camel.pools and snake.mem_file_prefix == camel.mem_file_prefix == "buf"
    assert camel.pools[0].constants_preferred and camel.pools[0].read_power == 110.0


def test_every_field_st_writes_is_taken_and_those_the_build_uses_are_read():
    data = _mpool(_pool("xSPI1", 0x90000000, 16, mode="USEMODE_RELATIVE", burstMaxLength=64, burstPenalty=3,
                        pipelined="PIPELINED_OFF", byteWidth=2, freqRatio=5, cacheable="CACHEABLE_ON"),
                  cacheinfo=[{"nlines": 512, "linesize": 64, "associativity": 8, "bypassEnable": 0}])
    data["memory"]["mempools"][0]["busNode"] = 1
    data["params"] = {"param": [{"paramname": "max_onchip_sram_size", "value": "1024", "magnitude": "KBYTES"}]}
    m = parse_mpool(data, "p.mpool")
    p = m.pools[0]
    assert (p.burst_max_length, p.burst_penalty, p.pipelined, p.byte_width, p.freq_ratio, p.cacheable,
            p.relative) == (64, 3, False, 2, 5.0, True, True)


def test_a_format_c_pool_is_not_memory():
    """ST 3.x's epoch-controller params pool: FORMAT_C, offset 0, size 2^63 - 32 bytes."""
    m = parse_mpool(_mpool(_pool("AXISRAM2", 0x34100000, 1024),
                           _pool("params", 0, 9223372036854775776, "BYTES", "FORMAT_C", "USEMODE_RELATIVE",
                                 rights="ACC_READ")), "p.mpool")
    assert not m.pools[1].usable and params_pool(m).fname == "AXISRAM2"


def test_a_pipelined_typo_names_the_words():
    with pytest.raises(N6Error, match='"PIPELINED_ON" or "PIPELINED_OFF"'):
        parse_mpool(_mpool(_pool("A", 0x34000000, 1, pipelined="ON")), "p.mpool")


def test_a_size_0_pool_holds_no_buffer_of_a_generated_model(stedgeai, tmp_path):
    """The simulated tool keeps the pool's id and lists it in c_info, empty (as ST's c_info does)."""
    from conftest import MODELS
    data = json.load(open(f"{MODELS}/kws_mlp/kws_mlp.mpool"))
    data["memory"]["mempools"].insert(0, _pool("AXIFLEXMEM", 0x34000000, 0))
    (tmp_path / "p.mpool").write_text(json.dumps(data))
    (tmp_path / "p.json").write_text(json.dumps({"Profiles": {"default": {"memory_pool": "./p.mpool",
                                                                          "options": "--optimization 3"}}}))
    proc = stedgeai().generate("kws_mlp", tmp_path / "o", profile_file=str(tmp_path / "p.json"))
    assert proc.returncode == 0, proc.stderr
    info = json.load(open(tmp_path / "o" / "network_c_info.json"))
    first = info["memory_pools"][0]
    assert (first["id"], first["name"], first["size_bytes"], first["buffers"]) == (1, "axiflexmem", 0, [])
    assert all(b["mpool_id"] != 1 for b in info["buffers"])


def test_a_refused_mpool_is_named_for_any_target_of_its_model(tmp_path):
    """`scons build/<model>/network_rel.bin` of a model whose .mpool is refused: the file's one
    line, not SCons's "Do not know how to make"."""
    import shutil

    from conftest import MODELS, copy_repo, scons
    repo = copy_repo(tmp_path / "repo")
    folder = repo / "models" / "bad_pools"
    folder.mkdir()
    for f in ("model.onnx", "neural_art.json"):
        shutil.copyfile(f"{MODELS}/kws_mlp/{f}", folder / f)
    data = json.load(open(f"{MODELS}/kws_mlp/kws_mlp.mpool"))
    data["memory"]["mempools"][0]["size"] = {"value": "-1", "magnitude": "KBYTES"}
    (folder / "kws_mlp.mpool").write_text(json.dumps(data))
    for target in ("build/bad_pools/network_rel.bin", "build/bad_pools/st_ai_output/network.c"):
        proc = scons(repo, target, check=False)
        assert proc.returncode != 0
        assert "Do not know how to make" not in proc.stdout + proc.stderr
        assert f"scons: *** [{target}] models/bad_pools/kws_mlp.mpool: pool '" in proc.stderr
        assert "size is -1024" in proc.stderr and "Traceback" not in proc.stderr
