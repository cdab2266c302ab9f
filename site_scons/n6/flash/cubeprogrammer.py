"""STM32CubeProgrammer CLI backend (`STM32_Programmer_CLI`), and the simulated programmer, which
takes the same arguments: only discovery differs.

One call per flash: a hot-plug connect on the core's access port with the external loader, the
read-back uploads, then every download range with --verify. ST's flow first makes a power-down
connect as a reset and a call per image; here a hot-plug connect refused (after the board booted
from flash) is retried once under reset, which is that reset."""
import glob
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NoReturn, Self

from ..errors import N6Error
from ..host_layout import HOST, Host, cube_programmer_bins, executable, ide_tool, on_path
from ..paths import SIM_PROGRAMMER_BIN
from ..tool_runner import Runner, ToolResult
from .backend import Backend, Capabilities, Download, Progress, ProgrammerError, RESET_MODES

CLI_NAME = "STM32_Programmer_CLI"
RESET_ARGS = {"none": [], "soft": ["-rst"], "hard": ["-hardRst"]}
CALL_TIMEOUT = 120          # s for a call, plus the bytes at the slowest plausible rate
SLOWEST_RATE = 20_000       # bytes/s program + verify (a real board does about 100 KB/s)
HOLDERS = ("ST-LINK_gdbserver", "STM32_Programmer_CLI", "STM32CubeProgrammer", "stlink-server", "openocd", "pyocd")
COMM_CHARS = 15           # Linux keeps this much of a process name in /proc/<pid>/comm


@dataclass(frozen=True)
class CliInstall:
    cli: str                 # the executable
    simulated: bool
    found_by: str            # how discovery found it, for messages

    @classmethod
    def simulated_cli(cls, found_by: str) -> Self:
        """The project's simulated STM32_Programmer_CLI."""
        return cls(os.path.join(SIM_PROGRAMMER_BIN, CLI_NAME), True, found_by)

    @property
    def bin_dir(self) -> str:
        """The install's bin folder, where the executable really is (`cli` may be a symlink)."""
        return os.path.dirname(os.path.realpath(self.cli))

    def loader(self, name: str) -> str:
        return os.path.join(self.bin_dir, "ExternalLoader", name)

    def environ(self, base: Mapping[str, str]) -> dict[str, str]:
        """The tool's environment: LD_LIBRARY_PATH=<bin>/../lib on Linux, as ST's installs need."""
        env = dict(base)
        if sys.platform.startswith("linux"):
            lib = os.path.normpath(os.path.join(self.bin_dir, "..", "lib"))
            env["LD_LIBRARY_PATH"] = lib + (os.pathsep + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        if self.simulated:
            env.setdefault("N6_SIM_PYTHON", sys.executable)
        return env


def is_simulated(cli: str) -> bool:
    """Whether `cli` is a simulated programmer (its package beside its bin folder), however it is
    reached: through a symlink, PATH, or from another checkout."""
    return os.path.isdir(os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(cli))), "programmer_sim"))


def find_cli(environ: Mapping[str, str] = os.environ, host: Host = HOST, root: str = os.sep) -> CliInstall:
    """STM32_PROGRAMMER_CLI, then the newest CubeProgrammer plugin under STM32_CUBE_IDE_DIR (as
    ST's script does), then PATH, then where CubeProgrammer's installer puts it on `host`; else
    the simulated programmer."""
    explicit = environ.get("STM32_PROGRAMMER_CLI")
    if explicit:
        if not executable(explicit):
            raise N6Error(explicit, "STM32_PROGRAMMER_CLI does not name an executable",
                          f"point it at <CubeProgrammer>/bin/{host.exe(CLI_NAME)} or unset it")
        return CliInstall(explicit, is_simulated(explicit), "STM32_PROGRAMMER_CLI")
    ide = environ.get("STM32_CUBE_IDE_DIR")
    found = ide_tool(ide, CLI_NAME, host) if ide else None
    if found:
        return CliInstall(found, False, "STM32_CUBE_IDE_DIR")
    found = on_path(CLI_NAME, environ, host)
    if found:
        return CliInstall(found, is_simulated(found), "PATH")
    for bin_dir in cube_programmer_bins(host, environ, root):
        if executable(os.path.join(bin_dir, host.exe(CLI_NAME))):
            return CliInstall(os.path.join(bin_dir, host.exe(CLI_NAME)), False, "STM32CubeProgrammer's install folder")
    return CliInstall.simulated_cli("simulated (no STM32_Programmer_CLI found)")


# -- argv ------------------------------------------------------------------------------------------

def connect_args(mode: str, frequency: int, access_port: int, serial: str | None = None) -> list[str]:
    return ["-c", "port=SWD", f"mode={mode}", f"freq={frequency}", f"ap={access_port}"] + \
        ([f"sn={serial}"] if serial else [])


