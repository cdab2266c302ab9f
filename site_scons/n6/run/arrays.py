"""The numpy files a user gives a run (INPUTS=, model.json "reference_data", a model folder's
test_data.npz), read in one way: every array in full, numbers with at least one sample, floats
finite. Anything else (an empty, cut-short or damaged file, pickled objects, text) is a one-line
error naming the file, before any board is involved."""
import os
import zipfile

import numpy as np

from ..errors import N6Error

# What numpy and zipfile raise for a file that is not a whole .npy/.npz: bytes numpy calls a
# pickle, a zip cut short or damaged, a member with an unknown compression or marked encrypted.
_DAMAGED = (ValueError, EOFError, zipfile.BadZipFile, NotImplementedError, RuntimeError)


def read_arrays(path: str, what: str, fix: str) -> list[tuple[str | None, np.ndarray]]:
    """(name, array) of each array of the numpy file `path` (a .npy: one, name None; a .npz: its
    members, in order); `what` names the file in the errors ("inputs"), `fix` is their fix."""
    try:
        if os.path.isfile(path) and not os.path.getsize(path):
            raise N6Error(path, f"the {what} file is empty", fix)
        loaded = np.load(path)
        if isinstance(loaded, np.lib.npyio.NpzFile):
            with loaded:
                named: list[tuple[str | None, np.ndarray]] = [(k, loaded[k]) for k in loaded.files]
        else:
            named = [(None, loaded)]
    except OSError as e:
        raise N6Error(path, f"cannot read the {what} file: {e.strerror or e}", fix) from None
    except _DAMAGED as e:
        why = "numpy finds no array in it" if "pickle" in str(e) else str(e) or type(e).__name__
        raise N6Error(path, f"not a numpy {what} file: {why}", fix) from None
    if not named:
        raise N6Error(path, f"the {what} file holds no array", fix)
    for name, a in named:
        shown = f"array {name}" if name else "array"
        if not isinstance(a, np.ndarray) or a.dtype.kind not in "biuf":
            kind = a.dtype if isinstance(a, np.ndarray) else "bytes that are no array"
            raise N6Error(path, f"the {what} file holds {kind}, not numbers", fix)
        if not a.size or not a.ndim:
            raise N6Error(path, f"an {shown} of shape {list(a.shape)} holds no sample", fix)
        if a.dtype.kind == "f" and not np.all(np.isfinite(a)):     # the board would quantise it to any code
            at = [int(i) for i in np.argwhere(~np.isfinite(a))[0]]
            raise N6Error(path, f"{shown}{at} is {a[tuple(at)]}, not a finite number", "give finite numbers")
    return named


def named_arrays(path: str, what: str, fix: str) -> dict[str, np.ndarray]:
    """read_arrays as a dict by name, a .npy's one array named for the errors that list them."""
    return {k or "the unnamed array of a .npy": a for k, a in read_arrays(path, what, fix)}
