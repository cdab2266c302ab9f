"""Write-then-rename, so an interrupted step never leaves a file a later build trusts."""
import contextlib
import glob
import os


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # someone else's process
        return True
    return True


@contextlib.contextmanager
def atomic_open(path, mode="wb"):
    for stale in glob.glob(glob.escape(str(path)) + ".tmp*"):   # left by a killed run, not a running one
        pid = stale.rsplit(".tmp", 1)[1]
        if not (pid.isdigit() and _alive(int(pid))):
            try:
                os.unlink(stale)
            except FileNotFoundError:
                pass
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, mode) as f:
            yield f
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_bytes(path, data):
    with atomic_open(path, "wb") as f:
        f.write(data)


def write_text(path, text):
    with atomic_open(path, "w") as f:
        f.write(text)
