"""The Helium executor (n6board.dk.mve) judged by an independent implementation: QEMU's Cortex-M55
(mps3-an547 machine). One bare-metal program, built with the GNU Arm toolchain, runs every case
(an instruction form over edge inputs: saturation, negative values, NaNs and denormals,
predication masks, tail lengths) and records Q0-Q7, R0-R7, FPSCR, P0 and a scratch memory area
after it. Under QEMU the records go out by semihosting; on our emulated CPU the same ELF's run_all
is called and the records read from memory. The two must be equal, byte for byte."""
import shutil
import struct
import subprocess

import pytest

QEMU = shutil.which("qemu-system-arm")
pytestmark = pytest.mark.skipif(QEMU is None, reason="qemu-system-arm not installed (tools/setup.sh installs it)")

RECORD = 128 + 32 + 8 + 64          # D0-D15, R0-R7, FPSCR and P0, the scratch area
F = {"one": 0x3F800000, "mone": 0xBF800000, "half": 0x3F000000, "big": 0x7F7FFFFF, "inf": 0x7F800000,
     "qnan": 0x7FC00001, "snan": 0x7F800001, "denorm": 0x00000003, "mzero": 0x80000000, "k1e10": 0x501502F9,
     "m2_5": 0xC0200000, "x1_5": 0x3FC00000}

# input sets: 16 D-register words x2 (Q0-Q7), R2-R7, P0; the scratch area is 64 bytes from a pattern
INPUTS = [
    ([0x7FFFFFFF, 0x80000000, 0x00000001, 0xFFFFFFFF, 0x12345678, 0x89ABCDEF, 0x7F80FF01, 0x00FF7F80] * 4,
     [0x7FFFFFF0, 3, 5, 0x80, 0x20000104, 0xFFFFFFFE], 0x00FF),
    ([F["one"], F["mone"], F["half"], F["big"], F["inf"], F["qnan"], F["denorm"], F["mzero"],
      F["k1e10"], F["m2_5"], F["x1_5"], F["snan"], 0x40490FDB, 0xC0490FDB, 0x00800000, 0x80000001] * 2,
     [F["x1_5"], F["big"], 2, 7, 0x20000104, F["qnan"]], 0xF0F0),
    ([(0x01020304 * k + 0x7F7F8081 * (k & 3)) & 0xFFFFFFFF for k in range(32)],
     [0xFFFFFF80, 0x7F, 1, 13, 0x20000108, 0x8000], 0x0FF0),
]

