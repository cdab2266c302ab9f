"""Starting ST's prebuilt aiValidation reloc firmware on a real board (deploy-protocol.md §3.2):
the variant that fits the image, then ST-LINK_gdbserver + arm-none-eabi-gdb, or pyOCD's Python
API, loading it into SRAM and jumping to Reset_Handler. The simulated board needs none of this.

A failed start is told from the tools' output, not their exit codes (gdb exits 0 when `target
remote` fails, and then a serial timeout would name the wrong cause): gdbserver must say it
listens, gdb must report a transfer; anything else is one line naming the log of both tools."""
import os
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack
from typing import TYPE_CHECKING, Any

from ..errors import N6Error
from ..tool_runner import ToolRunner
from ..host_layout import HOST, Host, ide_tool, on_path

if TYPE_CHECKING:                 # labgrid's exporters: n6.flash.boards
    from ..flash.boards import ExporterProbe

GDB_PORT = 36789
LISTENING = "Waiting for debugger connection"   # ST-LINK_gdbserver, once the probe and the core answer
LOADED = re.compile(r"^Transfer rate: ", re.M)  # gdb, after a load it completed
SERVER_TIMEOUT = 20                             # s for gdbserver to reach the core and listen
CHECK_BOARD = "check the USB cable and the board's power, set development boot and run again"
# (pattern in ST-LINK_gdbserver's output, problem, fix): why it is not listening; first match wins
SERVER_FAILURES = [
    (r"No ST-?LINK detected", "no ST-LINK probe found", "connect the board's ST-LINK USB port"),
    (r"Failed to bind to port|Address already in use", f"port {GDB_PORT} is in use",
     "stop the process listening there (a stale ST-LINK_gdbserver?) and run again"),
    (r"^Reason: ", "ST-LINK_gdbserver cannot reach the board", CHECK_BOARD),
    (r"Error", "ST-LINK_gdbserver failed", CHECK_BOARD),
]
# (pattern in gdb's output, problem, fix)
GDB_FAILURES = [
    (rf":{GDB_PORT}: |Connection refused|Connection timed out",
     f"gdb's `target remote :{GDB_PORT}` was refused", "check that nothing else uses the probe and run again"),
    (r"Remote communication error|Remote connection closed|Target disconnected",
     "the board stopped answering gdb", CHECK_BOARD),
    (r"Load failed|Cannot access memory at address|Error finishing flash operation|Memory access error",
     "gdb could not load the firmware into SRAM", CHECK_BOARD),
    (r'No symbol "Reset_Handler"', "the firmware ELF has no Reset_Handler",
     "use ST's validation firmware ELF (with symbols)"),
]


def find_tool(name: str, environ: Mapping[str, str] = os.environ, host: Host = HOST) -> str:
    """The newest STM32CubeIDE plugin's copy (STM32_CUBE_IDE_DIR), else PATH."""
    ide = environ.get("STM32_CUBE_IDE_DIR")
    found = (ide_tool(ide, name, host) if ide else None) or on_path(name, environ, host)
    if not found:
        raise N6Error(None, f"{name} not found", "install STM32CubeIDE and set STM32_CUBE_IDE_DIR, or put "
                      f"{host.exe(name)} on PATH")
    return found


def gdbserver_argv(gdbserver: str, cube_bin_dir: str, frequency: int = 2000, access_port: int = 1,
                   serial: str | None = None, port: int = GDB_PORT) -> list[str]:
    argv = [gdbserver, "-d", "--frequency", str(frequency), "--apid", str(access_port), "-v",
            "--port-number", str(port), "-cp", cube_bin_dir]
    return argv + (["--serial-number", serial] if serial else [])


def gdb_argv(gdb: str, elf: str, port: int = GDB_PORT) -> list[str]:
    return [gdb, "-ex", f"target remote :{port}", "-ex", "monitor reset", "-ex", "load",
            "-ex", "set $pc = Reset_Handler", "-ex", "detach", "-ex", "quit", elf]


def _first(failures: Sequence[tuple[str, str, str]], output: str) -> tuple[str, str] | None:
    """(problem with the tool's own line, fix) of the first failure pattern found in `output`."""
    for pattern, problem, fix in failures:
        line = next((line.strip() for line in output.splitlines() if re.search(pattern, line)), None)
        if line:
            return f"{problem} ({line})", fix
    return None


def server_failure(output: str, exited: bool, timeout: float = SERVER_TIMEOUT) -> tuple[str, str] | None:
    """(problem, fix) when ST-LINK_gdbserver's output does not say it listens; None when it does."""
    if LISTENING in output:
        return None
    found = _first(SERVER_FAILURES, output)
    if found:
        return found
    last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "no output")
    return (f"ST-LINK_gdbserver {'exited' if exited else f'did not listen within {timeout} s'} ({last})",
            CHECK_BOARD)


def gdb_failure(output: str, returncode: int = 0) -> tuple[str, str] | None:
    """(problem, fix) when gdb did not load and start the firmware; None when it did."""
    found = _first(GDB_FAILURES, output)
    if found:
        return found
    if returncode or not LOADED.search(output):
        last = next((line.strip() for line in reversed(output.splitlines()) if line.strip()), "no output")
        return f"gdb reported no load ({last})", CHECK_BOARD
    return None


