"""Every programmer subprocess goes through ToolRunner: the argv and the full output go to a log
file, VERBOSE shows the argv, a timeout kills a hung tool, dry-run prints instead of running."""
import os
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass


@dataclass
class ToolResult:
    argv: list
    returncode: int
    output: str
    seconds: float
    timed_out: bool = False
    dry_run: bool = False


class ToolRunner:
    def __init__(self, log_path=None, verbose=False, dry_run=False, timeout=120, env=None, echo=print):
        self.log_path, self.verbose, self.dry_run = log_path, verbose, dry_run
        self.timeout, self.env, self.echo = timeout, env, echo
        self.calls = 0

    def log(self, text):
        if self.log_path:
            os.makedirs(os.path.dirname(self.log_path) or ".", exist_ok=True)
            with open(self.log_path, "a", encoding="utf-8") as f:
                f.write(text)

    def run(self, argv, on_output=None, timeout=None):
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
        timed_out = threading.Event()

        def kill():
            timed_out.set()
            proc.kill()
        timer = threading.Timer(timeout, kill)
        timer.start()
        chunks = []
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
