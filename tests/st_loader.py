"""Test peer: ST's relocatable-model loader (`ll_aton_reloc_network.c` of a real install) built for
the host, to judge images as the firmware would. Nothing of ST's is copied: its source is compiled
as it is, from the install, with a forced prelude of defines and a harness of ours.

How the host stands in for the Cortex-M55 (the image's words are 32-bit addresses, so the program
is 32-bit, `gcc -m32`):
- `-fshort-enums`: the AAPCS enum sizes of arm-none-eabi, so ST's C-struct size check sees the
  firmware's `sizeof(LL_Buffer_InfoTypeDef)`;
- the two ARM inline-assembly spots (the naked `call_with_r9` trampoline and the r9 swap around
  epoch callbacks, neither used by an install) become empty statements through the prelude;
- CPUID (0xE000ED00) and CPACR (0xE000ED88) are a page mapped at their address holding the
  board's part number and FPU access bits; secure, debug-info and async firmware are ST's own
  compile-time switches;
- the image, its split params, the exec RAM and external RAM the loader asks for and every COPY or
  RESET pool are mapped at fixed addresses, each ending on a page boundary (to within the 8-byte
  alignment the loader needs) with the next page unmapped: any access outside them faults, and the
  verdict is "crash". Image and params are read-only;
- the platform headers are those the install ships for compiling relocatable models off-target
  (scripts/N6_reloc/resources/platform/stm32n6); the runtime functions the loader's callback
  table names are stubs that trap (an install calls none).
Each verdict comes from its own process."""
import os
import re
import subprocess
from dataclasses import dataclass, field

from n6 import gcc_flags
from n6.reloc.check import Config

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
LL_ATON = os.path.join("Middlewares", "ST", "AI", "Npu", "ll_aton")
PLATFORM = os.path.join("scripts", "N6_reloc", "resources", "platform", "stm32n6")
SOURCE = os.path.join(LL_ATON, "ll_aton_reloc_network.c")

# Where the harness places things (page-aligned bases; each region is moved up to end on a page).
FILE_BASE, PARAM_BASE, EXEC_BASE, EXT_BASE = 0x7100_0000, 0x7180_0000, 0x3406_0000, 0x9010_0000

PRELUDE = r"""
/* Forced first include of ST's loader on the host: the standard headers first (the keyword macro
   below must not reach them), then the ARM-only asm statements turned into empty statements. */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define __asm__
#define __asm
#define volatile(...) (void)0
"""

# Referenced by the loader's callback table, never called by an install.
STUB_NAMES = ("LL_ATON_LIB_Cast", "LL_ATON_LIB_Concat", "LL_ATON_LIB_DMA_DepthToSpace", "LL_ATON_LIB_DMA_ImageToRow",
              "LL_ATON_LIB_DMA_Outputs_Channel_Split_Aton", "LL_ATON_LIB_DMA_Outputs_Channel_Split_Batched",
              "LL_ATON_LIB_DMA_Outputs_Flat_Copy", "LL_ATON_LIB_DMA_Outputs_Slice_SplitLike",
              "LL_ATON_LIB_DMA_Pad_Filling", "LL_ATON_LIB_DMA_Pad_Memset", "LL_ATON_LIB_DMA_RowToImage",
              "LL_ATON_LIB_DMA_SpaceToDepth", "LL_ATON_LIB_DMA_Transpose", "LL_ATON_LIB_Softmax",
              "mcu_cache_clean_invalidate_range", "mcu_cache_clean_range", "mcu_cache_invalidate_range",
              "npu_cache_clean_invalidate_range", "npu_cache_clean_range", "npu_cache_invalidate")

HARNESS = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ll_aton_reloc_network.h"

#define PAGE 4096u
#define ROUND8(v) (((v) + 7u) & ~7u)
#define OFF(v) ((v) & 0x0FFFFFFFu)

static const char *phase = "setup";
static volatile int probing;   /* a fault while the harness itself looks at the image: skip that step */
static sigjmp_buf probe_env;

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
  (void)ctx;
  if (probing) siglongjmp(probe_env, 1);
  char line[160];
  int n = snprintf(line, sizeof line, "\nN6-VERDICT crash %d addr=0x%08x in=%s\n", sig,
                   (unsigned)(uintptr_t)si->si_addr,
                   phase);
  if (write(1, line, (size_t)n) < 0) _exit(4);
  _exit(3);
}

