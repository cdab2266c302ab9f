"""The stream engines' data movement judged by ST's own software: every LL_ATON library operation
the test bed's 2.2 samples call (their network.c, read at test time) runs twice on the same
random memory, both builds of ST's LL_ATON 2.2 sources compiled for the host:

- ST's software implementation (the library's size thresholds raised, so it never asks for the
  stream engines);
- ST's hybrid implementation, whose epoch blocks program the stream engines through plain
  memory standing for the NPU registers; after each block's start our NPU model (streng.py via
  npu.py) reads that register file and moves the bytes in the same memory.

Memory after both must be byte-equal. Needs the test bed named by N6_REAL_STEDGEAI and gcc."""
import ctypes
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass

import numpy as np
import pytest

from npu_model.npu import Npu, NpuStop
from npu_model.registers import aton_map
from npu_model.streng import configured_engine

REAL = os.environ.get("N6_REAL_STEDGEAI", "")
NPU_SOURCES = os.path.join(REAL, "2.2", "Middlewares", "ST", "AI", "Npu")
SAMPLES = ("blazeface", "nucleo_mnv1", "facereco")
pytestmark = pytest.mark.skipif(not (REAL and os.path.isdir(NPU_SOURCES) and shutil.which("gcc")),
                                reason="no real ST Edge AI Core test bed with gcc (set N6_REAL_STEDGEAI to its folder)")

RAM, RAM_SIZE = 0x3400_0000, 4 << 20          # AXISRAM1..6: every activation buffer of the samples
REGISTERS = 0x2_0000
STRSWITCH, STRENG_FIRST, STRENG_END = 0x4000, 0x5000, 0xF000
# facereco's one LL_ATON_LIB_Concat (on the width, inputs not leftmost) is a memcpy loop on the CPU
# in ST's library: no epoch block, no stream engine (seen with this harness)
LIB_OPS = ("LL_ATON_LIB_DMA_Transpose", "LL_ATON_LIB_Pad")
SNIPPET = re.compile(r"/\* kind=(\w+) node=(\w+) \*/\n((?:(?!/\* kind=).)*?\b(" + "|".join(LIB_OPS)
                     + r")\((?:(?!/\* kind=).)*?\);)", re.S)

