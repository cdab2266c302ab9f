"""The activation unit (ACTIV) as a function evaluator (CTRL.TYPE = FUNCTION): each stream value
x, read as a signed value of CTRL.FBYTES bytes, picks a row (A, B, C) of the unit's coefficient
table and gives A*x*x + (B << FUNC.BSHIFT)*x + (C << FUNC.CSHIFT) through the output stage
(FUNC.OUTSHIFT, rounding, ReLU, saturation to CTRL.OBYTES: fixedpoint.py). Configuration: a
decoded unit's fields by ATON.h name, and the two tables the runtime writes into the unit
(ll_aton.c's LL_Activacc_Init; offsets from ATON.h's ACTIV_ROM values): ROM0, 32 one-byte entries
from 0x400, one per outer segment; ROM1, 64 rows from 0x800, 8 bytes each: A (bits 15:0) and B
(31:16) of the first word, C (15:0) of the second.

The row of a value (a stated model, the one judged below): x shifted left by ACTIVPARAM.FUNC (the
range normalisation) and offset by 2^15 (signed input, FUNC.SIGNEDOP) is a 16-bit position; its
top FUNC.BWIDTH bits index ROM0 (2^BWIDTH outer segments); a ROM0 entry holds in bits 7:6 the
number n of the position's next bits that choose one of 2^n inner segments, in bits 5:0 the
segment's first ROM1 row.

Evidence: the one public image programming this unit that we know of, Kavin-Re/Haptic-Sense
(commit d504597f, firmware/Model/STM32N6570-DK/network_ecblobs.h: a 17-32-16-1 MLP whose
sigmoid runs in ACTIV0, FBYTES 1, BWIDTH 4, FUNC 8, BSHIFT 3, CSHIFT 8, OUTSHIFT 15, 16 outer
segments over 47 rows): evaluated over the 256 int8 logits against onnxruntime's int8 sigmoid
(QLinearSigmoid) on the logit's quantisation (scale 0.112649 from network.c's scales and the
project's requantisation multipliers, zero point 33; output 1/256, -128):

| choice                                                  | exact of 256 | max error |
|---------------------------------------------------------|--------------|-----------|
| the model above, ROUND=1 half to even (fixedpoint.py)   | 256          | 0         |
| the same, half up                                       | 256          | 0         |
| the same, floor                                         | 231          | 1 LSB     |
| without the A term                                      | 223          | 23 LSB    |
| B not shifted by BSHIFT                                 | 162          | 253 LSB   |
| the polynomial on the normalised x << FUNC              | 161          | 255 LSB   |
| ROM0 indexed by x's top bits in two's complement order  | 68           | 255 LSB   |

(tests/test_npu_activacc.py, opt-in with a checkout of that project.) This table cannot tell the
unit's rounding of exact ties apart: half to even, the other units' choice, is kept. The whole
blob run by the model's epoch controller gives that project's int8 reference answers on 185 of
200 seeded inputs; each difference is in the logit the convolution and arithmetic units compute
(ST's two-stage requantisation), the sigmoid of the reference's logit is the reference's output.

Not modelled (a stop naming the field): the ReLU types (RELU, PRELU, TRELU: ACTIVPARAM.PARAM's
meaning is not public), an input shift or subtraction (CTRL.FSHIFT, FSUB), unsigned inputs,
FBYTES and FUNC moving the position past 16 bits. ACTIVPARAM.PARAM is not used by the function
evaluator here (32,640 in the judged table: its role is not known)."""
from dataclasses import dataclass

import numpy as np

from .fixedpoint import PLAIN_SHIFTER, NotModelled, output_stage, rounding_of, signed, to_width
from .units import unit_fields

FUNCTION = 3                        # ATON.h's ACTIVTYPE_FUNCTION
TYPES = {0: "RELU", 1: "PRELU", 2: "TRELU"}
ROM0_OFFSET, ROM1_OFFSET = 0x400, 0x800     # ATON.h's ACTIV_ROM_OFFSET_0 and _1
ROM0_ENTRIES, ROM1_ROWS = 32, 64
POSITION_BITS = 16


