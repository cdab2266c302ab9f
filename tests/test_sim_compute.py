"""The generated code computes the model: network.c + the simulated runtime, built with the host
compiler, run on memory mapped at the pools' addresses, agree with ONNX's reference evaluator."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx.reference import ReferenceEvaluator

from n6.stedgeai_install import PLATFORM

from conftest import BUNDLED, MODELS, ROOT

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "ll_aton_NN_interface.h"

const EpochBlock_ItemTypeDef *LL_ATON_EpochBlockItems_%(sym)s(void);
const LL_Buffer_InfoTypeDef *LL_ATON_Input_Buffers_Info_%(sym)s(void);
const LL_Buffer_InfoTypeDef *LL_ATON_Output_Buffers_Info_%(sym)s(void);
bool LL_ATON_EC_Network_Init_%(sym)s(void);
void LL_ATON_Cache_MCU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { (void)a; (void)n; }
%(labels)s

static void load(const char *path, unsigned char *dst)
{
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  size_t n = fread(dst, 1, 1u << 30, f);
  (void)n;
  fclose(f);
}

int main(int argc, char **argv)
{
  (void)argc;
%(maps)s
%(raws)s
  const LL_Buffer_InfoTypeDef *in = LL_ATON_Input_Buffers_Info_%(sym)s();
  const LL_Buffer_InfoTypeDef *out = LL_ATON_Output_Buffers_Info_%(sym)s();
  load(argv[1], in->addr_base.p + in->offset_start);
  LL_ATON_EC_Network_Init_%(sym)s();
  for (const EpochBlock_ItemTypeDef *eb = LL_ATON_EpochBlockItems_%(sym)s(); !(eb->flags & EpochBlock_Flags_last_eb); eb++) {
    if (eb->start_epoch_block) eb->start_epoch_block(eb);
    if (eb->end_epoch_block) eb->end_epoch_block(eb);
  }
  fwrite(out->addr_base.p + out->offset_start, 1, out->offset_end - out->offset_start, stdout);
  return 0;
}
"""


def _build(out, install, tmp_path):
    info = json.load(open(os.path.join(out, "network_c_info.json")))
    sym = info["environment"]["generated_model"]["name"]
    labels, maps, raws = [], [], []
    for p in info["memory_pools"]:
        addr, size = int(p["address"]), p["used_size_bytes"]
        raw = os.path.join(out, "network_" + p["fname"])
        relative = f"_mem_pool_{p['fname'].split('.')[1]}_{sym}"
        if relative in open(os.path.join(out, "network.c")).read():
            labels.append(f"unsigned char {relative}[{max(size, 1)}];")
            base = relative
        else:
            length = (size + 0xFFFF) // 0x10000 * 0x10000 or 0x10000
            maps.append(f"  if (mmap((void *)0x{addr:x}UL, {length}, PROT_READ | PROT_WRITE, "
                        f"MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED) "
                        f"{{ perror(\"mmap\"); return 3; }}")
            base = f"(unsigned char *)0x{addr:x}UL"
        if os.path.exists(raw):
            raws.append(f'  load("{raw}", {base});')
    harness = tmp_path / "harness.c"
    harness.write_text(HARNESS % {"sym": sym, "labels": "\n".join(labels), "maps": "\n".join(maps),
                                  "raws": "\n".join(raws)})
    rt = os.path.join(install, "Middlewares", "ST", "AI", "Npu", "ll_aton")
    srcs = [str(harness), os.path.join(out, "network.c")] + [os.path.join(rt, f) for f in (
        "ll_sw_integer.c", "ll_sw_float.c", "ll_aton_lib_sw_operators.c", "ecloader.c")] + \
        [os.path.join(ROOT, "sim", "stedgeai", "runtime_lib", "nr_kernels.c")]
    exe = tmp_path / "net"
    subprocess.run(["gcc", "-O1", "-std=gnu99", "-DLL_ATON_EB_DBG_INFO", f"-I{rt}",
                    f"-I{os.path.join(install, 'Middlewares', 'ST', 'AI', 'Inc')}",
                    f"-I{os.path.join(install, PLATFORM)}", f"-I{out}", *srcs, "-o", str(exe)],
                   check=True, capture_output=True)
    return exe, info


@pytest.mark.parametrize("model", BUNDLED)
def test_generated_code_matches_the_onnx_reference(generated, sim_install, tmp_path, model):
    out = generated(model)
    exe, info = _build(out, sim_install("2.2"), tmp_path)
    (inp,), (outp,) = info["graphs"][0]["original_inputs"], info["graphs"][0]["original_outputs"]
    qin, qout = inp["data_format"], outp["data_format"]
    rng = np.random.default_rng(7)
    for trial in range(3):
        x = rng.standard_normal(inp["shape"]).astype(np.float32)
        xq = np.clip(np.round(x / qin["scale"]) + qin["zero"], -128, 127).astype(np.int8)
        if len(inp["shape"]) == 4:   # the network's input buffer is channel-last
            feed = xq.transpose(0, 2, 3, 1)
        else:
            feed = xq
        (tmp_path / "in.bin").write_bytes(np.ascontiguousarray(feed).tobytes())
        got = np.frombuffer(subprocess.run([str(exe), str(tmp_path / "in.bin")], capture_output=True,
                                           check=True).stdout, np.int8)
        ref = ReferenceEvaluator(onnx.load(os.path.join(MODELS, model, "model.onnx")))
        y = ref.run(None, {"input": ((xq.astype(np.float32) - qin["zero"]) * qin["scale"]).astype(np.float32)})[0]
        want = np.clip(np.round(y / qout["scale"]) + qout["zero"], -128, 127).reshape(-1)
        assert got.shape == want.shape
        assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 2, (trial, got, want)
        assert np.argmax(got) == np.argmax(want)


def test_float_input_and_uint8_output_conversions(stedgeai, sim_install, tmp_path):
    """--input-data-type float32 / --output-data-type uint8 add convert epochs at the boundary."""
    out = tmp_path / "st_ai_output"
    proc = stedgeai().generate("kws_mlp", out, "--input-data-type", "float32", "--output-data-type", "uint8")
    assert proc.returncode == 0, proc.stderr
    text = open(out / "network.c").read()
    assert "LL_SW_CONVERT_FLOAT_TO_INT8" in text and "LL_SW_CONVERT_INT8_TO_UINT8" in text
    exe, info = _build(str(out), sim_install("2.2"), tmp_path)
    (inp,), (outp,) = info["graphs"][0]["original_inputs"], info["graphs"][0]["original_outputs"]
    assert (inp["data_format"]["type"], outp["data_format"]["type"]) == ("float32", "uint8")
    x = np.random.default_rng(3).standard_normal(inp["shape"]).astype(np.float32)
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    got = np.frombuffer(subprocess.run([str(exe), str(tmp_path / "in.bin")], capture_output=True,
                                       check=True).stdout, np.uint8)
    ref = ReferenceEvaluator(onnx.load(os.path.join(MODELS, "kws_mlp", "model.onnx")))
    y = ref.run(None, {"input": x})[0]
    q = outp["data_format"]
    want = np.clip(np.round(y / q["scale"]) + q["zero"], 0, 255).reshape(-1)
    assert np.max(np.abs(got.astype(int) - want.astype(int))) <= 2 and np.argmax(got) == np.argmax(want)