HARNESS = r"""
#include <assert.h>
#include <stdint.h>
#include <string.h>
#include "ll_aton_NN_interface.h"
#include "ll_aton.h"
#include "ll_aton_lib.h"
#include "ll_aton_runtime.h"

/* the runtime's part, ours: one network instance owning the NPU, the register file in memory */
static NN_Instance_TypeDef n6_instance;
NN_Instance_TypeDef *volatile __ll_current_aton_ip_owner = &n6_instance;
static uint32_t n6_aton[0x20000 / 4];
static void (*n6_npu)(void);
uintptr_t get_aton_base(void) { return (uintptr_t)n6_aton; }
void complete_dmas(void) {}
void *n6_registers(void) { return n6_aton; }
void n6_set_npu(void (*npu)(void)) { n6_npu = npu; }

/* run the epoch blocks the library inserted (and those their ends insert): start, the NPU, end */
int n6_run_inserted(void)
{
  int blocks = 0;
  const LL_ATON_RT_EpochBlockItem_t *eb;
  while ((eb = n6_instance.exec_state.next_epoch_block) != NULL)
  {
    n6_instance.exec_state.next_epoch_block = NULL;
    for (;; eb++)
    {
      if (eb->start_epoch_block) eb->start_epoch_block(eb);
      n6_npu();
      if (eb->end_epoch_block) eb->end_epoch_block(eb);
      blocks++;
      if (EpochBlock_IsLastEpochBlock(eb)) break;
    }
  }
  return blocks;
}

/* ST's stream-engine init of one raw engine (0) with the given widths and alignment */
int n6_streng_form(int dir, int align_right, int mem_lsb, int nbits_unsigned, int nbits_in, int nbits_out)
{
  LL_Streng_TensorInitTypeDef conf = {.dir = dir, .raw = 1, .align_right = align_right, .mem_lsb = mem_lsb,
                                      .nbits_unsigned = nbits_unsigned, .addr_base = {.i = 0x34000000},
                                      .offset_end = 96, .frame_tot_cnt = 1, .nbits_in = nbits_in,
                                      .nbits_out = nbits_out};
  return LL_Streng_TensorInit(0, &conf, 1);
}

/* ST's DMA transpose of a contiguous 4-D tensor at `in` to `out`, shapes and permutation ours */
void n6_transpose(uint32_t in, uint32_t out, const uint32_t *shape, const uint8_t *perm, uint8_t nbits)
{
  static uint32_t in_shape[4], out_shape[4], in_strides[4], out_strides[4];
  static LL_LIB_TensorShape_TypeDef input, output;
  for (int i = 0; i < 4; i++)
  {
    in_shape[i] = shape[i];
    out_shape[i] = shape[perm[i]];
  }
  in_strides[3] = out_strides[3] = nbits / 8;
  for (int i = 2; i >= 0; i--)
  {
    in_strides[i] = in_strides[i + 1] * in_shape[i + 1];
    out_strides[i] = out_strides[i + 1] * out_shape[i + 1];
  }
  uint32_t size = in_strides[0] * in_shape[0];
  input = (LL_LIB_TensorShape_TypeDef){.addr_base = {.i = in}, .offset_end = size, .offset_limit = size + 64,
                                       .ndims = 4, .nbits = nbits, .shape = in_shape, .batch = in_shape[3]};
  output = (LL_LIB_TensorShape_TypeDef){.addr_base = {.i = out}, .offset_end = size, .offset_limit = size + 64,
                                        .ndims = 4, .nbits = nbits, .shape = out_shape, .batch = out_shape[3]};
  LL_ATON_LIB_DMA_Transpose(&input, in_strides, &output, out_strides, perm, perm, 0, 1);
}
"""
# the software build: the library's thresholds for using the stream engines out of reach
SOFTWARE_PRELUDE = """
#include "ll_aton_lib.h"
#include "ll_aton_lib_sw_operators.h"
#undef __LL_DMA_MIN_BUFF_LEN
#define __LL_DMA_MIN_BUFF_LEN 0x7FFFFFFF
#undef __LL_PAD_FRAMING_DMA_MIN_BUFF_LEN
#define __LL_PAD_FRAMING_DMA_MIN_BUFF_LEN 0x7FFFFFFF
#undef __LL_PAD_FILLING_DMA_MIN_BUFF_LEN
#define __LL_PAD_FILLING_DMA_MIN_BUFF_LEN 0x7FFFFFFF
"""
# ours: polls find what they wait for (the model's units end at once)
POLL_PRELUDE = "#define ATON_REG_POLL(unitname, id, reg, field, val) do { } while (0)\n"


ZERO_PAD = "const float pad_const_value_native = 0;"


def lib_ops():
    """[(sample, kind, node, operation, C text of the call with its tables)] of every library call,
    and each constant Pad again with the constant 1.5 (node `<name>+1.5`): a memset of zeros
    would not tell a source address that stays (NOINC) from one that moves."""
    ops = []
    for sample in SAMPLES:
        path = os.path.join(REAL, "samples", sample, "network.c")
        if os.path.isfile(path):
            with open(path) as f:
                ops += [(sample, kind, node, op, text) for kind, node, text, op in SNIPPET.findall(f.read())]
    return ops + [(sample, kind, node + "+1.5", op, text.replace(ZERO_PAD, ZERO_PAD.replace("0;", "1.5f;")))
                  for sample, kind, node, op, text in ops if ZERO_PAD in text]


