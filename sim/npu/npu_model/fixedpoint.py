"""The fixed-point output stage every compute unit shares: a right shift with the unit's rounding,
the optional ReLU, then saturation (or wrap-around) to the unit's output width. Values are numpy
int64 arrays; the width of a value on the stream switch is the unit's OBYTES (1, 2 or 3 bytes).

Rounding (ROUND and bit 0 of ORNDMODE; bit 1 of ORNDMODE is the ReLU) was chosen by exact-match
rate against LiteRT on real samples, the choice a board measurement can overturn:

| ROUND | ORNDMODE.0 | choice            | alternatives (exact-match rate, nucleo_mnv1 epoch 3 vs LiteRT)          |
|-------|------------|-------------------|-------------------------------------------------------------------------|
| 0     | any        | floor (truncate)  | -- (ST's own suboff units: exact offsets need no rounding)              |
| 1     | 1          | half away from 0  | 98.912% (chosen); half to even 98.904%; half up 98.890%; floor 64.24%  |
| 1     | 0          | not modelled      | no public sample uses it: a stop naming the field                        |

Over a whole model the choice hardly shows: ST's nucleo_mnv1 image end to end on the simulated
board (bench/npu_image.py, six random images, every epoch's rounding switched together), mean
exact-match rate over the 27 compared epochs / of the logits / largest logit error / softmax top-1:
half away from 0 59.39% / 18.48% / 8 LSB / 6 of 6; half to even 59.43% / 18.65% / 8 LSB / 6 of 6;
half up 59.35% / 17.33% / 9 LSB / 6 of 6. The differences are within what one image changes, so
the per-epoch rates above keep the choice; a board measurement can settle it.

The rates are of the whole requantisation chain (convolution output shift, two arithmetic units);
every remaining difference is 1 LSB and spread evenly over the tensor (ST's two-stage fixed-point
scale against TFLite's single multiplier), so no rounding choice reaches 100%."""
import numpy as np


class NotModelled(Exception):
    """A configuration no public sample exercises: the run stops naming the unit's field."""


def shift_right(values, shift, rounding):
    """values / 2**shift with `rounding` ("floor" or "half_away"); a negative shift is a left shift."""
    values = np.asarray(values, dtype=np.int64)
    if shift <= 0:
        return values << -shift
    if rounding == "floor":
        return values >> shift
    half = np.int64(1) << (shift - 1)
    magnitude = (np.abs(values) + half) >> shift
    return np.where(values < 0, -magnitude, magnitude)


def rounding_of(round_enabled, mode_bit, field):
    """The rounding a unit's ROUND flag and ORNDMODE bit 0 select (see the table above); `field`
    names the ORNDMODE field for the stop ("CONVACC0: DFORMAT.ORNDMODE")."""
    if not round_enabled:
        return "floor"
    if mode_bit:
        return "half_away"
    raise NotModelled(f"{field} bit 0 = 0 with ROUND=1 is not modelled (no public sample uses it)")


def signed(values, bits):
    """The two's-complement value of the low `bits` bits (an int or an int64 array)."""
    half = 1 << (bits - 1)
    return (values + half) % (2 * half) - half


def to_width(values, nbytes, saturate):
    """Signed values of `nbytes` bytes: clipped when `saturate`, else wrapped (two's complement)."""
    bits = 8 * nbytes
    values = np.asarray(values, dtype=np.int64)
    if saturate:
        return np.clip(values, -(1 << (bits - 1)), (1 << (bits - 1)) - 1)
    return signed(values, bits)


def output_stage(values, shift, rounding, relu, nbytes, saturate):
    """Shift with rounding, ReLU, then the output width: the last step of every unit."""
    out = shift_right(values, shift, rounding)
    if relu:
        out = np.maximum(out, 0)
    return to_width(out, nbytes, saturate)
