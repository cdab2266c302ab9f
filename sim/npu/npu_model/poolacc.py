"""The pooling unit (POOL): one frame of features [H, W, BSIZE] gives [OH, OW, BSIZE]: the maximum
or minimum of each WINX x WINY window (STRDX/STRDY apart, padded positions left out), or, for the
global types, of the whole frame; global average is the frame's sum times MULVAL through the
output stage (CTRL.OUTSHIFT, rounding, ReLU, saturation: fixedpoint.py), ST's multiply-and-shift
for 1/(H*W) (nucleo_mnv1: MULVAL 21400, OUTSHIFT 12 on 7x7 leaves a 16-bit average with 8
fraction bits). Features are read as signed values of CTRL.FBYTES bytes. Configuration: a
decoded unit's fields by ATON.h name.

Evidence (bench/npu_layers.py): blazeface's three 2x2 max pools equal LiteRT's MAX_POOL_2D
outputs exactly; nucleo_mnv1's global average, with the arithmetic units after it in its epoch,
equals LiteRT's MEAN output exactly (256 of 256).

Not modelled yet (a stop naming the field): the windowed average (TYPE 2: how padding counts),
the input shifter (FSHIFT other than a plain pass), crops inside the frame."""
from dataclasses import dataclass

import numpy as np

from .fixedpoint import PLAIN_SHIFTER, NotModelled, output_stage, rounding_of, to_width
from .units import unit_fields

MAX, MIN, AVG, GMAX, GMIN, GAVG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA     # ATON.h's POOLTYPE values


@dataclass(frozen=True)
class PoolConfig:
    kind: int
    window: tuple                   # (WINY, WINX)
    strides: tuple                  # (STRDY, STRDX)
    pads: tuple                     # (top, bottom, left, right)
    channels: int                   # BSIZE
    width: int
    height: int
    out_width: int
    out_height: int
    mulval: int
    outshift: int
    rounding: str
    relu: bool
    out_bytes: int
    saturate: bool
    in_bytes: int = 3               # CTRL.FBYTES: the width features are read at, signed
    unmodelled: tuple = ()
    name: str = "POOL"

    @classmethod
    def from_registers(cls, registers, name="POOL"):
        f = unit_fields("POOL", registers)
        ctrl, dims, rnd = f["CTRL"], f["PDIMS"], f["RNDCTRL"]
        b = dims["BSIZE"] or 1
        width, height = f["FDIMS"]["FEATX"] // b, f["FDIMS"]["FEATY"]
        unmodelled = []
        if ctrl["TYPE"] not in (MAX, MIN, GMAX, GMIN, GAVG):
            unmodelled.append(f"CTRL.TYPE=0x{ctrl['TYPE']:X}")
        if ctrl["FSHIFT"] != PLAIN_SHIFTER or ctrl["FROUND"] or ctrl["FSAT"]:
            unmodelled.append("the input shifter (CTRL.FSHIFT/FROUND/FSAT)")
        x, y = f["XCROP"], f["YCROP"]
        if x["LCROP"] or y["TCROP"] or x["RCROP"] not in (0, width * b - 1) or y["BCROP"] not in (0, height - 1):
            unmodelled.append("a crop inside the frame (XCROP/YCROP)")
        return cls(ctrl["TYPE"], (dims["WINY"], dims["WINX"]), (dims["STRDY"], dims["STRDX"]),
                   (dims["TPAD"], dims["BPAD"], dims["LPAD"], dims["RPAD"]), b, width, height,
                   f["OUTDIMS"]["FEATX"], f["OUTDIMS"]["FEATY"], f["MULVAL"]["MULVAL"], ctrl["OUTSHIFT"],
                   rounding_of(ctrl["ROUND"], rnd["ORNDMODE"] & 1, f"{name}: RNDCTRL.ORNDMODE"),
                   bool(rnd["ORNDMODE"] & 2), rnd["OBYTES"], bool(ctrl["SAT"]), ctrl["FBYTES"], tuple(unmodelled), name)


def pool(features, cfg):
    """One output frame of the unit, as a flat array in (row, column, channel) order."""
    if cfg.unmodelled:
        raise NotModelled(f"{cfg.name}: {cfg.unmodelled[0]} is not modelled")
    x = to_width(features, cfg.in_bytes, False).reshape(cfg.height, cfg.width, cfg.channels)
    if cfg.kind == GAVG:
        return output_stage(x.sum(axis=(0, 1)) * cfg.mulval, cfg.outshift, cfg.rounding, cfg.relu, cfg.out_bytes,
                            cfg.saturate)
    pick = np.max if cfg.kind in (MAX, GMAX) else np.min
    if cfg.kind in (GMAX, GMIN):
        out = pick(x, axis=(0, 1))
    else:
        top, bottom, left, right = cfg.pads
        fill = np.iinfo(np.int64).min if cfg.kind == MAX else np.iinfo(np.int64).max
        padded = np.full((cfg.height + top + bottom, cfg.width + left + right, cfg.channels), fill, dtype=np.int64)
        padded[top:top + cfg.height, left:left + cfg.width] = x
        (wy, wx), (sy, sx) = cfg.window, cfg.strides
        oh = (padded.shape[0] - wy) // sy + 1
        ow = (padded.shape[1] - wx) // sx + 1
        windows = [padded[dy:dy + (oh - 1) * sy + 1:sy, dx:dx + (ow - 1) * sx + 1:sx]
                   for dy in range(wy) for dx in range(wx)]
        out = pick(np.stack(windows), axis=0)
    return output_stage(out, cfg.outshift, cfg.rounding, cfg.relu, cfg.out_bytes, cfg.saturate).ravel()
