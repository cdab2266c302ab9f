"""Host build of generated code: network.c + the simulated runtime compiled with the host gcc,
run on memory mapped at the pools' addresses; input bytes in, output bytes out."""
import functools
import json
import os
import subprocess
import tempfile

import numpy as np

from n6.stedgeai_install import PLATFORM

from conftest import ROOT

HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static unsigned char samples[1u << 24];

int main(int argc, char **argv)
{
  (void)argc;
%(maps)s
%(raws)s
  const LL_Buffer_InfoTypeDef *in = LL_ATON_Input_Buffers_Info_%(sym)s();
  const LL_Buffer_InfoTypeDef *out = LL_ATON_Output_Buffers_Info_%(sym)s();
  FILE *f = fopen(argv[1], "rb");   /* one or more inputs, back to back */
  if (!f) { perror(argv[1]); return 2; }
  size_t total = fread(samples, 1, sizeof samples, f), size = in->offset_end - in->offset_start;
  fclose(f);
  LL_ATON_EC_Network_Init_%(sym)s();
  for (size_t at = 0; at + size <= total; at += size) {
    memcpy(in->addr_base.p + in->offset_start, samples + at, size);
    for (const EpochBlock_ItemTypeDef *eb = LL_ATON_EpochBlockItems_%(sym)s(); !(eb->flags & EpochBlock_Flags_last_eb); eb++) {
      if (eb->start_epoch_block) eb->start_epoch_block(eb);
      if (eb->end_epoch_block) eb->end_epoch_block(eb);
    }
    fwrite(out->addr_base.p + out->offset_start, 1, out->offset_end - out->offset_start, stdout);
  }
  return 0;
}
"""


def generate(model, out, profile_file):
    """`stedgeai generate` run in this process through the CLI's own entry point (no interpreter
    start per model); the default release, install paths as outside an install."""
    from stedgeai_sim.cli import run as stedgeai_cli
    assert stedgeai_cli(["generate", "-m", str(model), "--target", "stm32n6", "--st-neural-art",
                         f"default@{profile_file}", "-o", str(out), "-w", str(out) + "_ws"]) == 0
    return str(out)


def _flags(install, out=None):
    rt = os.path.join(install, "Middlewares", "ST", "AI", "Npu", "ll_aton")
    return ["-std=gnu99", "-DLL_ATON_EB_DBG_INFO", f"-I{rt}", f"-I{os.path.join(install, 'Middlewares', 'ST', 'AI', 'Inc')}",
            f"-I{os.path.join(install, PLATFORM)}"] + ([f"-I{out}"] if out else [])


@functools.cache
def _runtime(install):
    """The install's software kernels as one host archive, compiled once per test session."""
    rt = os.path.join(install, "Middlewares", "ST", "AI", "Npu", "ll_aton")
    srcs = [os.path.join(rt, f) for f in ("ll_sw_integer.c", "ll_sw_float.c", "ll_aton_lib_sw_operators.c",
                                          "ecloader.c")] + [os.path.join(ROOT, "sim", "stedgeai", "runtime_lib",
                                                                         "nr_kernels.c")]
    work = tempfile.mkdtemp(prefix="host-runtime-", dir=install)
    objs = [os.path.join(work, os.path.basename(src)[:-2] + ".o") for src in srcs]
    for src, obj in zip(srcs, objs):
        subprocess.run(["gcc", "-O1", "-c", *_flags(install), src, "-o", obj], check=True, capture_output=True)
    lib = os.path.join(work, "libhostruntime.a")
    subprocess.run(["ar", "rcs", lib, *objs], check=True, capture_output=True)
    return lib


def build(out, install, tmp_path):
    """Compile the generated folder `out` with the runtime of the install; (executable, c_info)."""
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
    exe = tmp_path / "net"
    subprocess.run(["gcc", "-O1", *_flags(install, out), str(harness), os.path.join(out, "network.c"),
                    _runtime(install), "-o", str(exe)], check=True, capture_output=True)
    return exe, info


def run(exe, tmp_path, feed):
    """Run the host build on one input buffer (bytes in the network's memory layout)."""
    path = tmp_path / "in.bin"
    path.write_bytes(np.ascontiguousarray(feed).tobytes())
    return subprocess.run([str(exe), str(path)], capture_output=True, check=True).stdout
