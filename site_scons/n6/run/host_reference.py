"""Host reference for a prebuilt stedgeai output folder: its generated C and the simulated
runtime's software kernels compiled with the host compiler, the absolute pools mapped at their
addresses, the .raw initialisers loaded, every epoch's start/end function called in order.
Only CPU epochs run on a host: outputs of the simulated ST Edge AI Core qualify."""
import atexit
import functools
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence

from ..errors import N6Error
from ..paths import SIM_STEDGEAI
from ..stedgeai_install import LL_ATON, PLATFORM, SIMULATED_RUNTIME_SOURCES, SW_LIB_INC

# The simulated runtime's software sources (its ll_aton.c and ll_aton_util.c drive the NPU: not on a host).
RUNTIME = tuple(s for s in SIMULATED_RUNTIME_SOURCES if s not in ("ll_aton.c", "ll_aton_util.c"))

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static unsigned char *slurp(const char *path, size_t *n)
{
  FILE *f = fopen(path, "rb");
  unsigned char *buf = NULL;
  long len = -1;
  if (f && !fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && (buf = malloc((size_t)len + 1)) &&
      !fseek(f, 0, SEEK_SET))
    *n = fread(buf, 1, (size_t)len, f);
  if (!f || !buf) { perror(path); exit(2); }
  fclose(f);
  return buf;
}

static void map(uintptr_t at, size_t n)
{
  if (mmap((void *)at, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) ==
      MAP_FAILED) { perror("mmap"); exit(3); }
}

static void load(const char *path, unsigned char *at)
{
  size_t n;
  unsigned char *data = slurp(path, &n);
  memcpy(at, data, n);
  free(data);
}

