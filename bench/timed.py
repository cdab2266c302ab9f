"""What bench scripts share: one timed `scons -Q` that must succeed, as a user's shell runs it."""
import os
import subprocess
import sys
import time

# Python caches the build's own modules as bytecode in a usual shell; no cache from the caller's.
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "N6_CACHE_DIR")}


def scons(cwd, *args):
    """(seconds, stdout) of `scons -Q args` in `cwd`; its output and exit when it fails."""
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "SCons", "-Q", *args], cwd=cwd, capture_output=True, text=True,
                          env=ENV)
    if proc.returncode:
        sys.exit(proc.stdout + proc.stderr)
    return time.perf_counter() - t, proc.stdout
