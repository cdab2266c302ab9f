"""The convolution unit (CONVACC): one frame of features [H, W, depth] and one kernel set of NR
kernels [NR, KH, KW, depth] from its kernel stream give an output frame [OH, OW, NR], plus the
partial sums of the previous unit of a chain (accumulate chaining), then the output stage
(fixedpoint.py). Configuration: the decoded program's fields by ATON.h name (ConvConfig).

Kernel stream layout. Not documented anywhere public; worked out by matching the .raw weights of
ST's real 2.2 samples against their source models' weights (bench/npu_kernel_layout.py prints the
table; ST inflates a depthwise convolution into a dense one, zero off its diagonal, first):

| mode     | choice: one frame (kernel set) of the stream                                  | streams matched exactly   |
|----------|-------------------------------------------------------------------------------|---------------------------|
| normal   | KFILT.TOT items of KH*KW*depth bytes, each one kernel in (row, column, depth) | 52 of 52 (18 nucleo_mnv1, |
|          | order; the unit takes items FIRST..LAST (all NR of them when KFILT.TOT is 1)  | 34 blazeface)             |
| DEEPMODE | TOT/NR blocks of NR kernels (1x1) x depth, each padded to whole 24-bit        | 12 of 12 (10, 2)          |
|          | words; in a block, groups of 8 kernels, depth-major within a group; the unit  |                           |
|          | takes block FIRST/NR                                                          |                           |

Depth slices: the units of a chain (KFILT order) or the passes of one unit over a deeper kernel
take consecutive BTCDEPTH slices. 13 blazeface streams hold no source tensor's bytes in any layout
(ST's own constants: channel padding, a 5x5 kernel split by rows) and are not counted.
Alternatives, streams matched exactly (normal / deep): kernel-major instead of slice-major items
34/52 and 11/12; (depth, row, column) items 25/52 (1x1 kernels cannot tell) and 0/12; deep groups
of 16 or of 4 kernels 1/12 each; deep blocks unpadded 2/12.

Arithmetic (chosen by exact-match rate against LiteRT, bench/npu_layers.py): features, 8-bit (16-bit
with FBYTES=2) values read unsigned or signed as CTRL.FUNSIGNED says (a unit upstream on the switch
may send them wrapped: nucleo_mnv1 epoch 4's pointwise convolution after its depthwise one), minus FSUB
(a 24-bit signed zero point) times kernels, summed in int64; the unit's padding (SAMPLE pads, up
to 2) adds zero-valued features (after FSUB), the zero frame ZFBIAS-valued ones (below). The output shift is
DFORMAT.OUTSHIFT with the rounding fixedpoint.py states; in DEEPMODE with 8-bit features (FBYTES=1)
a pixel's features come in whole 24-bit items, the spare value of the last dropped (nucleo_mnv1
epoch 29: 43 items for depth 128, 99.40% exact; with FBYTES=3 they are packed across pixels);
DFORMAT.INSHIFT scales up the partial sums arriving on port 2 (ST sets it on units without them
too: single-unit epoch 3 of nucleo_mnv1 is 98.91% exact with OUTSHIFT alone, 0.35% with OUTSHIFT+INSHIFT, below 35% with
OUTSHIFT-INSHIFT; the fully connected layer, epoch 31, feeds its own OUTSHIFT-7 output back with
INSHIFT 7). DFORMAT.RAW changes nothing the samples show: every RAW unit but the fully connected
one has OUTSHIFT 0, and that one needs its shift.

Crop, zero frame, padding (stated order, from the one shape the samples allow): the frame's rows
FVCROP.TOP..BOTTOM and columns FHCROP.LEFT..RIGHT (items, whole pixels) are kept, the zero frame
(ZFRAME) goes around them, the unit's padding (SAMPLE) around that. blazeface epoch 4 splits a 5x5
stride-2 kernel by rows: the 2-row part crops 2 rows off the top and adds 1 zero-frame and 1 padding
row below, which gives its 64 output rows only in that order. The zero frame's features are ZFBIAS
(16-bit signed), the padding's 0 (both after FSUB): every sample use of ZFBIAS is a 1x1 unit kernel
padding channels with -128 (blazeface, 11 epochs), which cannot tell a feature value from an output
bias; a board can.

Not modelled yet (a stop naming the field): FHCROP bounds inside a pixel, AFILT modes other than
frame-zero, kernels other than 1x1 in DEEPMODE, FSTAT, DSS2MODE, KT1."""
from dataclasses import dataclass