# (name, body): the body runs with Q0-Q7, R2-R7 and P0 from an input set; R6 points at the
# scratch area (64 bytes, word aligned), R7 is free. Every implemented form appears.
CASES = [
    ("vdup", "vdup.32 q0, r2\nvdup.16 q1, r3\nvdup.8 q2, r4"),
    ("bitwise", "vand q0, q1, q2\nvbic q3, q4, q5\nvorr q4, q5, q6\nveor q5, q6, q7\nvmov q6, q0\nvorn q7, q1, q2"),
    ("add_sub", "vadd.i32 q0, q1, q2\nvadd.i8 q1, q2, q3\nvsub.i16 q2, q3, q4\nvadd.i32 q3, q4, r2\n"
                "vsub.i8 q4, q5, r3"),
    ("mul", "vmul.i32 q0, q1, q2\nvmul.i16 q1, q2, q3\nvmul.i8 q2, q3, r4\nvmul.i32 q3, q4, r2"),
    ("qadd", "vqadd.s32 q0, q1, q2\nvqadd.u8 q1, q2, q3\nvqsub.s16 q2, q3, q4\nvqsub.u32 q3, q4, q5\n"
             "vqadd.s32 q4, q5, r2\nvqsub.s8 q5, q6, r3\nvqsub.u16 q6, q7, r5"),
    ("qadd_qc", "vqadd.s32 q0, q0, q1"),
    ("maxmin", "vmax.s32 q0, q1, q2\nvmin.u8 q1, q2, q3\nvmax.u16 q2, q3, q4\nvmin.s8 q3, q4, q5"),
    ("qshl", "vqshl.s32 q0, q1, #23\nvqshl.u8 q1, q2, #3\nvqshl.s16 q2, q3, #1\nvqshl.u32 q3, q4, #31"),
    ("narrow", "vqmovnb.s32 q0, q1\nvqmovnt.s32 q0, q2\nvqmovnb.u32 q3, q4\nvqmovnt.u16 q5, q6\n"
               "vqmovunb.s32 q6, q7\nvmovnt.i32 q7, q1\nvmovnb.i16 q4, q2\nvqmovnb.s16 q2, q5"),
    ("idup", "mov r0, r3\nvidup.u32 q0, r0, #4\nvddup.u8 q1, r0, #2\nvidup.u16 q2, r0, #8\nvddup.u32 q3, r4, #1"),
    ("addv", "vaddv.s32 r0, q1\nmov r2, r3\nvaddva.u8 r2, q2\nvaddva.s16 r2, q3\nvaddv.u32 r4, q4"),
    ("shift_imm", "vshr.s32 q0, q1, #3\nvshr.u32 q1, q2, #31\nvshr.s8 q2, q3, #1\nvshr.u16 q3, q4, #16\n"
                  "vshl.i32 q4, q5, #3\nvshl.i8 q5, q6, #7\nvshl.i16 q6, q7, #0"),
    ("shift_reg", "vshl.s32 q0, q1, q2\nvrshl.s32 q1, q2, q3\nvshl.u8 q2, q3, q4\nvrshl.u16 q3, q4, q5\n"
                  "vrshl.s8 q4, r3\nvshl.s32 q5, r4\nvrshl.u32 q6, r7\nmov r7, #0xF8\nvrshl.s32 q7, r7"),
    ("qdmulh", "vqdmulh.s32 q0, q1, q2\nvqrdmulh.s32 q1, q2, q3\nvqdmulh.s16 q2, q3, q4\nvqrdmulh.s8 q3, q4, q5\n"
               "vqdmulh.s32 q4, q5, r2\nvqrdmulh.s16 q5, q6, r3\nvqdmulh.s32 q6, q7, q7"),
    ("movl", "vmovlb.u8 q0, q1\nvmovlt.s8 q1, q2\nvmovlb.s16 q2, q3\nvmovlt.u16 q3, q4"),
    ("mlav", "vmlav.s8 r0, q1, q2\nmov r2, r3\nvmlava.u8 r2, q3, q4\nvmladavx.s16 r4, q5, q6\n"
             "vmlava.s32 r2, q7, q1\nvmlav.u16 r6, q2, q3"),
    ("mla", "vmla.u16 q0, q1, r2\nvmla.s32 q1, q2, r3\nvmlas.s8 q2, q3, r4\nvmlas.u32 q3, q4, r5"),
    ("int_unary", "vmvn q0, q1\nvneg.s32 q1, q2\nvneg.s8 q2, q3\nvabs.s16 q3, q4\nvabs.s32 q4, q5"),
    ("maxv", "mov r0, r3\nvmaxv.s8 r0, q1\nmov r1, r2\nvminv.u32 r1, q2\nmov r4, r3\nvmaxv.u16 r4, q3\n"
             "mov r5, r2\nvminv.s32 r5, q4\nmov r7, r3\nvmaxav.s8 r7, q5\nmov r2, r3\nvminav.s16 r2, q6\n"
             "mov r6, r3\nvminv.s8 r6, q1"),
    ("mlalv", "vmlalv.s16 r0, r1, q1, q2\nmov r4, r2\nmov r5, r3\nvmlalva.u32 r4, r5, q3, q4\n"
              "vmlaldavx.s32 r2, r3, q5, q6"),
    ("qshl_reg", "vqshl.s16 q0, r3\nvqshl.u8 q1, r4\nvqrshl.s32 q2, r7\nmov r7, #0xFC\nvqrshl.u16 q3, r7\n"
                 "vqshl.s32 q4, r5"),
    ("fadd", "vadd.f32 q0, q1, q2\nvsub.f32 q1, q2, q3\nvadd.f32 q2, q3, r2\nvsub.f32 q3, q4, r3"),
    ("fmul", "vmul.f32 q0, q1, q2\nvmul.f32 q1, q3, r2\nvmul.f32 q2, q4, q5"),
    ("fma", "vfma.f32 q0, q1, q2\nvfms.f32 q3, q4, q5\nvfma.f32 q6, q7, r2\nvfmas.f32 q5, q1, r3"),
    ("fmaxmin", "vmaxnm.f32 q0, q1, q2\nvminnm.f32 q1, q2, q3\nmov r0, r2\nvmaxnmv.f32 r0, q4\nmov r1, r3\n"
                "vminnmv.f32 r1, q5\nmov r7, r2\nvmaxnmav.f32 r7, q6"),
    ("fabsneg", "vabs.f32 q0, q1\nvneg.f32 q1, q2"),
    ("cvt", "vcvt.s32.f32 q0, q1\nvcvt.u32.f32 q1, q2\nvcvt.f32.s32 q2, q3\nvcvt.f32.u32 q3, q4"),
    ("cvt_round", "vcvta.s32.f32 q0, q1\nvcvtn.s32.f32 q1, q2\nvcvtp.u32.f32 q2, q3\nvcvtm.s32.f32 q3, q4"),
    ("cvt_fixed", "vcvt.f32.s32 q0, q1, #15\nvcvt.s32.f32 q1, q2, #15\nvcvt.u32.f32 q2, q3, #1\n"
                  "vcvt.f32.u32 q3, q4, #32"),
    ("cmp_int", "vcmp.s32 lt, q1, r2\nvmrs r0, p0\nvcmp.u32 hi, q2, q3\nvmrs r1, p0\nvcmp.i8 eq, q3, q3\n"
                "vmrs r7, p0\nvcmp.s16 ge, q4, r3"),
    ("cmp_f32", "vcmp.f32 lt, q1, r2\nvmrs r0, p0\nvcmp.f32 le, q2, q3\nvmrs r1, p0\nvcmp.f32 eq, q3, q4\n"
                "vmrs r7, p0\nvcmp.f32 ne, q4, q5"),
    ("vpst", "vpst\nvaddt.i32 q0, q1, q2\nvpstete\nvaddt.i32 q1, q2, q3\nvsube.i32 q2, q3, q4\n"
             "vmult.i32 q3, q4, q5\nvmove q4, q5"),
    ("vpt", "vpt.s32 ge, q1, r2\nvaddt.i32 q0, q1, q2\nvpte.f32 lt, q2, q3\nvmult.f32 q4, q5, q6\n"
            "vadde.f32 q5, q6, q7\nvpt.f32 ge, q3, r2\nvsubt.f32 q7, q1, q2\n"
            "vptt.i8 ne, q1, q2\nvcmpt.i8 eq, q3, q4\nvorrt q6, q7, q0\nvmrs r0, p0"),
    ("vpsel", "vpsel q0, q1, q2\nvcmp.s32 gt, q3, q4\nvpsel q5, q6, q7"),
    ("vctp", "vctp.32 r4\nvpst\nvmovt q0, q1\nvctp.8 r5\nvpst\nvmovt q2, q3\nvctp.16 r3\nvpst\nvaddt.i16 q4, q5, q6"),
    ("vpr", "vmsr p0, r2\nvmrs r0, vpr\nmovw r7, #0xA55A\nvmsr vpr, r7\nvmrs r1, p0"),
    ("ld_contig", "vldrw.u32 q0, [r6]\nvldrb.u8 q1, [r6, #3]\nvldrh.u16 q2, [r6, #-0]\nmov r7, r6\n"
                  "vldrw.u32 q3, [r7], #16\nvldrh.u16 q4, [r7, #-6]!\nmov r0, r7"),
    ("st_contig", "mov r7, r6\nvstrw.32 q1, [r7], #4\nvstrb.8 q2, [r7, #5]!\nvstrh.16 q3, [r6, #34]\nmov r0, r7"),
    ("ld_widen", "vldrb.s32 q0, [r6]\nvldrb.u32 q1, [r6, #5]\nvldrb.s16 q2, [r6, #8]\nvldrh.s32 q3, [r6, #2]\n"
                 "mov r7, r6\nvldrh.u32 q4, [r7], #6\nvldrb.u16 q5, [r7, #3]!\nmov r0, r7"),
    ("st_narrow", "vstrb.32 q1, [r6]\nvstrb.16 q2, [r6, #9]\nmov r7, r6\nvstrh.32 q3, [r7, #20]!\nmov r0, r7"),
    ("gather", "veor q0, q0, q0\nmov r0, #0\nvidup.u32 q1, r0, #4\nmov r0, #0\nvidup.u32 q2, r0, #2\n"
               "vldrw.u32 q3, [r6, q1]\n"
               "vldrh.s32 q4, [r6, q2]\nvldrb.u32 q5, [r6, q1]\nvldrh.u32 q6, [r6, q2, uxtw #1]\n"
               "vldrw.u32 q7, [r6, q0, uxtw #2]"),
    ("scatter", "mov r0, #0\nvidup.u32 q1, r0, #8\nvstrw.32 q2, [r6, q1]\nvstrb.32 q3, [r6, q1]\n"
                "mov r0, #1\nvidup.u32 q0, r0, #2\nvstrh.32 q4, [r6, q0, uxtw #1]"),
    ("vld2", "mov r7, r6\nvld20.32 {q4, q5}, [r7]\nvld21.32 {q4, q5}, [r7]!\nvld20.8 {q0, q1}, [r7]\n"
             "vld21.16 {q2, q3}, [r6]\nmov r0, r7"),
    ("vld4", "mov r7, r6\nvld40.32 {q4, q5, q6, q7}, [r7]\nvld41.32 {q4, q5, q6, q7}, [r7]\n"
             "vld42.32 {q4, q5, q6, q7}, [r7]\nvld43.32 {q4, q5, q6, q7}, [r7]!\nvld41.8 {q0, q1, q2, q3}, [r6]\n"
             "vld42.16 {q0, q1, q2, q3}, [r6]\nmov r0, r7"),
    ("vst24", "vst20.32 {q4, q5}, [r6]\nvst21.16 {q0, q1}, [r6]\nvst43.8 {q2, q3, q4, q5}, [r6]\n"
              "mov r7, r6\nvst40.32 {q4, q5, q6, q7}, [r7]!\nmov r0, r7"),
    ("pred_mem", "vmsr p0, r5\nvpst\nvldrwt.u32 q0, [r6]\nvpst\nvstrbt.8 q1, [r6, #16]\nvpst\nvldrbt.s32 q2, [r6, #3]"),
    ("dlstp", "mov r0, r6\nmov r1, r6\nmov r7, #0\nadd r1, #32\ndlstp.32 lr, r4\n1:\nvldrw.u32 q0, [r0], #16\n"
              "vadd.i32 q0, q0, r2\nvstrw.32 q0, [r1], #16\nletp lr, 1b\nvmov q1, q0\n"
              "dlstp.8 lr, r7\n2:\nvldrb.u8 q2, [r6]\nvstrb.8 q3, [r6]\nletp lr, 2b"),
    ("wlstp", "mov r0, r6\nmov r1, r6\nadd r1, #20\nwlstp.8 lr, r5, 2f\n1:\nvldrb.u8 q0, [r0], #16\n"
              "vstrb.8 q0, [r1], #16\nletp lr, 1b\n2:\nvmov q1, q0"),
    ("wlstp_zero", "mov r0, r6\nmov r7, #0\nveor q0, q0, q0\nwlstp.16 lr, r7, 2f\n1:\nvstrh.16 q1, [r0], #16\n"
                   "letp lr, 1b\n2:\nvaddv.u32 r0, q0\nlctp"),
    ("long_shift_imm", "mov r0, r2\nmov r1, r3\nlsll r0, r1, #5\nlsrl r2, r3, #1\nasrl r4, r5, #31\n"
                       "mov r6, r5\nmov r7, r2\nasrl r6, r7, #32\nlsll r2, r3, #32"),
    ("long_shift_reg", "mov r0, r2\nmov r1, r5\nlsll r0, r1, r3\nmov r7, #0xF3\nlsll r2, r3, r7\n"
                       "asrl r4, r5, r7\nmov r7, #70\nmov r6, r0\nlsll r0, r1, r7\nmov r7, #0xB0\n"
                       "asrl r2, r3, r7\nmov r7, #9\nasrl r4, r5, r7"),
    ("tp_vpt", "mov r1, r6\nveor q0, q0, q0\nand r7, r5, #15\nadd r7, #1\n"
               "dlstp.32 lr, r7\n1:\nvldrw.u32 q1, [r1], #16\nvpt.s32 gt, q1, r3\n"
               "vaddt.i32 q0, q0, q1\nletp lr, 1b\nvaddv.s32 r0, q0"),
]