def rom_tables(regs, unit_base):
    """(ROM0 entries, ROM1 rows [(AB word, C word)]) of a unit from the register file ({offset: value})."""
    rom0 = [regs.get(unit_base + ROM0_OFFSET + 4 * i, 0) & 0xFF for i in range(ROM0_ENTRIES)]
    at = unit_base + ROM1_OFFSET
    return rom0, [(regs.get(at + 8 * i, 0), regs.get(at + 8 * i + 4, 0)) for i in range(ROM1_ROWS)]


@dataclass(frozen=True)
class ActivConfig:
    in_bytes: int
    normalise: int                  # ACTIVPARAM.FUNC
    segment_bits: int               # FUNC.BWIDTH
    rom0: tuple
    rows: np.ndarray                # [64, 3]: A, B, C, signed
    shifts: tuple                   # (BSHIFT, CSHIFT)
    outshift: int
    rounding: str
    relu: bool
    out_bytes: int
    saturate: bool
    unmodelled: tuple = ()
    name: str = "ACTIV"

    @classmethod
    def from_registers(cls, registers, tables, name="ACTIV"):
        """From a decoded unit's registers and its tables (rom_tables)."""
        f = unit_fields("ACTIV", registers)
        ctrl, func, param = f["CTRL"], f["FUNC"], f["ACTIVPARAM"]
        unmodelled = []
        if ctrl["TYPE"] != FUNCTION:
            unmodelled.append(f"CTRL.TYPE={TYPES[ctrl['TYPE']]}")
        if ctrl["FSHIFT"] != PLAIN_SHIFTER or f["FSUB"]["FSUB"]:
            unmodelled.append("an input shift or subtraction (CTRL.FSHIFT, FSUB)")
        if not func["SIGNEDOP"]:
            unmodelled.append("FUNC.SIGNEDOP=0")
        if 8 * ctrl["FBYTES"] + param["FUNC"] > POSITION_BITS:
            unmodelled.append(f"CTRL.FBYTES={ctrl['FBYTES']} with ACTIVPARAM.FUNC={param['FUNC']}")
        rom0, rom1 = tables
        words = np.array(rom1, dtype=np.int64)
        rows = np.stack([signed(words[:, 0] & 0xFFFF, 16), signed(words[:, 0] >> 16 & 0xFFFF, 16),
                         signed(words[:, 1] & 0xFFFF, 16)], axis=1)
        return cls(ctrl["FBYTES"], param["FUNC"], func["BWIDTH"], tuple(rom0), rows,
                   (func["BSHIFT"], func["CSHIFT"]), func["OUTSHIFT"],
                   rounding_of(ctrl["ROUND"], ctrl["ORNDMODE"] & 1, f"{name}: CTRL.ORNDMODE"),
                   bool(ctrl["ORNDMODE"] & 2), ctrl["OBYTES"], bool(ctrl["SAT"]), tuple(unmodelled), name)


def row_of(x, cfg):
    """The ROM1 row of each value (the segment rule above)."""
    position = (x << cfg.normalise) + (1 << (POSITION_BITS - 1))
    outer_shift = POSITION_BITS - cfg.segment_bits
    entry = np.asarray(cfg.rom0, dtype=np.int64)[position >> outer_shift]
    inner_bits, first = entry >> 6, entry & 0x3F
    inner = position >> (outer_shift - inner_bits) & ((1 << inner_bits) - 1)
    row = first + inner
    if row.max(initial=0) >= len(cfg.rows):
        raise NotModelled(f"{cfg.name}: a ROM0 entry pointing past ROM1's {len(cfg.rows)} rows")
    return row


def evaluate(x, cfg):
    """The unit's output for the stream values x, in stream order."""
    if cfg.unmodelled:
        raise NotModelled(f"{cfg.name}: {cfg.unmodelled[0]} is not modelled")
    x = to_width(np.asarray(x, dtype=np.int64).ravel(), cfg.in_bytes, False)
    a, b, c = cfg.rows[row_of(x, cfg)].T
    bshift, cshift = cfg.shifts
    total = a * x * x + (b << bshift) * x + (c << cshift)
    return output_stage(total, cfg.outshift, cfg.rounding, cfg.relu, cfg.out_bytes, cfg.saturate)