import numpy as np

from .fixedpoint import NotModelled, output_stage, rounding_of, signed
from .units import unit_fields

DEEP_GROUP = 8                      # kernels interleaved per depth step in DEEPMODE blocks
DEEP_WORD = 3                       # DEEPMODE blocks are whole 24-bit words
AFILT_FRAMEZERO = 3                 # ll_aton.h's AFILT_MODE_FRAMEZERO


@dataclass(frozen=True)
class ConvConfig:
    kernel_width: int
    kernel_height: int
    kernels: int                    # NR: kernels per set (output channels per frame)
    depth: int                      # BTCDEPTH: feature channels per frame
    width: int                      # feature frame width (FFORMAT.WIDTH is width * depth)
    height: int
    hstride: int
    vstride: int
    pads: tuple                     # (top, bottom, left, right): the unit's padding (SAMPLE), zeros
    fsub: int
    outshift: int
    rounding: str
    relu: bool
    out_bytes: int
    saturate: bool
    inshift: int                    # DFORMAT.INSHIFT: partial sums on port 2 are scaled up by it
    accumulate: bool                # adds the partial sums of input port 2 (not NOSUM)
    kfilt: tuple                    # (TOT, FIRST, LAST)
    deep: bool
    kernels_unsigned: bool
    feature_bytes: int = 1          # DFORMAT.FBYTES
    features_unsigned: bool = False # CTRL.FUNSIGNED
    frame_filter: tuple = ()        # AFILT (TOT, FIRST, LAST) in frame-zero mode: see chain.py
    crop: tuple = ()                # (top, bottom, left, right) pixels kept of the frame, bounds included
    zero_frame: tuple = (0, 0, 0, 0)    # ZFRAME (top, bottom, left, right) pixels around the cropped frame
    zfbias: int = 0                 # ZFBIAS: the value of the zero frame's features (16-bit signed)
    unmodelled: tuple = ()          # settings the arithmetic does not model (the kernel stream does)
    name: str = "CONVACC"

    @classmethod
    def from_registers(cls, registers, name="CONVACC"):
        """From a decoded unit's registers ({register: {field: value}}; absent ones at reset)."""
        f = unit_fields("CONVACC", registers)
        ctrl, dfmt, kfmt, sample, zf = f["CTRL"], f["DFORMAT"], f["KFORMAT"], f["SAMPLE"], f["ZFRAME"]
        depth = kfmt["BTCDEPTH"]
        unmodelled = [f"CTRL.{flag}=1" for flag in ("DSS2MODE", "KT1", "FSTAT") if ctrl[flag]]
        if ctrl["AFILTMODE"] not in (0, AFILT_FRAMEZERO) or ctrl["GEN1SUM"] != (ctrl["AFILTMODE"] == AFILT_FRAMEZERO):
            unmodelled.append(f"CTRL.AFILTMODE={ctrl['AFILTMODE']} with GEN1SUM={ctrl['GEN1SUM']}")
        frame_filter = (f["AFILT"]["TOT"], f["AFILT"]["FIRST"], f["AFILT"]["LAST"]) if ctrl["AFILTMODE"] else ()
        width = f["FFORMAT"]["WIDTH"] // depth
        height = f["FFORMAT"]["HEIGHT"]
        left, right = f["FHCROP"]["LEFT"], min(f["FHCROP"]["RIGHT"], width * depth - 1)
        top, bottom = f["FVCROP"]["TOP"], min(f["FVCROP"]["BOTTOM"], height - 1)
        if left % depth or (right + 1) % depth:
            unmodelled.append("FHCROP inside a pixel")
        crop = (top, bottom, left // depth, (right + 1) // depth - 1)
        if ctrl["DEEPMODE"] and (kfmt["WIDTH"], kfmt["HEIGHT"]) != (1, 1):
            unmodelled.append("DEEPMODE with a kernel other than 1x1")
        pads = (sample["TPAD"], sample["BPAD"], sample["LPAD"], sample["RPAD"])
        zero_frame = (zf["TOP"], zf["BOTTOM"], zf["LEFT"] // depth, zf["RIGHT"] // depth)
        zfbias = f["ZFBIAS"]["ZFBIAS"]
        fsub = f["FSUB"]["FSUB"]
        return cls(kfmt["WIDTH"], kfmt["HEIGHT"], kfmt["NR"], depth, width, height,
                   sample["HSTRD"], sample["VSTRD"], pads, signed(fsub, 24),
                   dfmt["OUTSHIFT"], rounding_of(dfmt["ROUND"], dfmt["ORNDMODE"] & 1, f"{name}: DFORMAT.ORNDMODE"),
                   bool(dfmt["ORNDMODE"] & 2), dfmt["OBYTES"], bool(dfmt["SAT"]), dfmt["INSHIFT"],
                   not ctrl["NOSUM"], (f["KFILT"]["TOT"], f["KFILT"]["FIRST"], f["KFILT"]["LAST"]),
                   bool(ctrl["DEEPMODE"]), bool(ctrl["KUNSIGNED"]), dfmt["FBYTES"], bool(ctrl["FUNSIGNED"]),
                   frame_filter, crop, zero_frame, signed(zfbias, 16), tuple(unmodelled), name)

    @property
    def pixel_items(self):
        """Feature values per pixel on port 0: the depth, or in DEEPMODE with 8-bit features
        (FBYTES=1) the depth in whole 24-bit items, 3 values each, the last one's spare dropped."""
        if self.deep and self.feature_bytes == 1:
            return -(-self.depth // DEEP_WORD) * DEEP_WORD
        return self.depth

    @property
    def padded_shape(self):
        """(rows, columns) of the frame the kernels slide over: cropped, framed, padded."""
        top, bottom, left, right = self.crop or (0, self.height - 1, 0, self.width - 1)
        return (bottom - top + 1 + sum(self.pads[:2]) + sum(self.zero_frame[:2]),
                right - left + 1 + sum(self.pads[2:]) + sum(self.zero_frame[2:]))

    @property
    def output_shape(self):
        rows, columns = self.padded_shape
        return ((rows - self.kernel_height) // self.vstride + 1, (columns - self.kernel_width) // self.hstride + 1,
                self.kernels)

    # -- the kernel stream -------------------------------------------------------------------------
    @property
    def items_per_frame(self):
        tot, first, last = self.kfilt
        return tot if tot > 1 else self.kernels

    @property
    def frame_bytes(self):
        """Bytes of the kernel stream one frame (kernel set) takes, for every unit sharing it."""
        if self.deep:
            return self.items_per_frame // self.kernels * _deep_block(self.kernels, self.depth)
        return self.items_per_frame * self.kernel_height * self.kernel_width * self.depth

    def unit_items(self):
        tot, first, last = self.kfilt
        if tot <= 1:
            return 0, self.kernels
        if last - first + 1 != self.kernels:
            raise NotModelled(f"{self.name}: KFILT {first}..{last} does not select NR={self.kernels} kernels")
        return first, last + 1


def _deep_block(kernels, depth):
    return -(-kernels * depth // DEEP_WORD) * DEEP_WORD


def kernel_frames(stream, cfg, frames):
    """This unit's kernels [frames, NR, KH, KW, depth] from the kernel stream's bytes."""
    dtype = np.uint8 if cfg.kernels_unsigned else np.int8
    data = np.frombuffer(bytes(stream), dtype=dtype)[:frames * cfg.frame_bytes].astype(np.int64)
    if data.size < frames * cfg.frame_bytes:
        raise NotModelled(f"kernel stream: {data.size} bytes for {frames} frames of {cfg.frame_bytes}")
    data = data.reshape(frames, cfg.frame_bytes)
    first, end = cfg.unit_items()
    if cfg.deep:
        block = _deep_block(cfg.kernels, cfg.depth)
        b = first // cfg.kernels
        mine = data[:, b * block:b * block + cfg.kernels * cfg.depth]
        out = np.empty((frames, cfg.kernels, cfg.depth), dtype=np.int64)
        pos = 0
        for g in range(0, cfg.kernels, DEEP_GROUP):
            n = min(DEEP_GROUP, cfg.kernels - g)
            out[:, g:g + n, :] = mine[:, pos:pos + n * cfg.depth].reshape(frames, cfg.depth, n).transpose(0, 2, 1)
            pos += n * cfg.depth
        return out.reshape(frames, cfg.kernels, 1, 1, cfg.depth)
    items = data.reshape(frames, cfg.items_per_frame, cfg.kernel_height, cfg.kernel_width, cfg.depth)
    return items[:, first:end]


def pack_kernel_frames(kernels, cfg):
    """The kernel stream of `kernels` [frames, items, KH, KW, depth] (all the kernel items of the
    units sharing the stream, in stream order): the inverse of kernel_frames."""
    k = np.asarray(kernels, dtype=np.int64)
    if not cfg.deep:
        return (k & 0xFF).astype(np.uint8).tobytes()
    frames, items = k.shape[:2]
    out = bytearray()
    for f in range(frames):
        for b in range(0, items, cfg.kernels):
            block = bytearray()
            for g in range(b, b + cfg.kernels, DEEP_GROUP):
                n = min(DEEP_GROUP, b + cfg.kernels - g)
                block += (k[f, g:g + n, 0, 0, :].T & 0xFF).astype(np.uint8).tobytes()
            out += block + bytes(_deep_block(cfg.kernels, cfg.depth) - len(block))
    return bytes(out)


# -- the arithmetic ------------------------------------------------------------------------------
def accumulate(features, kernels, cfg):
    """The sums of one frame: features [H, W, depth] (as the stream delivers them, before FSUB),
    kernels [NR, KH, KW, depth] → int64 [OH, OW, NR]."""
    if cfg.unmodelled:
        raise NotModelled(f"{cfg.name}: {cfg.unmodelled[0]} is not modelled")
    bits = 16 if cfg.feature_bytes == 2 else 8            # FBYTES=3 carries three 8-bit values an item
    f = np.asarray(features, dtype=np.int64) & (1 << bits) - 1
    if not cfg.features_unsigned:
        f = signed(f, bits)
    f = f.reshape(cfg.height, cfg.width, cfg.pixel_items)[..., :cfg.depth] - cfg.fsub
    if cfg.crop:
        top, bottom, left, right = cfg.crop
        f = f[top:bottom + 1, left:right + 1]
    zt, zb, zl, zr = cfg.zero_frame
    f = np.pad(f, ((zt, zb), (zl, zr), (0, 0)), constant_values=cfg.zfbias)
    top, bottom, left, right = cfg.pads
    padded = np.pad(f, ((top, bottom), (left, right), (0, 0)))
    oh, ow, _ = cfg.output_shape
    k = np.asarray(kernels, dtype=np.int64)
    sums = np.zeros((oh, ow, cfg.kernels), dtype=np.int64)
    for ky in range(cfg.kernel_height):
        for kx in range(cfg.kernel_width):
            window = padded[ky:ky + (oh - 1) * cfg.vstride + 1:cfg.vstride,
                            kx:kx + (ow - 1) * cfg.hstride + 1:cfg.hstride]
            sums += window.reshape(-1, cfg.depth).dot(k[:, ky, kx, :].T).reshape(oh, ow, cfg.kernels)
    return sums


def convolve(features, kernels, cfg, partial=None):
    """One output frame [OH, OW, NR] of the unit: the sums, plus the partial sums on port 2 scaled
    up by INSHIFT when it accumulates, through the output stage."""
    sums = accumulate(features, kernels, cfg)
    if cfg.accumulate:
        if partial is None:
            raise NotModelled("CONVACC accumulates (NOSUM=0) but no partial sums reach its port 2")
        sums = sums + (np.asarray(partial, dtype=np.int64).reshape(sums.shape) << cfg.inshift)
    return output_stage(sums, cfg.outshift, cfg.rounding, cfg.relu, cfg.out_bytes, cfg.saturate)
