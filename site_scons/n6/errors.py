"""The one exception type users see: a problem in a named file plus how to fix it."""
import errno


class N6Error(Exception):
    """Bad input. Rendered as one line: `<file>: <problem> (fix: <fix>)`."""

    def __init__(self, path: object, problem: str, fix: str | None = None) -> None:
        self.path = str(path) if path is not None else None
        self.problem = problem
        self.fix = fix
        super().__init__(str(self))

    def __str__(self) -> str:
        text = f"{self.path}: {self.problem}" if self.path else self.problem
        return f"{text} (fix: {self.fix})" if self.fix else text


# What the machine refuses (a full disk, a read-only folder): the fix is the machine's, not the input's.
_MACHINE_FIXES: dict[int | None, str] = {errno.ENOSPC: "free space on its disk, then build again",
                  errno.EDQUOT: "free space within your disk quota, then build again",
                  errno.EROFS: "make the folder writable (or choose another BUILD_DIR)",
                  errno.EACCES: "make the folder writable (or choose another BUILD_DIR)"}


def machine_error(error: OSError, path: str) -> N6Error | None:
    """The N6Error of an OSError the machine raised while a step wrote `path` (a full disk, a
    read-only folder), or None for any other OSError. A write-then-rename temporary is named by
    the file it was for."""
    fix = _MACHINE_FIXES.get(error.errno)
    if fix is None:
        return None
    from .atomic import intended_path
    where = intended_path(error.filename) if error.filename else path
    return N6Error(where, f"cannot write: {error.strerror or error}", fix)
