"""The host's end of the twin's USART1: bytes from the host wait here until the firmware waits for
them; bytes the firmware sends go out in bursts. `PtyLink` is the simulated board's
pseudo-terminal (what `scons run` and ST's client open); `BufferLink` is an in-memory host for
tests and benchmarks. `wait_for_bytes` blocks in host time, while emulated time stands still."""
import select

from ..server import BoardReset, FdPort
from n6.aivalidation.framing import LinkTimeout


class PtyLink:
    def __init__(self, fd):
        self.port = FdPort(fd)
        self.port.timeout = 0
        self.dropped = 0            # bytes nobody read for 5 s (the wire does not wait)

    def receive(self):
        """The bytes the host has sent since the last call (never blocks); BoardReset once the
        port's reset_requested() holds."""
        return self.port.read(4096)

    def wait_for_bytes(self):
        """The host's next bytes, however long it takes (a closed port waits for a new client),
        or nothing once the port's reset_requested() holds: the wait runs within the emulator's
        register hook, where a BoardReset would be lost (ctypes prints it and the read goes on);
        the run ends at its next slice (its until())."""
        try:
            while True:
                data = self.receive()
                if data:
                    return data
                select.select([self.port.fd], [], [], 1.0)
        except BoardReset:
            return b""

    def send(self, data):
        try:
            self.port.write(data)
        except (LinkTimeout, OSError):
            self.dropped += len(data)


class BufferLink:
    """A host in memory: `to_board` is consumed by the firmware, `from_board` collects its output."""

    def __init__(self, to_board=b""):
        self.to_board, self.from_board = bytearray(to_board), bytearray()
        self.on_wait = None          # called when the firmware waits for bytes (a test's host reacts;
        #                              with none, nothing more comes)

    def receive(self):
        data, self.to_board[:] = bytes(self.to_board), b""
        return data

    def wait_for_bytes(self):
        if not self.to_board and self.on_wait:
            self.on_wait(self)
        return self.receive()

    def send(self, data):
        self.from_board += data