def _case_asm(index, body):
    return f"""
    .thumb_func
case_{index}:                   @ r0: the input set, r1: the record
    push {{r4-r11, lr}}
    push {{r1}}
    vldmia r0, {{d0-d15}}
    add r0, #128
    ldm r0, {{r2-r7}}
    mov r1, #0
    vmsr vpr, r1
    ldr r1, [r0, #24]
    vmsr p0, r1
    mov r1, #0x40000             @ LTPSIZE 4: no tail predication
    vmsr fpscr, r1
    ldr r8, [r0, #28]            @ the scratch pattern seed
    ldr r9, =scratch
    mov r10, #16
0:  str r8, [r9], #4
    ldr r11, =0x3F1D2C0B
    add r8, r8, r11
    ror r8, r8, #7
    subs r10, #1
    bne 0b
    ldr r6, =scratch
    mov r0, #0
    mov r1, #0
{body}
    stmdb sp!, {{r0-r7}}
    ldr r8, [sp, #32]
    vstmia r8!, {{d0-d15}}
    ldmia sp!, {{r0-r7}}
    stmia r8!, {{r0-r7}}
    vmrs r0, fpscr
    str r0, [r8], #4
    vmrs r0, p0
    str r0, [r8], #4
    ldr r0, =scratch
    mov r1, #16
0:  ldr r2, [r0], #4
    str r2, [r8], #4
    subs r1, #1
    bne 0b
    add sp, #4
    pop {{r4-r11, pc}}
    .ltorg
"""


