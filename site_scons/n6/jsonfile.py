"""JSON as ST's tools accept it: `//` comments and trailing commas are tolerated."""
import json
import re
from typing import Any

from .errors import N6Error
from .paths import StrPath

JsonObject = dict[str, Any]   # a JSON object as read or written: its values of any JSON type
_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*')
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[\]}])')


def loads_lenient(text: str, **kw: Any) -> Any:
    text = _COMMENT.sub(lambda m: m.group(1) or "", text)
    text = _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)
    return json.loads(text, **kw)


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object whose keys are all different (Python's json, as ST's tools, keeps the last)."""
    seen = set()
    for key, _ in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen.add(key)
    return dict(pairs)


def read_text(path: StrPath, what: str) -> str:
    """The text of a UTF-8 file (no byte-order mark); anything else is a one-line N6Error."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise N6Error(path, f"{what} not found", "check the path") from None
    except IsADirectoryError:
        raise N6Error(path, f"{what} is a folder", "point to a file") from None
    except OSError as e:
        raise N6Error(path, f"cannot read {what}: {e.strerror}") from None
    if data.startswith(b"\xef\xbb\xbf") or data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise N6Error(path, f"{what} starts with a byte-order mark", "save it as UTF-8 without BOM")
    encoding = json.detect_encoding(data[:4])   # NULs among the first (ASCII) characters: UTF-16/32
    if encoding != "utf-8":
        raise N6Error(path, f"{what} is {encoding.upper()} text (no byte-order mark), not UTF-8", "save it as UTF-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise N6Error(path, f"{what} is not UTF-8 (byte 0x{data[e.start]:02X} at offset {e.start})",
                      "save it as UTF-8") from None


_SHAPES: dict[type, str] = {dict: "an object {...}", list: "an array [...]"}


def read_json(path: StrPath, what: str = "JSON file", lenient: bool = True, shape: type | None = None,
              unique: bool = False) -> Any:
    """Parse `path`; any failure becomes an N6Error naming the file and the position. `shape`:
    the type the top level must have (dict or list). `unique`: a key given twice in one object is
    an error (n6's own files; ST's files are read as ST's tools read them: the last one wins)."""
    text = read_text(path, what)
    kw: dict[str, Any] = {"object_pairs_hook": _unique_keys} if unique else {}
    try:
        data = loads_lenient(text, **kw) if lenient else json.loads(text, **kw)
    except _DuplicateKey as e:
        raise N6Error(path, f"{what}: key '{e.args[0]}' is given twice in one object", "keep one of them") from None
    except json.JSONDecodeError as e:
        raise N6Error(path, f"malformed {what}: {e.msg} at line {e.lineno} column {e.colno}",
                      "fix the JSON syntax") from None
    except RecursionError:
        raise N6Error(path, f"malformed {what}: nested too deeply", "fix the JSON structure") from None
    if shape is not None and not isinstance(data, shape):
        raise N6Error(path, f"{what} must hold {_SHAPES[shape]} at the top level, not {type(data).__name__}",
                      "fix the top-level JSON value")
    return data
