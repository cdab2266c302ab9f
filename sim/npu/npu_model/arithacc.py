"""The arithmetic unit (ARITH): per stream element x (and y on the second port with DUALIN), each
read as a signed value of INSHIFTER.FBYTESX/FBYTESY bytes (ST reads an unsigned 8-bit stream,
which arrives zero-extended, at 2 bytes: nucleo_mnv1's input conversion),
A*x/2^AX + B*y/2^BY + C*2^C, then the output stage (fixedpoint.py: SHIFT.RES, rounding, ReLU,
saturation). ST's requantisation after every convolution is a chain of these: a per-channel
multiply (A vector), a per-channel 32-bit bias (COMBINEBC), a zero-point offset (scalars).

Coefficients. Scalars from COEFFAC/COEFFB, or, for each of A, B, C whose CTRL.COEFFx is set, from
the unit's coefficient memory (MEM, 0x400 on: entry i is two words, A | B << 16 then C, 16-bit
signed each; ll_aton.c's facts). COMBINEBC: B is not a multiplier but the high half of a 32-bit
constant B << 16 | C. Which entry an element uses is counter-driven (ll_aton.c sets the counters
for each broadcast: channel, height, width, scalar); the stated model, one rule for all of them:
the address starts at 0; after each element it moves by INCOFFSET every INCCNT+1 elements, unless
an enabled counter k (CNT1..3, wrapping every RSTCNTk+1 elements) wraps: then by ADDROFFSET's
OFFSETk (9-bit signed; the highest wrapping counter wins).

Shift directions, chosen on blazeface's residual adds (bench/npu_layers.py, epochs 72/74/76/78,
BY=1, C=0/4/4/5) against LiteRT:

| choice                        | exact match (epochs 72, 74, 76, 78)  | alternative and its rates                |
|-------------------------------|--------------------------------------|------------------------------------------|
| AX, BY divide                 | 99.56%, 99.38%, 99.15%, 93.67%       | multiply: 53.47%, 50.57%, 60.06%, 47.87% |
| C multiplies                  | (same)                               | divide: 99.56%, 7.36%, 60.06%, 2.04%     |
| terms aligned, one rounding   | (same)                               | each term floored or rounded first:      |
|                               |                                      | identical rates (BY=1)                   |

No sample sets AX with a dual input, so its direction rests on the symmetry with BY.

Output width: OBYTES as set, saturated when SAT. ST's requantisation chain scales a convolution's
16-bit output per channel into a 16-bit intermediate (OBYTES 2, SAT 1) before the 32-bit bias; on
random images that intermediate saturates (nucleo_mnv1, seed 31: 108 elements in epoch 12, 4 in 26)
and LiteRT, which does not, differs there (bench/npu_layers.py, nucleo_mnv1 epochs 12 and 26, seed 31):

| choice                          | exact match, largest error (12; 26) | alternative and its rates            |
|---------------------------------|-------------------------------------|--------------------------------------|
| 16-bit intermediate, saturated  | 99.31%, 98 LSB; 99.38%, 52 LSB      | a 24-bit intermediate (saturated or  |
| (OBYTES 2 as set)               |                                     | not): 99.52%, 1 LSB; 99.44%, 1 LSB   |

LiteRT prefers the wider value (end to end on the simulated board, nucleo_mnv1 seeds 0-5: logits
within 1-3 LSB of LiteRT's instead of 3-8), but ATON.h gives the unit's OBYTES as "1 or 2" bytes,
and ST's compiler sizes its chains for 16 bits: of the 2,821 per-channel bias entries of units fed
by a 16-bit scale unit in both samples, all but 4 (nucleo_mnv1 epochs 12, 26, 27) reach their whole int8 output
range with the intermediate inside int16. The model keeps the width ST programs; one board run of
nucleo_mnv1 epoch 12 on a random image would settle it.

Not modelled yet (a stop naming the field; no public sample uses them): operations other than
AX_BY_C (ATON.h's ARITHOP: min, max, x*y, logical, comparisons, abs, sign, clip), the input
shifters (INSHIFTER other than a plain pass), CLIPOUT, coefficient entries past 383."""
from dataclasses import dataclass

import numpy as np

from .fixedpoint import PLAIN_SHIFTER, NotModelled, output_stage, rounding_of, signed, to_width
from .units import unit_fields

MEM_OFFSET = 0x400
MEM_ENTRIES = 3 * 128                   # entries addressed without TRANSLATEADDR's second window
OP_AX_BY_C = 0x0