def _program():
    cases = [(c, s) for c in range(len(CASES)) for s in range(len(INPUTS))]
    asm = [".syntax unified", ".thumb", ".text"]
    asm += [_case_asm(k, body) for k, (_, body) in enumerate(CASES)]
    asm += [".data", ".align 4", "inputs:"]
    for seed, (words, regs, p0) in enumerate(INPUTS):
        tag = 0x9E3779B9 * (seed + 1) & 0xFFFFFFFF
        asm.append(".word " + ", ".join(f"0x{w:08X}" for w in words + regs + [p0, tag]))
    asm += [".align 2", "cases:"]
    asm += [f".word case_{c} + 1, inputs + {s * 160}" for c, s in cases]
    asm += [f".global n_records\nn_records: .word {len(cases)}", ".bss", ".align 4", "scratch: .space 64",
            ".global records", f"records: .space {RECORD * len(cases)}",
            ".text", ".global run_all", ".thumb_func",
            "run_all:", "push {r4-r6, lr}", "ldr r4, =cases", "ldr r5, =records", "ldr r6, =n_records",
            "ldr r6, [r6]", "1: ldr r2, [r4], #4", "ldr r0, [r4], #4", "mov r1, r5", "blx r2",
            f"add r5, #{RECORD}", "subs r6, #1", "bne 1b", "pop {r4-r6, pc}", ".ltorg"]
    return "\n".join(asm) + "\n"