/* Map [addr, addr + size) page by page; pages already there (another region) are kept. */
static void map(uint32_t addr, uint32_t size, int prot)
{
  uint64_t end = ((uint64_t)addr + size + PAGE - 1) & ~(uint64_t)(PAGE - 1);
  if (!size || end > 0xFFFFF000u) return;   /* beyond the 32-bit space: left unmapped, so it faults */
  for (uint64_t a = addr & ~(PAGE - 1); a < end; a += PAGE)
    if (mmap((void *)(uintptr_t)a, PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED
        && errno != EEXIST) {
      perror("mmap");
      exit(5);
    }
}

/* Where a region of `size` bytes placed in the page span from `base` ends on the span's end. */
static uint32_t place(uint32_t base, uint32_t size)
{
  return (base + ((size + PAGE - 1) & ~(PAGE - 1)) - size) & ~7u;
}

static uint32_t load(const char *path, uint32_t base, unsigned char **out)
{
  FILE *f = path ? fopen(path, "rb") : stdin;
  if (!f) { perror(path); exit(2); }
  size_t cap = 1 << 20, n = 0;
  unsigned char *buf = malloc(cap);
  for (size_t got; (got = fread(buf + n, 1, cap - n, f)) > 0;)
    if ((n += got) == cap) buf = realloc(buf, cap *= 2);
  uint32_t addr = place(base, (uint32_t)n);
  map(addr, (uint32_t)n, PROT_READ | PROT_WRITE);
  memcpy((void *)(uintptr_t)addr, buf, n);
  mprotect((void *)(uintptr_t)(addr & ~(PAGE - 1)), (addr & (PAGE - 1)) + n, PROT_READ);
  free(buf);
  *out = (unsigned char *)(uintptr_t)addr;
  return (uint32_t)n;
}

static uint32_t crc32(const unsigned char *p, uint32_t n)
{
  uint32_t c = 0xFFFFFFFFu;
  while (n--) {
    c ^= *p++;
    for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & -(c & 1));
  }
  return ~c;
}

static const char *name(int code)
{
  switch (code) {
#define NAME(x) case AI_RELOC_RT_ERR_##x: return #x;
  NAME(NONE) NAME(INVALID_BIN) NAME(MEMORY) NAME(NOT_SUPPORTED) NAME(ARG) NAME(INVALID_HDL) NAME(INSTALL)
  NAME(PARAM_ADDR) NAME(PARAM_DESC)
  }
  return "UNKNOWN";
}