class _Output:
    """A background process's output, logged as it comes; tells when a line shows up or it ends."""

    def __init__(self, proc: subprocess.Popen[bytes], log: Callable[[str], object], wanted: str) -> None:
        self.text, self.seen, self.ended = "", threading.Event(), False
        self._thread = threading.Thread(target=self._read, args=(proc, log, wanted), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[bytes], log: Callable[[str], object], wanted: str) -> None:
        for raw in iter(proc.stdout.readline, b""):   # type: ignore[union-attr]  # started with stdout=PIPE
            line = raw.decode("utf-8", "replace")
            self.text += line
            log(line)
            if wanted in line:
                self.seen.set()
        self.ended = True
        self.seen.set()

    def join(self) -> None:
        self._thread.join(5)


def start(elf: str, cube_bin_dir: str, frequency: int = 2000, access_port: int = 1, serial: str | None = None,
          environ: Mapping[str, str] = os.environ, log_path: str | None = None,
          popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen, runner: ToolRunner | None = None,
          timeout: float = SERVER_TIMEOUT, exporter: "ExporterProbe | None" = None) -> None:
    """gdbserver in the background until it listens, gdb loads the firmware and starts it,
    gdbserver stops. Both tools' output goes to `log_path`; a failure is one N6Error naming it.
    `exporter`: the probe is on a labgrid exporter's host, where gdbserver runs (its path there,
    `cube_bin_dir` the programmer's there), gdb here through a forwarded port."""
    if exporter and not exporter.gdbserver:
        from ..flash.lab import GDBSERVER_TAG
        raise N6Error(None, f"labgrid place {exporter.place} exports its probe but has no tag {GDBSERVER_TAG} "
                      "(ST-LINK_gdbserver's path on the exporter's host), which starts ST's validation firmware",
                      f"labgrid-client -p {exporter.place} set-tags {GDBSERVER_TAG}=...")
    with ExitStack() as stack:
        argv = gdbserver_argv(exporter.gdbserver if exporter else find_tool("ST-LINK_gdbserver", environ),
                              cube_bin_dir, frequency, access_port, serial)
        port = GDB_PORT
        if exporter:
            from ..flash.remote import on_exporter
            argv, port = stack.enter_context(on_exporter(exporter.host, argv, GDB_PORT))
        _start(argv, gdb_argv(find_tool("arm-none-eabi-gdb", environ), elf, port), log_path, popen,
               runner or ToolRunner(log_path, timeout=120), timeout)
    time.sleep(1)


def _start(argv: list[str], gdb: list[str], log_path: str | None, popen: Callable[..., subprocess.Popen[bytes]],
           runner: ToolRunner, timeout: float) -> None:
    runner.log("$ " + " ".join(shlex.quote(str(a)) for a in argv) + "\n")
    server = popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    output = _Output(server, runner.log, LISTENING)
    try:
        output.seen.wait(timeout)
        failure = server_failure(output.text, output.ended, timeout)
        if failure is None:
            result = runner.run(gdb)
            failure = gdb_failure(result.output, result.returncode)
        if failure:
            raise N6Error(log_path, f"starting the validation firmware failed: {failure[0]}", failure[1])
    finally:
        server.terminate()
        server.wait()
        output.join()


PYOCD_MISSING = N6Error(None, "starting the validation firmware with pyOCD: the pyocd package is not installed",
                        "pip install pyocd && pyocd pack install stm32n657x0hxq, or set the board file's "
                        "[programmer] backend (FLASH_BACKEND=) to stm32cubeprogrammer")


def elf_load(elf: str) -> tuple[int, list[tuple[int, bytes]]]:
    """(Reset_Handler address, [(load address, bytes)]): what gdb's `load` writes (the ELF's
    loadable segments' file bytes at their physical addresses) and where `set $pc` points."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    from ..reloc.elf import read_symbols
    try:
        with open(elf, "rb") as f:
            chunks = [(seg["p_paddr"], seg.data()) for seg in ELFFile(f).iter_segments()
                      if seg["p_type"] == "PT_LOAD" and seg["p_filesz"]]
        found = next((s for s in read_symbols(elf) if s.name == "Reset_Handler"), None)
        if found is None:
            raise N6Error(elf, "no Reset_Handler symbol", "use ST's validation firmware ELF (with symbols)")
        return found.value & ~1, chunks
    except (OSError, ELFError) as err:
        raise N6Error(elf, f"cannot read the validation firmware: {err}", "reinstall ST Edge AI Core") from None


def _pyocd_session(serial: str | None, target: str, frequency_khz: int) -> AbstractContextManager[Any]:
    try:
        import pyocd  # noqa: F401
    except ImportError:
        raise PYOCD_MISSING from None
    from ..flash.pyocd_backend import _open_session
    return _open_session(serial, target, frequency_khz, "attach")


def start_pyocd(elf: str, target: str, frequency: int = 2000, serial: str | None = None,
                open_session: Callable[[str | None, str, int], AbstractContextManager[Any]] = _pyocd_session) -> None:
    """The gdb sequence through pyOCD: reset and halt, write the firmware's segments into SRAM,
    pc = Reset_Handler (Thumb), resume; the session closes (the core keeps running)."""
    entry, chunks = elf_load(elf)
    with open_session(serial, target, frequency) as session:
        core = session.board.target
        core.reset_and_halt()
        for addr, data in chunks:
            core.write_memory_block8(addr, list(data))
        if any(bytes(core.read_memory_block8(a, len(d))) != d for a, d in chunks):
            raise N6Error(elf, "starting the validation firmware with pyOCD failed: SRAM does not hold the "
                          "firmware after loading", "check the probe and the boot mode (development boot)")
        core.write_core_register("pc", entry)
        core.resume()
    time.sleep(1)