STARTUP = r"""
extern void run_all(void);
extern unsigned char records[];
extern unsigned n_records;
extern unsigned _stack_top;

static int semihost(int op, const void *arg) {
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

void reset(void) {
    *(volatile unsigned *)0xE000ED88 |= 0xFu << 20;          /* CPACR: CP10, CP11 (FPU and MVE) */
    __asm__ volatile("dsb\n isb");
    run_all();
    static char line[2 * 232 + 2];
    static const char hex[] = "0123456789abcdef";
    for (unsigned r = 0; r < n_records; r++) {
        for (unsigned b = 0; b < 232; b++) {
            line[2 * b] = hex[records[232 * r + b] >> 4];
            line[2 * b + 1] = hex[records[232 * r + b] & 15];
        }
        line[2 * 232] = '\n';
        line[2 * 232 + 1] = 0;
        semihost(0x04, line);                                 /* SYS_WRITE0 */
    }
    semihost(0x18, (const void *)0x20026);                    /* SYS_EXIT, ADP_Stopped_ApplicationExit */
    for (;;) {}
}

__attribute__((section(".vectors"), used)) static const void *vectors[] = {&_stack_top, (void *)reset};
"""

LINKER = """
MEMORY { ITCM (rx) : ORIGIN = 0x00000000, LENGTH = 512K
         DTCM (rw) : ORIGIN = 0x20000000, LENGTH = 256K }
SECTIONS {
  .text : { KEEP(*(.vectors)) *(.text*) *(.rodata*) } > ITCM
  .data : { *(.data*) } > ITCM
  .bss (NOLOAD) : { *(.bss*) *(COMMON) } > DTCM
  _stack_top = ORIGIN(DTCM) + LENGTH(DTCM);
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    d = tmp_path_factory.mktemp("mve")
    (d / "cases.s").write_text(_program())
    (d / "startup.c").write_text(STARTUP)
    (d / "link.ld").write_text(LINKER)
    elf = d / "judge.elf"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O1",
                    "-fno-tree-vectorize", "-ffreestanding", "-nostdlib", "-T", str(d / "link.ld"),
                    str(d / "startup.c"), str(d / "cases.s"), "-o", str(elf)], check=True, capture_output=True,
                   text=True)
    return elf


def _qemu_records(elf):
    proc = subprocess.run([QEMU, "-M", "mps3-an547", "-nographic", "-monitor", "none", "-serial", "none",
                           "-semihosting-config", "enable=on,target=native", "-kernel", str(elf)],
                          capture_output=True, text=True, timeout=60)
    lines = [bytes.fromhex(w) for w in (proc.stdout + proc.stderr).split() if len(w) == 2 * RECORD]
    assert proc.returncode == 0 and lines, f"qemu exit {proc.returncode}: {proc.stderr[-2000:]}"
    return lines


def _our_records(elf):
    from elftools.elf.elffile import ELFFile
    from n6board.emulator import Cpu, Region
    cpu = Cpu([Region("itcm", 0, 0x80000), Region("dtcm", 0x20000000, 0x40000),
               Region("firmware", 0x30000000, 0x60000)], 0x30000000, [])
    with open(elf, "rb") as f:
        e = ELFFile(f)
        for seg in e.iter_segments():
            if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]:
                cpu.write(seg["p_vaddr"], seg.data())
                if seg["p_paddr"] != seg["p_vaddr"]:
                    cpu.write(seg["p_paddr"], seg.data())
                if seg["p_flags"] & 1:                  # executable: the scalar long shifts hooked
                    cpu.emulate_long_shifts(seg["p_vaddr"], seg["p_filesz"])
        symbols = {s.name: s["st_value"] for s in e.get_section_by_name(".symtab").iter_symbols()}
    cpu.call(symbols["run_all"] & ~1)
    n = cpu.u32(symbols["n_records"])
    raw = cpu.read(symbols["records"], RECORD * n)
    return [raw[k * RECORD:(k + 1) * RECORD] for k in range(n)], cpu.helium.state.executed


# FPSCR.QC and FPSCR.LTPSIZE: unicorn's M33 FPSCR has neither (the executor keeps them itself), so
# a VMRS of FPSCR cannot show them on our side
FPSCR_UNSEEN = 1 << 27 | 7 << 16
WORDS = [f"q{j // 4}[{j % 4}]" for j in range(32)] + [f"r{j}" for j in range(8)] + ["fpscr", "p0"] + \
    [f"scratch+{4 * j}" for j in range(16)]


def _describe(k, ours, theirs):
    c, s = divmod(k, len(INPUTS))
    pairs = zip(WORDS, struct.iter_unpack("<I", ours), struct.iter_unpack("<I", _seen(theirs)))
    diffs = [f"{name} ours 0x{a:08X} qemu 0x{b:08X}" for name, (a,), (b,) in pairs if a != b]
    return f"case {CASES[c][0]} input {s}: " + "; ".join(diffs[:8])


def _seen(record):
    """The record with the FPSCR bits our side cannot show cleared."""
    at = 4 * WORDS.index("fpscr")
    fpscr = struct.unpack_from("<I", record, at)[0] & ~FPSCR_UNSEEN
    return record[:at] + struct.pack("<I", fpscr) + record[at + 4:]


def test_every_form_equals_qemus_cortex_m55(program):
    theirs = _qemu_records(program)
    ours = _our_records(program)[0]
    assert len(theirs) == len(ours) == len(CASES) * len(INPUTS)
    wrong = [_describe(k, a, b) for k, (a, b) in enumerate(zip(ours, theirs)) if a != _seen(b)]
    assert not wrong, "\n".join(wrong)


def test_every_form_of_the_executor_is_judged(program):
    """Each entry of the executor's table ran in the judged program (none runs unjudged)."""
    from n6board.dk import mve
    executed = _our_records(program)[1]
    assert {f.name for f in mve.FORMS} - set(executed) == set()
