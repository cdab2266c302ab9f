"""The simulated board's state on disk, shared by the simulated programmer (writes the flash) and
the simulated board (reads it and runs the images).

Layout of the folder named by N6_SIM_BOARD:
  probe.json               {"serial": "...", "boot": "development" | "flash"}
  flash/<ADDR>.bin         one erase sector, exactly SECTOR_SIZE bytes; ADDR = 8 upper-case hex
                           digits; an absent sector reads as erased (0xFF)
  log.jsonl                one JSON object per programmer call, erase, program and reset
  reset                    "<count> <kind>": the programmer's resets (-rst software, -hardRst hardware)
  board.json               {"pid", "resets"}: the board process serving this state, and the resets it
                           has carried out (the programmer waits for its reset to be)
Only the standard library: the simulated board and the programmer import this file alone."""
import json
import os
import re
import time

SECTOR_SIZE = 0x10000
ERASED = 0xFF


def factory_serial(k=1):
    """The probe serial a bench's simulated board k has until its probe.json says otherwise (the
    first: a lone board's): 24 hex digits, like an ST-LINK V3 serial number."""
    return f"0042{k:020d}"


DEFAULT_SERIAL = factory_serial(1)


def board_folder(first, k):
    """The state folder of a bench's simulated board k, whose board 1's is `first`."""
    return first if k == 1 else f"{first}-{k}"


def board_number(folder):
    """Which board k of a bench the state folder `folder` is (board_folder): a fresh folder's
    probe serial is its board's, before any probe.json says so. 1 for a lone board's."""
    m = re.fullmatch(r".+-([0-9]+)", os.path.basename(os.path.normpath(folder)))
    return int(m[1]) if m and int(m[1]) >= 2 else 1
BOOT_MODES = ("development", "flash")


class FlashError(Exception):
    """A write the real NOR flash would refuse (program without erase, crossing the flash end)."""


