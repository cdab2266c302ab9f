"""The host's end of the twin's USART1: bytes from the host wait here until the firmware reads
them; bytes the firmware sends go out in bursts. `PtyLink` is the simulated board's
pseudo-terminal (what `scons run` and ST's client open); `BufferLink` is an in-memory host for
tests and benchmarks."""
import select

from ..server import FdPort
from n6.aivalidation.framing import LinkTimeout


class PtyLink:
    def __init__(self, fd):
        self.port = FdPort(fd)
        self.port.timeout = 0
        self.dropped = 0            # bytes nobody read for 5 s (the wire does not wait)

    def receive(self):
        """The bytes the host has sent since the last call (never blocks)."""
        return self.port.read(4096)

    def wait(self, seconds):
        """Block up to `seconds` for host bytes; True when some arrived."""
        r, _, _ = select.select([self.port.fd], [], [], seconds)
        return bool(r)

    def send(self, data):
        try:
            self.port.write(data)
        except (LinkTimeout, OSError):
            self.dropped += len(data)


class BufferLink:
    """A host in memory: `to_board` is consumed by the firmware, `from_board` collects its output."""

    def __init__(self, to_board=b""):
        self.to_board, self.from_board = bytearray(to_board), bytearray()
        self.on_wait = None          # called when the firmware waits for bytes (a test's host reacts)

    def receive(self):
        data, self.to_board[:] = bytes(self.to_board), b""
        return data

    def wait(self, seconds):
        if self.on_wait:
            self.on_wait(self)
        return bool(self.to_board)

    def send(self, data):
        self.from_board += data

