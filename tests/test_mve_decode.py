"""The Helium executor's decode table against the GNU assembler's encodings: each form it carries
out is recognised under its name, and neighbours it does not carry out (same opcode space, one
field apart) are not taken for one of them, so they stop the run in one line instead of running
half-understood."""
import struct

import pytest

from n6board.dk import mve
from thumb import assemble

RECOGNISED = {
    "vldrw.u32 q1, [r1], #16": "VLDR/VSTR (contiguous)",
    "vstrb.8 q2, [r1, #-3]!": "VLDR/VSTR (contiguous)",
    "vldrh.u16 q3, [sp, #2]": "VLDR/VSTR (contiguous)",
    "vldrb.s32 q3, [r0], #4": "VLDR/VSTR (widening, narrowing)",
    "vstrh.32 q3, [r0, #-2]!": "VLDR/VSTR (widening, narrowing)",
    "vldrw.u32 q1, [r1, q0, uxtw #2]": "VLDR/VSTR (gather, scatter)",
    "vstrb.8 q1, [r1, q0]": "VLDR/VSTR (gather, scatter)",
    "vld43.32 {q4, q5, q6, q7}, [r12]!": "VLD2/VLD4, VST2/VST4 (interleaving)",
    "vst21.16 {q0, q1}, [r2]": "VLD2/VLD4, VST2/VST4 (interleaving)",
    "vdup.8 q3, r5": "VDUP",
    "vorr q2, q1, q3": "VAND/VBIC/VORR/VORN/VEOR",
    "vsub.i32 q2, q2, r3": "VADD/VSUB.I (scalar)",
    "vqsub.u8 q3, q2, q1": "VQADD/VQSUB (vector)",
    "vqshl.u8 q1, q1, #3": "VQSHL (immediate)",
    "vqmovnt.u16 q0, q1": "VQMOVN",
    "vmovnt.i16 q0, q1": "VMOVN",
    "vshr.u16 q1, q2, #16": "VSHR/VSHL (immediate)",
    "vrshl.s8 q1, r2": "VSHL/VRSHL, VQSHL/VQRSHL (scalar)",
    "vqrdmulh.s32 q1, q2, r3": "VQDMULH/VQRDMULH (scalar)",
    "vmladavx.s16 r0, q1, q2": "VMLAV{A}{X}",
    "vmlas.s32 q1, q2, r3": "VMLA/VMLAS (scalar)",
    "vfmas.f32 q2, q3, r0": "VFMA/VFMAS.F32 (scalar)",
    "vminnmav.f32 r5, q3": "VMAXNMV/VMINNMV.F32",
    "vcvtm.u32.f32 q1, q1": "VCVT{A,N,P,M} F32->32-bit integer",
    "vcvt.s32.f32 q3, q3, #15": "VCVT F32<->fixed point",
    "vcmp.u32 hi, q1, q2": "VCMP.I (vector)",
    "vqrshl.s32 q1, r2": "VSHL/VRSHL, VQSHL/VQRSHL (scalar)",
    "vminav.s32 r0, q1": "VMAXV/VMINV, VMAXAV/VMINAV",
    "vmlaldavx.s16 r0, r1, q1, q2": "VMLALV{A}{X}",
    "vpsel q3, q3, q1": "VPSEL",
    "vctp.16 r1": "VCTP",
    "vmrs r4, p0": "VMRS P0/VPR",
    "dlstp.32 lr, r2": "DLS/DLSTP",
    "lctp": "LCTP",
    "vpt.f32 le, q2, r6": "VPT.F32 (scalar)",          # opens a block: the next one is predicated
    "vaddt.i32 q0, q0, q0": "VADD/VSUB.I (vector)",
}

# same spaces, not carried out: each must decode to nothing
NOT_CARRIED_OUT = [
    "vrshr.s32 q1, q2, #3", "vsli.32 q1, q2, #3", "vsri.32 q1, q2, #3",
    "vqshl.s32 q1, q2, q3", "vshllb.s8 q1, q2, #8",
    "vrmlalvh.s32 r0, r1, q0, q1", "vmlsdav.s16 r0, q1, q2", "vmlsldav.s16 r0, r1, q1, q2", "vqrshrnb.s16 q0, q1, #3",
    "vqdmladh.s16 q0, q1, q2", "vhadd.s8 q0, q1, q2", "vrhadd.u16 q0, q1, q2", "vhsub.s32 q0, q1, q2",
    "vabd.s8 q0, q1, q2", "vmulh.s32 q0, q1, q2", "vrmulh.s32 q0, q1, q2", "vmullb.s16 q0, q1, q2",
    "vqabs.s8 q0, q1", "vqneg.s16 q0, q1", "vcls.s8 q0, q1", "vclz.i16 q0, q1", "vrev32.8 q0, q1",
    "vmov.i32 q0, #0", "vorr.i32 q0, #0x100", "vbic.i16 q0, #0xff", "vmaxa.s8 q0, q1",
    "vaddlv.s32 r0, r1, q1", "vstrw.32 q0, [q1, #4]", "vldrw.u32 q0, [q1, #8]!",
    "vldrd.u64 q0, [r1, q2]", "vfma.f16 q0, q1, q2", "vadd.f16 q0, q1, q2", "vcmp.f16 eq, q0, q1",
    "vrintn.f32 q0, q1", "vcvtb.f16.f32 q0, q1", "vcadd.i32 q0, q1, q2, #90", "vcmla.f32 q0, q1, q2, #0",
    "vbrsr.32 q0, q1, r2", "vsbc.i32 q0, q1, q2", "vadc.i32 q0, q1, q2", "vmov r0, r1, q0[2], q0[0]",
    "viwdup.u8 q0, r0, r1, #1", "vshlc q0, r0, #4", "vqdmullb.s16 q0, q1, q2",
]


def _encodings(tmp_path, lines):
    code = assemble(tmp_path, "\n".join(lines) + "\n", 0)
    assert len(code) == 4 * len(lines)
    return [a << 16 | b for a, b in struct.iter_unpack("<HH", code)]


def test_each_form_is_recognised_by_its_name(tmp_path):
    wrong = {text: (form.name if form else None)
             for text, insn in zip(RECOGNISED, _encodings(tmp_path, list(RECOGNISED)))
             if (form := mve.decode(insn)) is None or form.name != RECOGNISED[text]}
    assert not wrong


@pytest.mark.parametrize("text", NOT_CARRIED_OUT)
def test_a_neighbour_the_executor_lacks_is_not_taken_for_a_form_it_has(tmp_path, text):
    (insn,) = _encodings(tmp_path, [text])
    form = mve.decode(insn)
    assert form is None, f"{text} ({insn:08x}) decoded as {form.name}"
