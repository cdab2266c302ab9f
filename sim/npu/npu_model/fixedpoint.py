"""The fixed-point output stage every compute unit shares: a right shift with the unit's rounding,
the optional ReLU, then saturation (or wrap-around) to the unit's output width. Values are numpy
int64 arrays; the width of a value on the stream switch is the unit's OBYTES (1, 2 or 3 bytes).

Rounding (ROUND and bit 0 of ORNDMODE; bit 1 of ORNDMODE is the ReLU, which ST's header applies
before rounding: the same values either way) is chosen by exact-match rate against LiteRT, the choice
a board measurement can overturn. Measured with bench/npu_layers.py over every compared epoch of both
samples (nucleo_mnv1: 27 epochs, 959,973 elements; blazeface: 21 epochs, 440,832), input seeds 0-5,
each rounding applied to the convolution (C) and arithmetic/pooling (A) units' ROUND=1 shifts:

| ROUND | ORNDMODE.0 | choice            | exact-match rate, mean of seeds 0-5 (nucleo_mnv1 / blazeface)          |
|-------|------------|-------------------|-------------------------------------------------------------------------|
| 0     | any        | floor (truncate)  | -- (ST's own suboff units: exact offsets need no rounding)              |
| 1     | 1          | half to even      | 98.454% / 98.873% (C and A; higher than half away in 11 of 12 runs)    |
|       |            | alternatives      | half away (former choice) 98.448 / 98.860; half up 98.447 / 98.860;    |
|       |            |                   | C half to even, A half away 98.453 / 98.873; C half away, A half to    |
|       |            |                   | even 98.449 / 98.860; C or A half up 98.448 / 98.860                   |
| 1     | 0          | not modelled      | no public sample uses it: a stop naming the field                        |

The gain is the convolution units' (OUTSHIFT 1-3: ties are frequent; the arithmetic units' shifts of
12-20 bits hardly meet one): their ties are what tells the modes apart, and half to even matches LiteRT's
single rounding best. ATON.h gives ORNDMODE two values without naming them; the pooling unit's ROUND
reads "round-to-nearest (round up)", which no sample can test (its only rounded pool, nucleo_mnv1's
global average, is 100% exact under every mode). The largest error per epoch is the same under every
mode: 1 LSB, except where the 16-bit intermediate saturates (arithacc.py's table).

The rates are of the whole requantisation chain (convolution output shift, two arithmetic units);
every remaining difference is 1 LSB and spread evenly over the tensor (ST's two-stage fixed-point
scale against TFLite's single multiplier), so no rounding choice reaches 100%."""
import numpy as np

PLAIN_SHIFTER = 16      # a unit's input shift field (FSHIFT) of a shift by 0: ll_aton stores shift + 16 (ATON_SHIFT)


class NotModelled(Exception):
    """A configuration no public sample exercises: the run stops naming the unit's field."""


def shift_right(values, shift, rounding):
    """values / 2**shift with `rounding` ("floor" or "half_even"); a negative shift is a left shift."""
    values = np.asarray(values, dtype=np.int64)
    if shift <= 0:
        return values << -shift
    floor = values >> shift
    if rounding == "floor":
        return floor
    rest, half = values & ((np.int64(1) << shift) - 1), np.int64(1) << (shift - 1)
    return floor + ((rest > half) | (rest == half) & (floor & 1 == 1))


def rounding_of(round_enabled, mode_bit, field):
    """The rounding a unit's ROUND flag and ORNDMODE bit 0 select (see the table above); `field`
    names the ORNDMODE field for the stop ("CONVACC0: DFORMAT.ORNDMODE")."""
    if not round_enabled:
        return "floor"
    if mode_bit:
        return "half_even"
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
