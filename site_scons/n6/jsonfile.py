"""JSON as ST's tools accept it: `//` comments and trailing commas are tolerated."""
import json
import re

from .errors import N6Error

_COMMENT = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*')
_TRAILING_COMMA = re.compile(r'("(?:\\.|[^"\\])*")|,(\s*[\]}])')


def loads_lenient(text):
    text = _COMMENT.sub(lambda m: m.group(1) or "", text)
    text = _TRAILING_COMMA.sub(lambda m: m.group(1) or m.group(2), text)
    return json.loads(text)


def read_json(path, what="JSON file", lenient=True):
    """Parse `path`; any failure becomes an N6Error naming the file and the position."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise N6Error(path, f"{what} not found", "check the path") from None
    except OSError as e:
        raise N6Error(path, f"cannot read {what}: {e.strerror}") from None
    try:
        return loads_lenient(text) if lenient else json.loads(text)
    except json.JSONDecodeError as e:
        raise N6Error(path, f"malformed {what}: {e.msg} at line {e.lineno} column {e.colno}",
                      "fix the JSON syntax") from None
