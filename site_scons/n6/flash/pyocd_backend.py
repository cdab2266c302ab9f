"""pyOCD backend (optional: `pip install pyocd`, then `pyocd pack install stm32n657x0hxq` for the
N6 CMSIS pack and its external-flash algorithm). Runs in-process through pyOCD's Python API; the
session factory is a parameter so tests drive it with a fake session."""
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..errors import N6Error
from .backend import Backend, Capabilities, Download, Progress, ProgrammerError

if TYPE_CHECKING:                 # pyOCD is imported when a flash uses it
    from pyocd.core.session import Session
    from pyocd.flash.loader import MemoryLoader

MISSING = N6Error(None, "programmer backend pyocd: the pyocd package is not installed",
                  "pip install pyocd && pyocd pack install stm32n657x0hxq, or use FLASH_BACKEND=stm32cubeprogrammer")


def _open_session(serial: str | None, target: str, frequency_khz: int, connect_mode: str) -> "Session":
    try:
        from pyocd.core.helpers import ConnectHelper
    except ImportError:
        raise MISSING from None
    session = ConnectHelper.session_with_chosen_probe(
        unique_id=serial, target_override=target, blocking=False, connect_mode=connect_mode,
        frequency=frequency_khz * 1000, resume_on_disconnect=True)
    if session is None:
        raise N6Error(None, "no debug probe found by pyOCD", "connect the board's ST-LINK USB port")
    return session


def _memory_loader(session: "Session", progress: Callable[..., object]) -> "MemoryLoader":
    from pyocd.flash.loader import MemoryLoader
    return MemoryLoader(session, progress=progress, chip_erase="sector", smart_flash=False)


class PyOCD(Backend):
    name = "pyocd"
    capabilities = Capabilities(("none", "soft", "hard"), True, True, False)

    def __init__(self, target: str, frequency: int = 2000, serial: str | None = None, log_path: str | None = None,
                 open_session: Callable[[str | None, str, int, str], "Session"] = _open_session,
                 memory_loader: Callable[["Session", Callable[..., object]], "MemoryLoader"] = _memory_loader,
                 ) -> None:
        self.target, self.frequency, self.serial, self.log_path = target, frequency, serial, log_path
        self.open_session, self.memory_loader = open_session, memory_loader
        self.notes: list[str] = []

    def _session(self) -> "Session":
        return self.open_session(self.serial, self.target, self.frequency, "attach")

    def exchange(self, ranges: Sequence[tuple[int, int]], downloads: Sequence[Download], verify: bool = True,
                 reset: str = "none",
                 on_progress: Progress | None = None) -> tuple[str | None, dict[int, bytes], list[float]]:
        """Read back, then write and verify, in one pyOCD session."""
        blobs = []
        for d in downloads:
            with open(d.path, "rb") as f:
                blobs.append(f.read())
        total = sum(map(len, blobs))
        seconds = []
        with self._session() as session:
            serial = session.probe.unique_id
            target = session.board.target
            data = {a: bytes(target.read_memory_block8(a, n)) for a, n in ranges}
            done = 0
            for d, blob in zip(downloads, blobs):
                start = time.monotonic()
                size = len(blob)
                loader = self.memory_loader(session, (lambda f, base=done, n=size:
                                                      on_progress and on_progress(base + int(f * n), total)))
                loader.add_data(d.address, blob)
                loader.commit()
                if verify and bytes(target.read_memory_block8(d.address, len(blob))) != blob:
                    raise ProgrammerError(self.log_path, f"verify failed at 0x{d.address:08X}: the flash does not "
                                          "hold the bytes written",
                                          "power-cycle the board and flash again with FORCE=1")
                done += len(blob)
                seconds.append(time.monotonic() - start)
            if reset != "none":
                target.reset(reset_type=target.ResetType.HW if reset == "hard" else target.ResetType.SW)
        self.serial = serial
        return serial, data, seconds