def list_argv(cli: str) -> list[str]:
    return [cli, "--list", "st-link"]


def call_argv(cli: str, loader: str, uploads: Sequence[tuple[int, int, str]] = (), downloads: Sequence[Download] = (),
              frequency: int = 2000, access_port: int = 1, serial: str | None = None, verify: bool = True,
              reset: str = "none", mode: str = "hotplug") -> list[str]:
    """One call: uploads [(address, size, file)] read back first, then downloads written (and
    verified); with neither, the call only connects (and reports the serial)."""
    argv = [cli] + connect_args(mode, frequency, access_port, serial) + ["-el", loader]
    for address, size, path in uploads:
        argv += ["-u", f"0x{address:08X}", str(size), path]
    for d in downloads:
        argv += ["-d", d.path, f"0x{d.address:08X}"] + (["-v"] if verify else [])
    return argv + RESET_ARGS[reset]


# -- output ----------------------------------------------------------------------------------------

SERIAL_RE = re.compile(r"ST-LINK SN\s*:\s*(\S+)")
PERCENT_RE = re.compile(r"(\d{1,3})%\s*$")
ELAPSED_RE = re.compile(r"Time elapsed during download operation:\s*(\d+):(\d+):([\d.]+)")
HOTPLUG_REFUSED = ("Unable to get core ID", "Cannot connect to access port")

# (output pattern, problem, fix); the first match wins. {loader}, {holders} and {line} (the output's
# line that matched, past "Error: ") are filled in.
FAILURES = [
    ("No debug probe detected|No ST-?Link detected|No ST-LINK with serial number",
     "no ST-LINK probe found{serial}", "connect the board's ST-LINK USB port and check the cable (PROBE= must name "
     "a connected probe)"),
    ("Error in initializing ST-LINK device|Target unknown error 32|already in use",
     "the ST-LINK probe is held by another process{holders}", "stop that process (e.g. a stale ST-LINK_gdbserver) "
     "and flash again"),
    ("flash loader cannot be loaded",
     "external loader {loader} cannot be loaded", "install it in <CubeProgrammer>/bin/ExternalLoader/ or choose "
     "the right board with BOARD="),
    ("No STM32 target found|Data read failed|erase operation (has )?failed|Mass erase operation failed",
     "board not in development boot (debug access closed, flash erase refused)",
     "set BOOT1 to the development position and power-cycle the board"),
    ("DEV_USB_COMM_ERR|ST-LINK error|USB communication error",
     "probe lost during the flash", "check the USB cable, power-cycle the board and flash again (the record was not "
     "updated: the next flash rewrites what was interrupted)"),
    ("verification failed|Data mismatch",
     "verify failed: the flash does not hold the bytes written", "power-cycle the board and flash again with FORCE=1"),
    ("cannot write the simulated board's state in",
     "{line}", "make that folder writable, or point N6_SIM_BOARD at a folder of its own"),
    ("Unable to get core ID|Cannot connect to access port",
     "cannot connect to the core (hot-plug and connect-under-reset both refused)",
     "set development boot, power-cycle the board and flash again"),
]


def classify(output: str, loader_name: str, serial: str | None = None) -> tuple[str, str]:
    """(problem, fix) for a failed call's output."""
    for pattern, problem, fix in FAILURES:
        found = re.search(f".*(?:{pattern}).*", output)
        if found:
            holders = holding_processes()
            return (problem.format(loader=loader_name, serial=f" with serial number {serial}" if serial else "",
                                   holders=f" ({', '.join(holders)})" if holders else "",
                                   line=found[0].strip().removeprefix("Error: ")), fix)
    errors = [line.strip() for line in output.splitlines() if line.strip().startswith("Error")]
    return (f"programmer failed: {errors[0] if errors else 'no error message'}",
            "see the log; run with VERBOSE=1 to see the commands")


def holding_processes(proc: str = "/proc") -> list[str]:
    """Processes that may hold the probe, as 'name (pid N)' (Linux /proc; empty elsewhere): a
    holder's name, one extending it ("openocd-0.12"), or a longer one cut to COMM_CHARS."""
    found: list[str] = []
    for comm in glob.glob(os.path.join(proc, "[0-9]*", "comm")):
        try:
            with open(comm, encoding="utf-8") as f:
                name = f.read().strip()
        except OSError:
            continue
        if any(name.startswith(h) or (len(name) == COMM_CHARS and h.startswith(name)) for h in HOLDERS):
            pid = int(os.path.basename(os.path.dirname(comm)))
            if pid != os.getpid():
                found.append(f"{name} pid {pid}")
    return sorted(found)


