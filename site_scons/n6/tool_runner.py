"""Every external tool (the programmer, stedgeai) runs through ToolRunner: no stdin (a prompt
fails at once instead of waiting for an answer nobody can give), the argv and the full output go
to a log file, VERBOSE shows the argv, a timeout kills a hung tool and whatever it started,
dry-run prints instead of running."""
import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass
class ToolResult:
    argv: list[object]
    returncode: int
    output: str
    seconds: float
    timed_out: bool = False
    dry_run: bool = False


class Runner(Protocol):
    """What a tool's caller needs of its runner: ToolRunner on this machine, or one that runs the
    tool elsewhere through it (n6.flash.remote.RemoteRunner, on a labgrid exporter's host)."""

    @property
    def timeout(self) -> float: ...

    def run(self, argv: Sequence[str], on_output: Callable[[str], object] | None = None,
            timeout: float | None = None) -> ToolResult: ...


class ToolRunner:
    def __init__(self, log_path: str | None = None, verbose: bool = False, dry_run: bool = False, timeout: float = 120,
                 env: Mapping[str, str] | None = None, echo: Callable[[str], object] = print) -> None:
        self.log_path, self.verbose, self.dry_run = log_path, verbose, dry_run
        self.timeout, self.env, self.echo = timeout, env, echo
        self.calls = 0

    def log(self, text: str) -> None:
        if self.log_path:
            os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(text)

    def run(self, argv: Sequence[object], on_output: Callable[[str], object] | None = None,
            timeout: float | None = None) -> ToolResult:
        """Run `argv` (stdout+stderr merged); `on_output(text)` sees the output as it arrives."""
        line = " ".join(shlex.quote(str(a)) for a in argv)
        self.log(f"$ {line}\n")
        if self.verbose or self.dry_run:
            self.echo(("  DRY-RUN  " if self.dry_run else "") + line)
        if self.dry_run:
            return ToolResult(list(argv), 0, "", 0.0, dry_run=True)
        self.calls += 1
        start = time.monotonic()
        timeout = timeout or self.timeout
        try:
            proc = subprocess.Popen([str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, env=self.env, bufsize=0)
        except OSError as e:
            self.log(f"cannot start: {e}\n")
            return ToolResult(list(argv), 127, f"Error: cannot start {argv[0]}: {e.strerror}\n",
                              time.monotonic() - start)
        assert proc.stdout is not None   # stdout=PIPE
        timed_out = threading.Event()

        def kill() -> None:
            timed_out.set()
            _kill_tree(proc.pid)
        timer = threading.Timer(timeout, kill)
        timer.start()
        chunks: list[str] = []
        try:
            while True:
                chunk = proc.stdout.read(4096)
                if not chunk:
                    break
                text = chunk.decode("utf-8", "replace")
                chunks.append(text)
                self.log(text)
                if on_output:
                    on_output(text)
            proc.wait()
        except BaseException:          # Ctrl-C: never leave the programmer running on the probe
            proc.kill()
            proc.wait()
            self.log("\n[interrupted]\n")
            raise
        finally:
            timer.cancel()
            proc.stdout.close()
        output = "".join(chunks)
        self.log(f"[exit {proc.returncode}{', timed out' if timed_out.is_set() else ''}]\n")
        return ToolResult(list(argv), proc.returncode, output, time.monotonic() - start, timed_out.is_set())


def _kill_tree(pid: int) -> None:
    """SIGKILL `pid` and every process below it: a tool that is a script, or a bundled executable
    that starts the real program, leaves children that would hold its output open (Linux /proc;
    elsewhere the tool alone)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    tree, todo = [], [pid]
    while todo:
        tree.append(todo.pop())
        todo += children.get(tree[-1], [])
    for p in tree:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
