"""The xSPI controllers (XSPI1 0x4802_5000 in front of the PSRAM, XSPI2 0x4802_A000 in front of
the NOR flash). The twin maps both memories at all times, so what the firmware's drivers need is
a controller that is never busy: SR (0x020) reports transfer complete (TCF 1), FIFO threshold
(FTF 2) and status match (SMF 3, the end of auto-polling for a ready memory), never BUSY (5);
FCR (0x024) clears nothing that stays set. Commands and data registers read back what was
written."""
from .device import Device

SR = 0x020
TCF, FTF, SMF = 1 << 1, 1 << 2, 1 << 3


class Xspi(Device):
    size = 0x400

    def __init__(self, name, base):
        super().__init__(base)
        self.name = name

    def read(self, offset):
        return TCF | FTF | SMF if offset == SR else super().read(offset)


def dk_xspi_controllers():
    return Xspi("XSPI1", 0x4802_5000), Xspi("XSPI2", 0x4802_A000)