/* argv: XIP|COPY exec_size ext_size cpu_part fpu(0|1) [params file]; the image comes on stdin. */
int main(int argc, char **argv)
{
  if (argc < 6) { fprintf(stderr, "usage: %s XIP|COPY exec_size ext_size cpu_part fpu [params]\n", argv[0]); return 2; }
  setvbuf(stdout, NULL, _IONBF, 0);
  struct sigaction sa = {0};
  sa.sa_sigaction = on_fault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigaction(SIGSEGV, &sa, NULL);
  sigaction(SIGBUS, &sa, NULL);
  const int xip = !strcmp(argv[1], "XIP");
  ll_aton_reloc_config cfg = {0};
  cfg.exec_ram_size = (uint32_t)strtoul(argv[2], NULL, 0);
  cfg.ext_ram_size = (uint32_t)strtoul(argv[3], NULL, 0);
  cfg.mode = (xip ? AI_RELOC_RT_LOAD_MODE_XIP : AI_RELOC_RT_LOAD_MODE_COPY) | AI_RELOC_RT_LOAD_MODE_CLEAR;

  map(0xE000E000u, PAGE, PROT_READ | PROT_WRITE);   /* System Control Space: CPUID, CPACR */
  *(volatile uint32_t *)0xE000ED00u = 0x410F0000u | ((uint32_t)strtoul(argv[4], NULL, 0) << 4);
  *(volatile uint32_t *)0xE000ED88u = strtoul(argv[5], NULL, 0) ? 0xFu << 20 : 0;

  unsigned char *image, *params = NULL;
  uint32_t size = load(NULL, FILE_BASE, &image), params_size = 0;
  if (argc > 6) {
    params_size = load(argv[6], PARAM_BASE, &params);
    cfg.ext_param_addr = (uintptr_t)params;
  }
  const uintptr_t file = (uintptr_t)image;
  const uint32_t *words = (const uint32_t *)image;

  /* The RAM the loader asks for: ST's own answer where it has one, else the header's words. */
  ll_aton_reloc_info info = {0};
  uint32_t exec_need = 0;
  probing = 1;
  if (!sigsetjmp(probe_env, 1) && size >= 96) {
    phase = "harness: exec RAM size";
    exec_need = ROUND8(OFF(words[6]));                      /* bss_end */
    if (!xip) exec_need += ROUND8(OFF(words[4]));           /* data_data: the RO part */
    phase = "harness: get_info";
    ll_aton_reloc_get_info(file, &info);
  }
  const uint32_t ext_need = info.ext_ram_sz < cfg.ext_ram_size ? info.ext_ram_sz : cfg.ext_ram_size;
  cfg.exec_ram_addr = place(EXEC_BASE, exec_need);
  cfg.ext_ram_addr = place(EXT_BASE, ext_need);
  if (exec_need <= cfg.exec_ram_size) map(cfg.exec_ram_addr, exec_need, PROT_READ | PROT_WRITE);
  map(cfg.ext_ram_addr, ext_need, PROT_READ | PROT_WRITE);
  /* COPY and RESET pools at their destinations; the table is where the loader reads it. */
  if (!sigsetjmp(probe_env, 1) && size >= 96) {
    phase = "harness: pool descriptors";
    const ll_aton_reloc_mem_pool_desc *d =
        (const ll_aton_reloc_mem_pool_desc *)(file + OFF(OFF(words[11]) + OFF(words[4])));
    for (int i = 0; i < 10 && d[i].flags && d[i].name; i++)
      if (AI_RELOC_MPOOL_IS_COPY(d[i].flags) || AI_RELOC_MPOOL_IS_RESET(d[i].flags))
        map(d[i].dst, ROUND8(d[i].size), PROT_READ | PROT_WRITE);
  }
  probing = 0;

  printf("N6-PLACED file=0x%08x size=%u params=0x%08x params_size=%u exec=0x%08x exec_need=%u ext=0x%08x "
         "ext_need=%u\n", (unsigned)file, size, (unsigned)cfg.ext_param_addr, params_size,
         (unsigned)cfg.exec_ram_addr, exec_need, (unsigned)cfg.ext_ram_addr, ext_need);
  static NN_Instance_TypeDef instance;
  phase = "ll_aton_reloc_install";
  int res = ll_aton_reloc_install(file, &cfg, &instance);
  phase = "harness: report";
  if (res) {
    printf("\nN6-VERDICT %s %d\n", name(res), res);
    return 0;
  }
  struct ai_reloc_rt_ctx *rt = (struct ai_reloc_rt_ctx *)instance.exec_state.inst_reloc;
  rt->cbs = NULL;              /* host pointers: not part of what the image describes */
  rt->ll_instance = NULL;
  uint32_t ram = rt->ram_addr, rom = rt->rom_addr, rw = OFF(words[6]), ro = OFF(words[4]);
  printf("\nN6-VERDICT NONE 0 ram=0x%08x rom=0x%08x rw_crc=0x%08x ro_crc=0x%08x\n", ram, rom,
         crc32((const unsigned char *)(uintptr_t)ram, rw), crc32((const unsigned char *)(uintptr_t)rom, ro));
  return 0;
}
"""


def unavailable():
    """Why ST's loader cannot be built here (None when it can)."""
    if not REAL or not os.path.isfile(os.path.join(REAL, "2.2", SOURCE)):
        return "no real ST Edge AI Core test bed (set N6_REAL_STEDGEAI to its folder)"
    return None


@dataclass
class Verdict:
    """ST's answer for one image in one mode: an error name of its header, "NONE", or "crash"."""
    name: str
    log: str
    placed: dict = field(default_factory=dict)   # addresses and sizes the harness used
    installed: dict = field(default_factory=dict)   # on NONE: ram, rom, rw_crc, ro_crc

    @property
    def refused(self):
        return self.name != "NONE"


@dataclass(frozen=True)
class FirmwareBuild:
    """What the host build of the loader is compiled as (ST's compile-time switches)."""
    dbg_info: bool = True
    async_mode: bool = True
    secure: bool = True