@dataclass(frozen=True)
class ArithConfig:
    dual: bool
    a: object                       # int (scalar) or np.ndarray of coefficient memory entries
    b: object
    c: object
    combine_bc: bool
    shifts: tuple                   # (AX, BY, C)
    result_shift: int
    rounding: str
    relu: bool
    out_bytes: int
    saturate: bool
    counters: tuple                 # ((enabled, reset) x 3), INCCNT, INCOFFSET, (OFFSET1..3)
    in_bytes: tuple = (3, 3)        # INSHIFTER.FBYTESX/Y: the width x and y are read at, signed
    unmodelled: tuple = ()
    name: str = "ARITH"

    @classmethod
    def from_registers(cls, registers, memory=(), name="ARITH"):
        """From a decoded unit's registers and its coefficient memory [(AB word, C word)]."""
        f = unit_fields("ARITH", registers)
        ctrl, shift = f["CTRL"], f["SHIFT"]
        unmodelled = []
        if ctrl["OP"] != OP_AX_BY_C or ctrl["LOGICALOP"]:
            unmodelled.append(f"CTRL.OP=0x{ctrl['OP']:X}")
        if ctrl["CLIPOUT"]:
            unmodelled.append("CTRL.CLIPOUT")
        sh = f["INSHIFTER"]
        for axis in "XY":
            if sh[f"FSHIFT{axis}"] != PLAIN_SHIFTER or sh[f"FROUND{axis}"] or sh[f"FSAT{axis}"]:
                unmodelled.append(f"INSHIFTER {axis}")
        mem = np.array(list(memory) or [(0, 0)], dtype=np.int64).reshape(-1, 2)
        vec_a = signed(mem[:, 0] & 0xFFFF, 16)
        vec_b = signed(mem[:, 0] >> 16 & 0xFFFF, 16)
        vec_c = mem[:, 1] & 0xFFFF                                       # signed below, unless combined
        a = vec_a if ctrl["COEFFA"] else signed(f["COEFFAC"]["A"], 16)
        b = vec_b if ctrl["COEFFB"] else signed(f["COEFFB"]["B"], 16)
        c = vec_c if ctrl["COEFFC"] else f["COEFFAC"]["C"]
        if ctrl["COMBINEBC"]:
            c = (np.asarray(b) << 16) + np.asarray(c)                   # B:C, a signed 32-bit constant
        else:
            c = signed(np.asarray(c), 16)
        offsets = f["ADDROFFSET"]
        counters = (tuple((ctrl[f"CNT{k}"], f[f"RSTCNT{k}"]["RSTCNT"]) for k in (1, 2, 3)),
                    f["INCCNT"]["INCVAL"], f["INCOFFSET"]["VAL"],
                    tuple(signed(offsets[f"OFFSET{k}"], 9) for k in (1, 2, 3)))
        return cls(bool(ctrl["DUALIN"]), a, b, c, bool(ctrl["COMBINEBC"]), (shift["AX"], shift["BY"], shift["C"]),
                   shift["RES"], rounding_of(ctrl["ROUND"], ctrl["ORNDMODE"] & 1, f"{name}: CTRL.ORNDMODE"),
                   bool(ctrl["ORNDMODE"] & 2), ctrl["OBYTES"], bool(ctrl["SAT"]), counters,
                   (sh["FBYTESX"], sh["FBYTESY"]), tuple(unmodelled), name)


def coefficient_memory(regs, unit_base, entries=MEM_ENTRIES):
    """[(AB word, C word)] of a unit's coefficient memory from the register file ({offset: value})."""
    at = unit_base + MEM_OFFSET
    return [(regs.get(at + 8 * i, 0), regs.get(at + 8 * i + 4, 0)) for i in range(entries)]


def addresses(cfg, count):
    """The coefficient entry of each of `count` stream elements (the counter rule above)."""
    (c1, c2, c3), inccnt, incoffset, offsets = cfg.counters
    after = np.arange(1, count + 1, dtype=np.int64)
    step = np.where(after % (inccnt + 1) == 0, incoffset, 0)
    for (enabled, reset), offset in zip((c1, c2, c3), offsets):
        if enabled:
            step = np.where(after % (reset + 1) == 0, offset, step)
    address = np.concatenate([[0], np.cumsum(step)[:-1]]) % 512
    if address.max(initial=0) >= MEM_ENTRIES:
        raise NotModelled(f"{cfg.name}: coefficient entries past {MEM_ENTRIES - 1} are not modelled")
    return address


def compute(x, cfg, y=None):
    """The unit's output for the stream elements x (and y with DUALIN), in stream order."""
    if cfg.unmodelled:
        raise NotModelled(f"{cfg.name}: {cfg.unmodelled[0]} is not modelled")
    x = to_width(np.asarray(x, dtype=np.int64).ravel(), cfg.in_bytes[0], False)
    address = addresses(cfg, x.size) if any(isinstance(v, np.ndarray) for v in (cfg.a, cfg.b, cfg.c)) else None
    coeff = lambda v: v[address] if isinstance(v, np.ndarray) and v.ndim else np.int64(v)
    ax, by, cs = cfg.shifts
    top = max(ax, by)
    total = (coeff(cfg.a) * x << top - ax) + (coeff(cfg.c) << top + cs)
    if cfg.dual:
        if y is None:
            raise NotModelled(f"{cfg.name}: DUALIN set but nothing reaches its port 1")
        total = total + (coeff(cfg.b) * to_width(np.asarray(y, dtype=np.int64).ravel(), cfg.in_bytes[1], False)
                         << top - by)
    return output_stage(total, cfg.result_shift + top, cfg.rounding, cfg.relu, cfg.out_bytes, cfg.saturate)
