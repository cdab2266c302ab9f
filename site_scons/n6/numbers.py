"""Numbers given as variables (RUNS=, SEED=, PROFILE_SAMPLES=, VALIDATE_TOLERANCE=,
STEDGEAI_TIMEOUT=), checked when the command line is read: a count below 1, a negative seed or a
tolerance that is negative or not a number would otherwise end far later, in a traceback or a
verdict that means nothing (every comparison with nan is false)."""
import math
from collections.abc import Callable
from typing import TypeVar

from .errors import N6Error

T = TypeVar("T")


def _parse(name: str, value: object, convert: Callable[[str], T], kind: str, fix: str) -> T:
    try:
        return convert(str(value).strip())
    except ValueError:
        raise N6Error(name, f"{str(value)!r} is not {kind}", fix) from None


def _whole(name: str, value: object, low: int) -> int:
    fix = f"give {name}={low} or more"
    n = _parse(name, value, int, "a whole number", fix)
    if n < low:
        raise N6Error(name, f"{n} is {'negative' if n < 0 else 'zero'}", fix)
    return n


def _finite(name: str, value: object, low: float, fix: str) -> float:
    x = _parse(name, value, float, "a number", fix)
    if not math.isfinite(x):
        raise N6Error(name, f"{str(value)!r} is not a finite number", fix)
    if x < low:
        raise N6Error(name, f"{str(value)!r} is negative", fix)
    return x


def count(name: str, value: object) -> int:
    """A whole number ≥ 1 (runs, samples)."""
    return _whole(name, value, 1)


def seed(name: str, value: object) -> int:
    """A whole number ≥ 0 (numpy's generators take no negative seed)."""
    return _whole(name, value, 0)


def tolerance(name: str, value: object) -> float | None:
    """A finite number ≥ 0; empty: None (validate's rule then gives the bound)."""
    if value is None or str(value).strip() == "":
        return None
    return _finite(name, value, 0, f"give {name} a number 0 or more, e.g. {name}=2")


def seconds(name: str, value: object) -> float:
    """A time limit: a finite number of seconds above 0."""
    fix = f"give {name} a number of seconds above 0"
    x = _finite(name, value, 0, fix)
    if x == 0:
        raise N6Error(name, f"{str(value)!r} is zero", fix)
    return x
