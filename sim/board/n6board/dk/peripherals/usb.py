"""The USB OTG controllers (USB1 0x4804_0000, USB2 0x4808_0000): not emulated. The `-usbc`
firmware variants talk to the host over USB-C CDC; the first access to a controller stops the
twin with one line saying so, instead of a driver spinning on a reset bit that never clears."""
from .device import Device


class UsbNotEmulated(Device):
    size = 0x4_0000

    def __init__(self, name, base, stop):
        super().__init__(base)
        self.name, self.stop = name, stop

    def read(self, offset):
        self._refuse()
        return 0

    def write(self, offset, value):
        self._refuse()

    def _refuse(self):
        self.stop(f"the firmware drives the {self.name} controller: USB is not emulated by the twin "
                  "(use a UART variant of the validation firmware)")


def dk_usb_controllers(stop):
    return UsbNotEmulated("USB1 OTG", 0x4804_0000, stop), UsbNotEmulated("USB2 OTG", 0x4808_0000, stop)