/* argv: one file per input (its samples back to back), then one file per output (written). */
int main(int argc, char **argv)
{
  (void)argc;
%(setup)s
  LL_ATON_EC_Network_Init_@();
  const LL_Buffer_InfoTypeDef *ins[16], *outs[16];
  unsigned char *data[16];
  size_t size[16], n_in = 0, n_out = 0, samples = 0;
  for (const LL_Buffer_InfoTypeDef *b = LL_ATON_Input_Buffers_Info_@(); b->name; b++)
    if (!b->is_param && n_in < 16) {
      ins[n_in] = b;
      data[n_in] = slurp(argv[1 + n_in], &size[n_in]);
      samples = size[n_in] / (b->offset_end - b->offset_start);
      n_in++;
    }
  for (const LL_Buffer_InfoTypeDef *b = LL_ATON_Output_Buffers_Info_@(); b->name; b++)
    if (!b->is_param && n_out < 16) outs[n_out++] = b;
  FILE *files[16];
  for (size_t j = 0; j < n_out; j++)
    if (!(files[j] = fopen(argv[1 + n_in + j], "wb"))) { perror(argv[1 + n_in + j]); return 2; }
  for (size_t s = 0; s < samples; s++) {
    for (size_t i = 0; i < n_in; i++) {
      size_t len = ins[i]->offset_end - ins[i]->offset_start;
      memcpy(ins[i]->addr_base.p + ins[i]->offset_start, data[i] + s * len, len);
    }
    LL_ATON_EC_Inference_Init_@();
    for (const EpochBlock_ItemTypeDef *eb = LL_ATON_EpochBlockItems_@();
         !(eb->flags & EpochBlock_Flags_last_eb); eb++) {
      if (eb->start_epoch_block) eb->start_epoch_block(eb);
      if (eb->end_epoch_block) eb->end_epoch_block(eb);
    }
    for (size_t j = 0; j < n_out; j++)
      fwrite(outs[j]->addr_base.p + outs[j]->offset_start, 1, outs[j]->offset_end - outs[j]->offset_start, files[j]);
  }
  for (size_t j = 0; j < n_out; j++)
    fclose(files[j]);
  return 0;
}
"""


def build(folder: str, install_root: str, workdir: str, stem: str = "network") -> str:
    """Compile the host reference of the generated C in `folder`; returns the executable."""
    info_path = os.path.join(folder, f"{stem}_c_info.json")
    if not os.path.exists(info_path):
        raise N6Error(info_path, "not found: the host reference of a prebuilt network needs its memory pools",
                      "copy the c_info.json stedgeai wrote next to network.c")
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
            setup.append(f'  load("{raw}", {base});')
    main = os.path.join(workdir, "host_main.c")
    with open(main, "w") as f:
        f.write((MAIN % {"pools": "\n".join(pools), "setup": "\n".join(setup)}).replace("@", sym))
    srcs = [main, os.path.join(folder, f"{stem}.c")]
    missing = [x for x in srcs + _runtime_sources(install_root) if not os.path.exists(x)]
    if missing:
        raise N6Error(missing[0], "missing: the host reference needs the simulated ST Edge AI Core's runtime",
                      "validate prebuilt folders with the simulated tool (no STEDGEAI_CORE_DIR)")
    exe = os.path.join(workdir, "host_reference")
    _gcc(os.path.join(folder, f"{stem}.c"), *_flags(install_root), f"-I{folder}", *srcs,
         _runtime_archive(install_root), "-o", exe)
    return exe


def _runtime_sources(install_root: str) -> list[str]:
    rt = os.path.join(install_root, LL_ATON)
    return [os.path.join(rt, x) for x in RUNTIME] + [os.path.join(SIM_STEDGEAI, "runtime_lib", "nr_kernels.c")]


def _flags(install_root: str) -> list[str]:
    return ["-O1", "-std=gnu99", "-DLL_ATON_EB_DBG_INFO", f"-I{os.path.join(install_root, LL_ATON)}",
            f"-I{os.path.join(install_root, SW_LIB_INC)}", f"-I{os.path.join(install_root, PLATFORM)}"]


def _gcc(blame: str, *args: str) -> None:
    proc = subprocess.run(["gcc", *args], capture_output=True, text=True)
    if proc.returncode:
        first = next((line for line in proc.stderr.splitlines() if "error" in line), proc.stderr.strip()[:200])
        raise N6Error(blame, f"host build failed: {first}", "is this an output of the simulated ST Edge AI Core?")


@functools.cache
def _runtime_archive(install_root: str) -> str:
    """The install's software kernels as one host archive, compiled once per process."""
    work = tempfile.mkdtemp(prefix="n6-host-runtime-")
    atexit.register(shutil.rmtree, work, True)
    objs = []
    for src in _runtime_sources(install_root):
        objs.append(os.path.join(work, os.path.basename(src)[:-2] + ".o"))
        _gcc(src, *_flags(install_root), "-c", src, "-o", objs[-1])
    lib = os.path.join(work, "libhostruntime.a")
    subprocess.run(["ar", "rcs", lib, *objs], check=True, capture_output=True)
    return lib


def execute(exe: str, workdir: str, inputs: Sequence[bytes], n_outputs: int) -> list[bytes]:
    """Run a built host reference: `inputs` one bytes per model input (any number of samples back
    to back); returns one bytes per output (the samples' outputs back to back)."""
    ins: list[str] = []
    for i, data in enumerate(inputs):
        ins.append(os.path.join(workdir, f"in{i}.bin"))
        with open(ins[-1], "wb") as f:
            f.write(bytes(data))
    outs = [os.path.join(workdir, f"out{j}.bin") for j in range(n_outputs)]
    proc = subprocess.run([exe, *ins, *outs], capture_output=True, text=True)
    if proc.returncode:
        raise N6Error(exe, f"host reference failed ({proc.returncode}): {proc.stderr.strip()[:200]}")
    out = []
    for path in outs:
        with open(path, "rb") as f:
            out.append(f.read())
    return out


def run(folder: str, install_root: str, inputs: Sequence[Sequence[bytes]], n_outputs: int,
        stem: str = "network") -> list[list[bytes]]:
    """Outputs (one list of raw buffers per run) of the host reference on `inputs` (one list of raw
    buffers per run): one build, one process for all runs."""
    with tempfile.TemporaryDirectory(prefix="n6-host-ref-") as tmp:
        exe = build(folder, install_root, tmp, stem)
        joined = execute(exe, tmp, [b"".join(run[i] for run in inputs) for i in range(len(inputs[0]))], n_outputs)
        return [[out[len(out) // len(inputs) * r:len(out) // len(inputs) * (r + 1)] for out in joined]
                for r in range(len(inputs))]
