"""What every device model is: a block of 32-bit registers at an address, reset values, and the
register file behaviour (a read returns what was last written) unless the model says otherwise."""


class Device:
    """A device at `base` (its non-secure address for peripherals) spanning `size` bytes.
    Subclasses override `read`/`write` for the registers that behave, and call the default for the
    rest. Offsets are word-aligned; the bus merges byte and halfword accesses."""
    name = "device"
    size = 0x400
    RESET: dict[int, int] = {}   # register offset → reset value

    def __init__(self, base):
        self.base = base
        self.regs = dict(self.RESET)

    def read(self, offset):
        return self.regs.get(offset, 0)

    def write(self, offset, value):
        self.regs[offset] = value

    def stored(self, offset):
        """The register's last written value, without a read's side effects."""
        return self.regs.get(offset, 0)


def bits(value, lsb, width):
    return value >> lsb & ((1 << width) - 1)
