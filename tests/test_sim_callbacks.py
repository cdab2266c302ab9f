"""The simulated runtime's model side follows each release's firmware callback table: the
struct has the release's entries in its order, and each LL_ATON_LIB_* forwarder calls its own
slot (so a real firmware of that release would run it)."""
import os
import subprocess

import pytest

from n6.stedgeai_install import PLATFORM

from conftest import SIM

LL_ATON = os.path.join(SIM, "install", "Middlewares", "ST", "AI", "Npu", "ll_aton")
VERSIONS = {"2.2": (1, 1, 1, 14), "3.0": (1, 1, 3, 8), "4.0": (1, 1, 3, 262)}
COMMON = ["assert_func", "ll_lib_error", "ll_aton_cache_mcu_clean_range", "ll_aton_cache_mcu_invalidate_range",
          "ll_aton_cache_mcu_clean_invalidate_range", "ll_aton_cache_npu_clean_range",
          "ll_aton_cache_npu_clean_invalidate_range", "ll_aton_lib_concat", "ll_aton_lib_cast"]
BLOCKS = ["ll_aton_lib_dma_imagetorow", "ll_aton_lib_dma_spacetodepth", "ll_aton_lib_dma_rowtoimage",
          "ll_aton_lib_dma_depthtospace"]
SPLITS = ["ll_aton_lib_dma_outputs_channel_split_aton", "ll_aton_lib_dma_outputs_channel_split_batched"]
TABLE_22 = COMMON + ["ll_aton_lib_softmax"] + BLOCKS + [
    "ll_aton_lib_dma_outputs_flat_copy", "ll_aton_lib_dma_outputs_slice_splitlike"] + SPLITS + [
    "ll_aton_lib_dma_pad_memset", "ll_aton_lib_dma_pad_filling", "ll_aton_lib_dma_transpose"]
# reloc-format.md §6 and the releases' ll_aton_reloc_network.h (LL_ATON 1.1.1-14, 1.1.3-8, 1.1.3-262)
TABLES = {
    "2.2": TABLE_22,
    "3.0": TABLE_22 + ["ll_aton_lib_async_memcpy", "ll_aton_lib_dma_pad_4loop_filling"],
    "4.0": COMMON + ["ll_aton_lib_dma_transpose", "ll_aton_lib_softmax"] + BLOCKS + [
        "ll_aton_lib_dma_outputs_slice_splitlike", "ll_aton_lib_pad_std", "ll_aton_lib_pad_4loop",
        "ll_aton_lib_dma_outputs_flat_copy"] + SPLITS,
}
PROBE = r"""
#define AI_RELOC_CALLBACKS_ONLY
#include <stddef.h>
#include <stdio.h>
#include "ll_aton_reloc_network.h"

struct ai_reloc_rt_ctx _network_rt_ctx;
static int called = -1;
#define STUB(i) static int stub##i(void) { called = i; return 100 + i; }
%(stubs)s
static void (*slots[%(n)d])(void) = {%(slots)s};

int main(void)
{
  static struct ll_aton_reloc_callbacks cbs;
  printf("%%zu\n", sizeof cbs / sizeof(void (*)(void)));
%(offsets)s
  memcpy(&cbs, slots, sizeof slots);
  _network_rt_ctx.cbs = &cbs;
  int r = LL_ATON_LIB_Concat(NULL, 0, NULL, 0, 0, 0%(nn)s);
  printf("concat %%d %%d\n", called, r);
  LL_ATON_LIB_Softmax(NULL, NULL, 0, 0);
  printf("softmax %%d\n", called);
  LL_ATON_LIB_DMA_Transpose(NULL, NULL, NULL, NULL, NULL, NULL, 0, 0%(nn)s);
  printf("transpose %%d\n", called);
  LL_ATON_Cache_NPU_Clean_Range(0, 0);
  printf("npu_clean %%d\n", called);
  return 0;
}
"""


def _probe(tmp_path, release, table):
    inc = tmp_path / "inc"
    inc.mkdir()
    major, minor, micro, dev = VERSIONS[release]
    (inc / "ll_aton_version.h").write_text(
        f"#define LL_ATON_VERSION_MAJOR {major}\n#define LL_ATON_VERSION_MINOR {minor}\n"
        f"#define LL_ATON_VERSION_MICRO {micro}\n#define LL_ATON_VERSION_DEV {dev}\n")
    n = len(table)
    src = tmp_path / "probe.c"
    src.write_text("#include <string.h>\n" + PROBE % {
        "stubs": "\n".join(f"STUB({i})" for i in range(n)), "n": n,
        "slots": ", ".join(f"(void (*)(void))stub{i}" for i in range(n)),
        "offsets": "\n".join(f'  printf("%zu\\n", offsetof(struct ll_aton_reloc_callbacks, {m}) / sizeof(void *));'
                             for m in table),
        "nn": ", NULL" if release == "4.0" else ""})
    exe = tmp_path / "probe"
    subprocess.run(["gcc", "-std=gnu99", "-DBUILD_AI_NETWORK_RELOC", f"-I{inc}", f"-I{LL_ATON}",
                    f"-I{os.path.join(SIM, 'install', PLATFORM)}", str(src),
                    os.path.join(LL_ATON, "ll_aton_reloc_callbacks.c"), "-o", str(exe)], check=True,
                   capture_output=True, text=True)
    return subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")


@pytest.mark.parametrize("release", sorted(TABLES))
def test_callback_table_order_and_forwarders(tmp_path, release):
    table = TABLES[release]
    lines = _probe(tmp_path, release, table)
    assert int(lines[0]) == {"2.2": 21, "3.0": 23, "4.0": 21}[release] == len(table)
    assert [int(v) for v in lines[1:1 + len(table)]] == list(range(len(table)))
    calls = dict(line.split(" ", 1) for line in lines[1 + len(table):] if line)
    assert calls["concat"] == f"{table.index('ll_aton_lib_concat')} {100 + table.index('ll_aton_lib_concat')}"
    assert int(calls["softmax"]) == table.index("ll_aton_lib_softmax")
    assert int(calls["transpose"]) == table.index("ll_aton_lib_dma_transpose")
    assert int(calls["npu_clean"]) == table.index("ll_aton_cache_npu_clean_range")


def test_callback_table_agrees_with_the_firmware_facts():
    """The firmware side's facts module (names and order per release) says the same."""
    from n6.reloc import callbacks
    for release, table in TABLES.items():
        assert list(callbacks.table(release)) == table, release
