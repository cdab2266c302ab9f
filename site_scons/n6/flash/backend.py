"""The small interface every programmer backend implements, with the capabilities it declares."""
from collections.abc import Sequence
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import N6Error

Progress = Callable[[int, int], object]   # on_progress(done bytes, total bytes)

BACKENDS = ("auto", "stm32cubeprogrammer", "pyocd", "simulated")   # a board file's, FLASH_BACKEND=
RESET_MODES = ("none", "soft", "hard")


@dataclass(frozen=True)
class Download:
    path: str        # file holding exactly the bytes to write
    address: int


@dataclass(frozen=True)
class Capabilities:
    reset_modes: tuple[str, ...]  # after programming
    serial_select: bool           # can address one probe by serial number
    read_back: bool               # can read flash (the record check)
    external_loader: bool         # takes an external loader file


class ProgrammerError(N6Error):
    """A programmer failure: one line naming the log file with the programmer's full output."""


class Backend:
    """connect → read back → program, in one connection (exchange). Subclasses set name,
    simulated, capabilities."""
    name = "backend"
    simulated = False
    capabilities = Capabilities(RESET_MODES, False, False, False)
    notes: Sequence[str] = ()   # recoveries tried, for the report

    def check_options(self, reset: str = "none", serial: str | None = None) -> None:
        caps = self.capabilities
        if reset not in caps.reset_modes:
            raise N6Error(None, f"programmer {self.name} cannot reset '{reset}' after flashing",
                          f"use FLASH_RESET={' or '.join(caps.reset_modes)}")
        if serial and not caps.serial_select:
            raise N6Error(None, f"programmer {self.name} cannot select a probe by serial number", "unset PROBE=")

    def probes(self) -> list[str]:
        """Serial numbers of the attached probes (a programmer call; [] when the backend cannot list)."""
        return []

    def exchange(self, ranges: Sequence[tuple[int, int]], downloads: Sequence[Download], verify: bool = True,
                 reset: str = "none",
                 on_progress: Progress | None = None) -> tuple[str | None, dict[int, bytes], list[float]]:
        """Read back `ranges` [(address, size)], then write each download (erasing its sectors),
        in one connection: → (probe serial, {address: bytes}, seconds per download, in order).
        `on_progress(done_bytes, total_bytes)` is fed from the programmer's own progress output."""
        raise NotImplementedError

    def program(self, downloads: Sequence[Download], verify: bool = True, reset: str = "none",
                on_progress: Progress | None = None) -> list[float]:
        """Write each download; returns seconds per download, in order."""
        return self.exchange([], downloads, verify, reset, on_progress)[2]