class StLoader:
    """One compiled harness (per firmware build); `judge` runs it on an image."""

    def __init__(self, exe, exec_size, ext_size, cpu_part=0xD22, fpu=True):
        self.exe, self.exec_size, self.ext_size, self.cpu_part, self.fpu = exe, exec_size, ext_size, cpu_part, fpu

    def judge(self, image, mode, params_path=None):
        argv = [self.exe, mode, str(self.exec_size), str(self.ext_size), str(self.cpu_part), str(int(self.fpu))]
        proc = subprocess.run(argv + ([params_path] if params_path else []), input=bytes(image),
                              capture_output=True, timeout=60)
        log = proc.stdout.decode("latin-1")
        m = re.search(r"^N6-VERDICT (\S+) (-?\d+)(.*)$", log, re.M)
        if not m:   # a fault the handler could not report, or an abort
            return Verdict("crash", log + proc.stderr.decode("latin-1") + f"\n(exit {proc.returncode})")
        placed = re.search(r"^N6-PLACED (.*)$", log, re.M)
        return Verdict(m.group(1), log.strip() if m.group(1) == "crash" else log[:m.start()].strip(),
                       _fields(placed.group(1)) if placed else {},
                       _fields(m.group(3)) if m.group(1) == "NONE" else {})


def _fields(text):
    return {k: int(v, 0) for k, v in (kv.split("=") for kv in text.split())
            if re.fullmatch(r"0x[0-9a-f]+|\d+", v)}


def build(workdir, firmware=FirmwareBuild(), exec_size=Config.exec_ram_size, ext_size=Config.ext_ram_size,
          cpu_part=0xD22, fpu=True):
    """Compile ST's loader of the test bed and our harness into `workdir`; a StLoader for a board
    with `exec_size` bytes of exec RAM and `ext_size` of external RAM (the checker's defaults)."""
    install = os.path.join(REAL, "2.2")
    os.makedirs(workdir, exist_ok=True)
    defines = [d for d in gcc_flags.DEFINES if not d.startswith("LL_ATON_RT_MODE")]
    defines.append("LL_ATON_RT_MODE=" + ("LL_ATON_RT_ASYNC" if firmware.async_mode else "LL_ATON_RT_POLLING"))
    if firmware.dbg_info:
        defines.append(gcc_flags.DBG_INFO_DEFINE)
    if firmware.secure:
        defines.append("__ARM_FEATURE_CMSE=3U")   # ST's test for a secure (CMSE) build
    flags = ["-m32", "-std=gnu99", "-fshort-enums", "-O1", "-g", "-fno-strict-aliasing", "-w"] + \
        [f"-D{d}" for d in defines] + [f"-I{os.path.join(install, LL_ATON)}", f"-I{os.path.join(install, PLATFORM)}"]
    bases = [f"-D{n}=0x{v:X}u" for n, v in (("FILE_BASE", FILE_BASE), ("PARAM_BASE", PARAM_BASE),
                                             ("EXEC_BASE", EXEC_BASE), ("EXT_BASE", EXT_BASE))]
    files = {"prelude.h": PRELUDE, "harness.c": HARNESS,
             "stubs.c": "".join(f"void {n}(void) {{ __builtin_trap(); }}\n" for n in STUB_NAMES)}
    for name, text in files.items():
        with open(os.path.join(workdir, name), "w") as f:
            f.write(text)
    exe = os.path.join(workdir, "st_loader")
    steps = [flags + ["-include", os.path.join(workdir, "prelude.h"), "-c", os.path.join(install, SOURCE),
                      "-o", os.path.join(workdir, "loader.o")],
             flags + bases + ["-c", os.path.join(workdir, "harness.c"), "-o", os.path.join(workdir, "harness.o")],
             ["-m32", "-c", os.path.join(workdir, "stubs.c"), "-o", os.path.join(workdir, "stubs.o")],
             ["-m32", "-no-pie"] + [os.path.join(workdir, o) for o in ("harness.o", "loader.o", "stubs.o")]
             + ["-o", exe]]
    for argv in steps:
        proc = subprocess.run(["gcc"] + argv, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"building ST's loader for the host failed: gcc {' '.join(argv)}\n{proc.stderr}")
    return StLoader(exe, exec_size, ext_size, cpu_part, fpu)
