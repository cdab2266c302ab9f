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


def _writer_pid(name):
    """The pid of the process writing the temporary `name`, else None (not a temporary)."""
    _, sep, pid = str(name).rpartition(".tmp")
    return int(pid) if sep and pid.isdigit() else None


def intended_path(name):
    """The file a write-then-rename temporary is for; any other name as it is."""
    return str(name).rpartition(".tmp")[0] if _writer_pid(name) is not None else str(name)


@contextlib.contextmanager
def atomic_open(path, mode="wb"):
    for stale in glob.glob(glob.escape(str(path)) + ".tmp*"):   # left by a killed run, not a running one
        pid = _writer_pid(stale)
        if not (pid is not None and _alive(pid)):
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