def build(workdir, name, ops, software):
    os.makedirs(workdir, exist_ok=True)
    prelude = os.path.join(workdir, f"{name}_prelude.h")
    with open(prelude, "w") as f:
        f.write(POLL_PRELUDE + (SOFTWARE_PRELUDE if software else ""))
    harness = os.path.join(workdir, f"{name}_harness.c")
    with open(harness, "w") as f:
        f.write(HARNESS + "".join(f"\nvoid n6_op_{k}(void)\n{{\n{text}\n}}\n" for k, (*_, text) in enumerate(ops)))
    flags = ["-fPIC", "-O1", "-w", "-std=gnu99", "-DNDEBUG", "-DLL_ATON_PLATFORM=LL_ATON_PLAT_TSTXPL",
             "-DLL_ATON_OSAL=LL_ATON_OSAL_BARE_METAL", "-DLL_ATON_RT_MODE=LL_ATON_RT_POLLING",
             f"-I{os.path.join(NPU_SOURCES, 'll_aton')}", f"-I{os.path.join(NPU_SOURCES, 'Devices', 'STM32N6XX')}",
             "-include", prelude]
    sources = [harness] + [os.path.join(NPU_SOURCES, "ll_aton", f) for f in
                           ("ll_aton.c", "ll_aton_lib.c", "ll_aton_lib_sw_operators.c", "ll_aton_util.c")]
    out = os.path.join(workdir, f"{name}.so")
    proc = subprocess.run(["gcc", "-shared"] + flags + sources + ["-o", out, "-lm"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return ctypes.CDLL(out)


def map_ram():
    """RAM_SIZE bytes at RAM in this process: ST's code addresses the samples' buffers directly."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    MAP_PRIVATE, MAP_ANONYMOUS, MAP_FIXED_NOREPLACE, PROT_RW = 0x02, 0x20, 0x100000, 0x3
    at = libc.mmap(RAM, RAM_SIZE, PROT_RW, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
    if at != RAM:
        pytest.skip(f"cannot map 0x{RAM:08X} in this process (errno {ctypes.get_errno()})")
    return (ctypes.c_uint8 * RAM_SIZE).from_address(RAM)


class NpuOnRegisters:
    """After each epoch block's start: our NPU model takes the register file ST's code wrote and
    moves the bytes in this process's memory."""

    def __init__(self, lib):
        self.lib = lib
        self.aton = aton_map()
        self.reset = np.zeros(REGISTERS // 4, dtype="<u4")
        for offset, value in self.aton.reset_values().items():
            self.reset[offset // 4] = value
        lib.n6_registers.restype = ctypes.c_void_p
        self.registers = (ctypes.c_uint32 * (REGISTERS // 4)).from_address(lib.n6_registers())
        self.callback = ctypes.CFUNCTYPE(None)(self.step)
        lib.n6_set_npu(self.callback)
        self.programs, self.errors, self.bytes = [], [], 0

    def clear(self):
        """Every unit's configuration at reset, as the blocks' ends leave it (CONFCLR)."""
        ctypes.memmove(self.registers, self.reset.ctypes.data, REGISTERS)

    def step(self):
        try:
            regs = np.frombuffer(self.registers, dtype="<u4").copy()
            npu = Npu()
            npu.read_memory = lambda address, n: ctypes.string_at(address, n)
            npu.write_memory = lambda address, data: ctypes.memmove(address, bytes(data), len(data))
            changed = np.flatnonzero(regs[STRSWITCH // 4:STRENG_END // 4] != self.reset[STRSWITCH // 4:STRENG_END // 4])
            ctrls = [STRENG_FIRST + 0x1000 * i for i in range(10)]
            for offset in (STRSWITCH + 4 * changed).tolist():
                if offset not in ctrls:
                    npu.write(offset, int(regs[offset // 4]))
            for offset in ctrls:
                if regs[offset // 4] & 1:
                    npu.write(offset, int(regs[offset // 4]))
            self.programs += npu.programs
            self.bytes += npu.bytes_moved
        except NpuStop as e:
            self.errors.append(str(e))
        except Exception as e:                          # a callback must not raise into C
            self.errors.append(f"{type(e).__name__}: {e}")
        finally:
            self.clear()


def form(op, text):
    """What tells one call's form from another: its shapes, item bits, permutation or pad mode."""
    arrays = {name: [int(v) for v in re.findall(r"-?\d+", values)]
              for name, values in re.findall(r"u?int(?:8|32)_t (\w+)\[\] = \{([^}]*)\}", text)}
    pick = lambda part: next((v for k, v in arrays.items() if part in k), None)
    if op == "LL_ATON_LIB_Pad":
        args = [a.strip() for a in text[text.rindex(op):].split("(", 1)[1].split(",")]
        return {"op": "Pad", "mode": int(args[5]), "nbits": 8 * int(args[6]), "in": pick("min_shape"),
                "out": pick("out_shape")}
    return {"op": "Transpose", "nbits": int(re.search(r"\.nbits = (\d+)", text).group(1)),
            "in": pick("shape_in"), "out": pick("shape_out"), "perm": pick("perm_to_use")}


@dataclass
class Bed:
    ops: list                       # lib_ops()
    memory: np.ndarray              # the RAM, as uint8
    software: object                # the two builds (ctypes.CDLL)
    hybrid: object
    npu: NpuOnRegisters             # the model on the hybrid build's registers

    def run_hybrid(self, k):
        """Call k of the hybrid build, its epoch blocks run by our model: a report row."""
        programs, moved = len(self.npu.programs), self.npu.bytes
        self.npu.clear()
        getattr(self.hybrid, f"n6_op_{k}")()
        blocks = self.hybrid.n6_run_inserted()
        assert not self.npu.errors, (self.ops[k][:3], self.npu.errors)
        return {"sample": self.ops[k][0], "node": self.ops[k][2], **form(self.ops[k][3], self.ops[k][4]),
                "epoch_blocks": blocks, "chains": len(self.npu.programs) - programs,
                "bytes_moved": self.npu.bytes - moved}


@pytest.fixture(scope="module")
def bed(tmp_path_factory):
    ops = lib_ops()
    if not ops:
        pytest.skip("the test bed's samples call no LL_ATON library operation")
    ram = map_ram()
    workdir = str(tmp_path_factory.mktemp("ll_aton"))
    hybrid = build(workdir, "hybrid", ops, software=False)
    return Bed(ops, np.frombuffer(ram, dtype=np.uint8), build(workdir, "software", ops, software=True), hybrid,
               NpuOnRegisters(hybrid))


def test_every_dma_library_op_of_the_samples_equals_st_software(bed, tmp_path):
    rng = np.random.default_rng(30)
    memory = bed.memory
    rows = []
    for k, (sample, _, node, _, _) in enumerate(bed.ops):
        start = rng.integers(0, 256, RAM_SIZE, dtype=np.uint8)
        memory[:] = start
        getattr(bed.software, f"n6_op_{k}")()
        assert bed.software.n6_run_inserted() == 0, f"{sample} {node}: the software build asked for the stream engines"
        wanted = memory.copy()
        memory[:] = start
        row = bed.run_hybrid(k)
        differ = np.flatnonzero(memory != wanted)
        assert differ.size == 0, (f"{sample} {node}: {differ.size} bytes differ from ST's software, "
                                  f"first at 0x{RAM + differ[0]:08X}")
        rows.append({**row, "bytes_changed": int(np.count_nonzero(wanted != start))})
    with open(tmp_path / "npu_streng_st.json", "w") as f:
        json.dump(rows, f, indent=1)
    key = lambda r: (r["sample"], r["op"], r["nbits"], str(r.get("perm", r.get("mode"))))
    forms = sorted({key(r) for r in rows})
    print("\n".join(f"{sum(key(r) == f for r in rows):3d} x {f}" for f in forms))
    assert rows and all(r["chains"] and r["bytes_changed"] for r in rows), [r for r in rows if not r["chains"]]


@pytest.mark.parametrize("shape,perm,nbits", [((2, 3, 5, 7), (0, 3, 2, 1), 8), ((3, 4, 6, 5), (0, 2, 1, 3), 8),
                                              ((2, 3, 4, 6), (0, 3, 2, 1), 32), ((2, 3, 4, 5), (1, 0, 3, 2), 16)])
def test_transposes_of_several_batches_equal_st_software(bed, shape, perm, nbits):
    """The samples' tensors have one batch: ST's transpose of our shapes with several (frame loops
    FRPTOFF apart; self-inverse permutations, as the samples', so ST's target_pos is perm)."""
    rng = np.random.default_rng(sum(shape))
    start = rng.integers(0, 256, RAM_SIZE, dtype=np.uint8)
    args = (RAM + 0x1000, RAM + 0x10_0000, (ctypes.c_uint32 * 4)(*shape), (ctypes.c_uint8 * 4)(*perm), nbits)
    bed.memory[:] = start
    bed.software.n6_transpose(*args)
    assert bed.software.n6_run_inserted() == 0
    wanted = bed.memory.copy()
    n = np.prod(shape) * nbits // 8
    x = start[0x1000:0x1000 + n].view(f"<u{nbits // 8}").reshape(shape)
    assert wanted[0x10_0000:0x10_0000 + n].tobytes() == np.ascontiguousarray(x.transpose(perm)).tobytes()
    bed.memory[:] = start
    programs = len(bed.npu.programs)
    bed.npu.clear()
    bed.hybrid.n6_transpose(*args)
    bed.hybrid.n6_run_inserted()
    assert not bed.npu.errors, bed.npu.errors
    assert len(bed.npu.programs) == programs + 1
    assert np.flatnonzero(bed.memory != wanted).size == 0


def test_every_form_ll_aton_writes_places_an_items_data_where_its_comments_say(bed):
    """LL_Streng_TensorInit (ST's ll_aton.c, the hybrid build) for every width in and out of 1..24
    bits, both directions, alignments, gap sides and signedness, decoded by streng.py: the
    narrower width's data bits lie contiguous on the switch word, from bit 0 with align_right,
    else at the top of the channels the stream side's width fills (ll_aton.c's comments: lanes
    for 8, 16, 24 bits, other widths shifted within them; "the DMA stuffs the bits to the left of
    the channel"); the memory item keeps its high (or, with mem_lsb, low) bits; SIGNEXT only
    right aligned and signed. streng.py's model before (left-aligned data at the top of the
    24-bit word, channel 0 most significant) fails every left-aligned form under 24 bits."""
    aton = aton_map()
    base = aton.units["STRENG"].instance_base(0)
    registers = np.frombuffer(bed.npu.registers, dtype="<u4")
    forms = 0
    for dir_, right, mem_lsb, unsigned in np.ndindex(2, 2, 2, 2):
        for nbits_in in range(1, 25):
            for nbits_out in range(1, 25):
                bed.npu.clear()
                assert bed.hybrid.n6_streng_form(dir_, right, mem_lsb, unsigned, nbits_in, nbits_out) == 0
                e = configured_engine(aton, {base + 4 * k: int(registers[base // 4 + k]) for k in range(0x40)}, 0)
                n, stream = min(nbits_in, nbits_out), (nbits_in, nbits_out)[1 - dir_]
                at = 0 if right else 8 * -(-stream // 8) - n
                form = (dir_, right, mem_lsb, unsigned, nbits_in, nbits_out)
                assert e.data_bits == n, form
                bits = np.int64(1) << np.arange(n, dtype=np.int64)
                assert e.to_words(bits).tolist() == (bits << at).tolist(), form
                assert e.from_words(bits << at).tolist() == bits.tolist(), form
                gap = max(0, (nbits_in, nbits_out)[dir_] - stream)          # the memory side wider
                assert (e.front_gap, e.back_gap) == ((gap, 0) if mem_lsb else (0, gap)), form
                assert (e.low_aligned, e.sign_extend) == (bool(right), bool(right and not unsigned)), form
                forms += 1
    assert forms == 16 * 24 * 24
