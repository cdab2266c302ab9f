"""The boot and security controller (BSEC, 0x4600_9000): the fuse shadow registers the firmware
reads at boot. Word 124 holds the VDDIO configuration fuses; on a configured DK it reads
0x0001_8000 (VDDIO2/VDDIO3 at 1.8 V, fuses already blown). Read as 0, the firmware sets out to
program those fuses and never gets past that: the twin's fuses are those of a configured board."""
from .device import Device

FUSE_VALUE = 0x000              # FVR0, one 32-bit shadow register per OTP word
OTP_WORD_VDDIO = 124
VDDIO_CONFIGURED = 0x0001_8000


class Bsec(Device):
    name = "BSEC"
    size = 0x1000
    RESET = {FUSE_VALUE + 4 * OTP_WORD_VDDIO: VDDIO_CONFIGURED}

    def __init__(self, base=0x4600_9000):
        super().__init__(base)