def _write_atomic(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _board_process(pid):
    """Whether `pid` is a live simulated board process (not a process that reused its number)."""
    try:
        with open(f"/proc/{int(pid)}/cmdline", "rb") as f:
            return b"n6board" in f.read()
    except (OSError, TypeError, ValueError):
        pass
    try:
        os.kill(int(pid), 0)
        return not os.path.isdir("/proc")
    except (OSError, TypeError, ValueError):
        return False


class BoardState:
    """Sparse image of the board's NOR flash plus the probe identity; absent sectors are erased."""

    def __init__(self, root, sector_size=SECTOR_SIZE):
        self.root = str(root)
        self.sector_size = sector_size
        self.flash_dir = os.path.join(self.root, "flash")

    @classmethod
    def from_env(cls, environ=os.environ):
        """The board in the folder N6_SIM_BOARD names; None when it names none (no board attached)."""
        root = environ.get("N6_SIM_BOARD")
        return cls(root) if root else None

    # -- probe -----------------------------------------------------------------------------------
    def probe(self):
        """{"serial", "boot"}; a board never touched is a fresh DK in development boot, with its
        board's factory serial (board_number). ValueError: a probe file that is not a JSON object."""
        try:
            with open(os.path.join(self.root, "probe.json"), encoding="utf-8") as f:
                data = json.load(f)
        except (FileNotFoundError, NotADirectoryError):     # no board there (yet)
            data = {}
        if not isinstance(data, dict):
            raise ValueError(f"{type(data).__name__}, not an object")
        serial = data["serial"] if "serial" in data else factory_serial(board_number(self.root))
        return {"serial": serial, "boot": data.get("boot", "development")}

    def set_probe(self, serial=None, boot=None):
        data = self.probe()
        if serial is not None:
            data["serial"] = serial
        if boot is not None:
            if boot not in BOOT_MODES:
                raise ValueError(f"boot must be one of {BOOT_MODES}")
            data["boot"] = boot
        os.makedirs(self.root, exist_ok=True)
        _write_atomic(os.path.join(self.root, "probe.json"), (json.dumps(data, indent=1) + "\n").encode())

    # -- flash -----------------------------------------------------------------------------------
    def sector_of(self, address):
        return address - address % self.sector_size

    def sector_path(self, sector):
        return os.path.join(self.flash_dir, f"{sector:08X}.bin")

    def read_sector(self, sector):
        try:
            with open(self.sector_path(sector), "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return bytes([ERASED]) * self.sector_size
        if len(data) != self.sector_size:
            raise FlashError(f"{self.sector_path(sector)}: {len(data)} bytes, expected {self.sector_size}")
        return data

    def read(self, address, size):
        out = bytearray()
        while size > 0:
            sector = self.sector_of(address)
            start = address - sector
            n = min(size, self.sector_size - start)
            out += self.read_sector(sector)[start:start + n]
            address, size = address + n, size - n
        return bytes(out)

    def erase_sector(self, sector):
        if sector % self.sector_size:
            raise FlashError(f"erase at {sector:#010x} is not on a {self.sector_size // 1024} KB sector boundary")
        try:
            os.unlink(self.sector_path(sector))
        except FileNotFoundError:
            pass
        self.log("erase", address=sector, size=self.sector_size)

    def program(self, address, data):
        """NOR semantics: only erased bytes may be programmed (erase before program)."""
        pos = 0
        while pos < len(data):
            sector = self.sector_of(address + pos)
            start = address + pos - sector
            n = min(len(data) - pos, self.sector_size - start)
            old = bytearray(self.read_sector(sector))
            chunk = data[pos:pos + n]
            if any(b != ERASED for b in old[start:start + n]):
                raise FlashError(f"program at {address + pos:#010x} over bytes that are not erased")
            old[start:start + n] = chunk
            os.makedirs(self.flash_dir, exist_ok=True)
            _write_atomic(self.sector_path(sector), bytes(old))
            pos += n
        self.log("program", address=address, size=len(data))

    def sectors(self):
        """Addresses of the sectors that hold data (not erased)."""
        try:
            names = os.listdir(self.flash_dir)
        except FileNotFoundError:
            return []
        return sorted(int(n[:-4], 16) for n in names if n.endswith(".bin") and len(n) == 12)

    # -- reset -----------------------------------------------------------------------------------
    def request_reset(self, kind):
        """The programmer resets the board ("software" or "hardware"): a board process serving
        this state reboots its firmware. Returns the reset's number."""
        count = self.resets() + 1
        os.makedirs(self.root, exist_ok=True)
        _write_atomic(os.path.join(self.root, "reset"), f"{count} {kind}\n".encode())
        self.log("reset", kind=kind)
        return count

    def resets(self):
        """How many resets the programmer has made."""
        try:
            with open(os.path.join(self.root, "reset"), encoding="utf-8") as f:
                return int(f.read().split()[0])
        except (FileNotFoundError, ValueError, IndexError):
            return 0

    def watch_resets(self):
        """(the resets made so far, a callable: True once the programmer has made another). A
        board reports `board_served(done)` after it booted: a reset asked for during its boot is
        then still awaited by the programmer, and the board boots again for it."""
        done = self.resets()
        return done, lambda: self.resets() != done

    def board_served(self, resets):
        """The board process says it has carried out `resets` resets (and serves this state)."""
        os.makedirs(self.root, exist_ok=True)
        _write_atomic(os.path.join(self.root, "board.json"),
                      (json.dumps({"pid": os.getpid(), "resets": resets}) + "\n").encode())

    def wait_for_board(self, count, timeout):
        """Wait until a live board process serving this state has carried out reset `count`:
        True; False when none serves it (nothing to wait for); TimeoutError past `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                with open(os.path.join(self.root, "board.json"), encoding="utf-8") as f:
                    board = json.load(f)
            except (FileNotFoundError, ValueError):
                return False
            if not _board_process(board.get("pid")):
                return False
            if board.get("resets", 0) >= count:
                return True
            if time.monotonic() > deadline:
                raise TimeoutError(f"the simulated board did not come out of reset within {timeout:g} s")
            time.sleep(0.05)

    # -- log -------------------------------------------------------------------------------------
    def log(self, op, **fields):
        os.makedirs(self.root, exist_ok=True)
        with open(os.path.join(self.root, "log.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps({"op": op, "time": round(time.time(), 3), **fields}) + "\n")

    def events(self, op=None):
        try:
            with open(os.path.join(self.root, "log.jsonl"), encoding="utf-8") as f:
                events = [json.loads(line) for line in f if line.strip()]
        except FileNotFoundError:
            return []
        return [e for e in events if op is None or e["op"] == op]
