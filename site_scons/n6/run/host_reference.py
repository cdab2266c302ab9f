"""Host reference for a prebuilt stedgeai output folder: its generated C and the simulated
runtime's software kernels compiled with the host compiler, the absolute pools mapped at their
addresses, the .raw initialisers loaded, every epoch's start/end function called in order.
Only CPU epochs run on a host: outputs of the simulated ST Edge AI Core qualify."""
import json
import os
import subprocess
import tempfile

from ..errors import N6Error
from ..stedgeai_install import LL_ATON, PLATFORM, SW_LIB_INC

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RUNTIME = ("ll_sw_integer.c", "ll_sw_float.c", "ll_aton_lib_sw_operators.c", "ecloader.c")

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "ll_aton_NN_interface.h"

const EpochBlock_ItemTypeDef *LL_ATON_EpochBlockItems_@(void);
const LL_Buffer_InfoTypeDef *LL_ATON_Input_Buffers_Info_@(void);
const LL_Buffer_InfoTypeDef *LL_ATON_Output_Buffers_Info_@(void);
bool LL_ATON_EC_Network_Init_@(void);
bool LL_ATON_EC_Inference_Init_@(void);
void LL_ATON_Cache_MCU_Clean_Range(uintptr_t a, uint32_t n) { (void)a; (void)n; }
void LL_ATON_Cache_MCU_Invalidate_Range(uintptr_t a, uint32_t n) { (void)a; (void)n; }
void LL_ATON_Cache_MCU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { (void)a; (void)n; }
void LL_ATON_Cache_NPU_Clean_Range(uintptr_t a, uint32_t n) { (void)a; (void)n; }
void LL_ATON_Cache_NPU_Clean_Invalidate_Range(uintptr_t a, uint32_t n) { (void)a; (void)n; }
%(pools)s

static void io(const char *path, unsigned char *buf, size_t n, int out)
{
  FILE *f = fopen(path, out ? "wb" : "rb");
  if (!f || (out ? fwrite(buf, 1, n, f) : fread(buf, 1, n, f)) != n) { perror(path); exit(2); }
  fclose(f);
}

static void map(uintptr_t at, size_t n)
{
  if (mmap((void *)at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) ==
      MAP_FAILED) { perror("mmap"); exit(3); }
}

int main(int argc, char **argv)
{
  (void)argc;
%(setup)s
  LL_ATON_EC_Network_Init_@();
  int arg = 1;
  for (const LL_Buffer_InfoTypeDef *b = LL_ATON_Input_Buffers_Info_@(); b->name; b++)
    if (!b->is_param) io(argv[arg++], b->addr_base.p + b->offset_start, b->offset_end - b->offset_start, 0);
  LL_ATON_EC_Inference_Init_@();
  for (const EpochBlock_ItemTypeDef *eb = LL_ATON_EpochBlockItems_@(); !(eb->flags & EpochBlock_Flags_last_eb); eb++) {
    if (eb->start_epoch_block) eb->start_epoch_block(eb);
    if (eb->end_epoch_block) eb->end_epoch_block(eb);
  }
  for (const LL_Buffer_InfoTypeDef *b = LL_ATON_Output_Buffers_Info_@(); b->name; b++)
    if (!b->is_param) io(argv[arg++], b->addr_base.p + b->offset_start, b->offset_end - b->offset_start, 1);
  return 0;
}
"""


def build(folder, install_root, workdir, stem="network"):
    """Compile the host reference of the generated C in `folder`; returns the executable."""
    info_path = os.path.join(folder, f"{stem}_c_info.json")
    with open(info_path) as f:
        info = json.load(f)
    with open(os.path.join(folder, f"{stem}.c")) as f:
        source = f.read()
    sym = info["environment"]["generated_model"]["name"]
    pools, setup = [], []
    for p in info["memory_pools"]:
        addr, size = int(p["address"]), max(int(p["used_size_bytes"]), 1)
        label = f"_mem_pool_{p['fname'].split('.')[1]}_{sym}"
        if label in source:                      # relative pool: the program's own array
            pools.append(f"unsigned char {label}[{size}];")
            base = label
        else:
            setup.append(f"  map(0x{addr:x}UL, {(size + 0xFFFF) & ~0xFFFF});")
            base = f"(unsigned char *)0x{addr:x}UL"
        raw = os.path.join(folder, f"{stem}_{p['fname']}")
        if os.path.exists(raw):
            setup.append(f'  io("{raw}", {base}, {os.path.getsize(raw)}, 0);')
    main = os.path.join(workdir, "host_main.c")
    with open(main, "w") as f:
        f.write((MAIN % {"pools": "\n".join(pools), "setup": "\n".join(setup)}).replace("@", sym))
    rt = os.path.join(install_root, LL_ATON)
    srcs = [main, os.path.join(folder, f"{stem}.c")] + [os.path.join(rt, s) for s in RUNTIME] + \
        [os.path.join(ROOT, "sim", "stedgeai", "runtime_lib", "nr_kernels.c")]
    missing = [s for s in srcs if not os.path.exists(s)]
    if missing:
        raise N6Error(missing[0], "missing: the host reference needs the simulated ST Edge AI Core's runtime",
                      "validate prebuilt folders with the simulated tool (no STEDGEAI_CORE_DIR)")
    exe = os.path.join(workdir, "host_reference")
    proc = subprocess.run(["gcc", "-O1", "-std=gnu99", "-DLL_ATON_EB_DBG_INFO", f"-I{rt}",
                           f"-I{os.path.join(install_root, SW_LIB_INC)}", f"-I{os.path.join(install_root, PLATFORM)}",
                           f"-I{folder}", *srcs,
                           "-o", exe], capture_output=True, text=True)
    if proc.returncode:
        first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:200])
        raise N6Error(os.path.join(folder, f"{stem}.c"), f"host build failed: {first}",
                      "is this an output of the simulated ST Edge AI Core?")
    return exe


def run(folder, install_root, inputs, n_outputs, stem="network"):
    """Outputs (one list of raw buffers per run) of the host reference on `inputs`."""
    with tempfile.TemporaryDirectory(prefix="n6-host-ref-") as tmp:
        exe = build(folder, install_root, tmp, stem)
        results = []
        for bufs in inputs:
            ins = []
            for i, data in enumerate(bufs):
                ins.append(os.path.join(tmp, f"in{i}.bin"))
                with open(ins[-1], "wb") as f:
                    f.write(data)
            outs = [os.path.join(tmp, f"out{j}.bin") for j in range(n_outputs)]
            proc = subprocess.run([exe, *ins, *outs], capture_output=True, text=True)
            if proc.returncode:
                raise N6Error(folder, f"host reference failed ({proc.returncode}): {proc.stderr.strip()[:200]}")
            results.append([open(o, "rb").read() for o in outs])
        return results