class ProgressParser:
    """Feeds `on_progress(done, total)` from the download bars; collects seconds per download."""

    def __init__(self, sizes: Sequence[int], on_progress: Progress | None = None) -> None:
        self.sizes, self.on_progress = sizes, on_progress
        self.total = sum(sizes)
        self.index = -1          # download being written
        self.in_download = False
        self.seconds: list[float] = []
        self.buffer = ""

    def feed(self, text: str) -> None:
        self.buffer += text
        parts = re.split(r"[\r\n]", self.buffer)
        self.buffer = parts.pop()
        for part in parts:
            self.line(part)

    def line(self, line: str) -> None:
        if line.startswith("Download in Progress"):
            self.index += 1
            self.in_download = True
        elif line.startswith(("File download complete", "Verifying", "Read progress")):
            self.in_download = False
        m = ELAPSED_RE.search(line)
        if m:
            self.seconds.append(int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3]))
        m = PERCENT_RE.search(line)
        if m and self.in_download and self.on_progress and 0 <= self.index < len(self.sizes):
            done = sum(self.sizes[:self.index]) + self.sizes[self.index] * min(100, int(m[1])) // 100
            self.on_progress(done, self.total)


class CubeProgrammer(Backend):
    name = "stm32cubeprogrammer"
    capabilities = Capabilities(RESET_MODES, True, True, True)

    def __init__(self, install: CliInstall, runner: Runner, loader_name: str, frequency: int = 2000,
                 access_port: int = 1, serial: str | None = None, log_path: str | None = None) -> None:
        self.install, self.runner, self.loader_name = install, runner, loader_name
        self.frequency, self.access_port, self.serial = frequency, access_port, serial
        self.log_path = log_path
        self.mode = "hotplug"
        self.notes: list[str] = []

    @property
    def simulated(self) -> bool:   # type: ignore[override]  # read-only here: the install says
        return self.install.simulated

    @property
    def loader(self) -> str:
        return self.install.loader(self.loader_name)

    def fail(self, result: ToolResult) -> NoReturn:
        if result.timed_out:
            raise ProgrammerError(self.log_path, f"programmer did not finish within {self.runner.timeout} s",
                                  "power-cycle the board; check for a process holding the probe")
        if result.returncode < 0:
            raise ProgrammerError(self.log_path, f"programmer stopped by signal {-result.returncode}",
                                  "flash again: the record was not updated, the interrupted sectors are rewritten")
        problem, fix = classify(result.output, self.loader_name, self.serial)
        raise ProgrammerError(self.log_path, problem, fix)

    def _call(self, make_argv: Callable[[str], list[str]], on_output: Callable[[str], object] | None = None,
              timeout: float | None = None) -> ToolResult:
        """Run; on a refused hot-plug connect retry once under reset (and keep that mode)."""
        result = self.runner.run(make_argv(self.mode), on_output, timeout)
        if result.returncode and self.mode == "hotplug" and any(s in result.output for s in HOTPLUG_REFUSED):
            self.notes.append("hot-plug connect refused: retried with connect under reset (mode=UR)")
            self.mode = "UR"
            result = self.runner.run(make_argv(self.mode), on_output, timeout)
        if result.returncode:
            self.fail(result)
        return result

    def probes(self) -> list[str]:
        """Serial numbers of the attached ST-LINKs (`--list`)."""
        result = self.runner.run(list_argv(self.install.cli), timeout=CALL_TIMEOUT)
        return SERIAL_RE.findall(result.output)

    def exchange(self, ranges: Sequence[tuple[int, int]], downloads: Sequence[Download], verify: bool = True,
                 reset: str = "none",
                 on_progress: Progress | None = None) -> tuple[str | None, dict[int, bytes], list[float]]:
        sizes = [os.path.getsize(d.path) for d in downloads]
        parser = ProgressParser(sizes, on_progress)
        with tempfile.TemporaryDirectory(prefix="n6-readback-") as tmp:
            uploads = [(a, n, os.path.join(tmp, f"{i}.bin")) for i, (a, n) in enumerate(ranges)]
            result = self._call(lambda mode: call_argv(self.install.cli, self.loader, uploads, downloads,
                                                       self.frequency, self.access_port, self.serial, verify, reset,
                                                       mode),
                                parser.feed, timeout=CALL_TIMEOUT + (sum(sizes) + sum(n for _, n in ranges)) /
                                SLOWEST_RATE)
            parser.feed("\n")
            seconds = (parser.seconds + [0.0] * len(downloads))[:len(downloads)]
            m = SERIAL_RE.search(result.output)
            serial = self.serial or (m[1] if m else None)
            if result.dry_run:
                return self.serial, {}, seconds
            if not serial:
                raise ProgrammerError(self.log_path, "the programmer did not report the probe's serial number",
                                      "name the probe with PROBE=<serial>")
            data = {}
            for address, _size, path in uploads:
                with open(path, "rb") as f:
                    data[address] = f.read()
        self.serial = serial        # later calls address the same probe
        return serial, data, seconds


