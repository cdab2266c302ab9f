"""TOML files (board descriptions) read like the JSON ones: UTF-8 without byte-order mark, the
syntax error's position, and the top-level table checked, each as one N6Error."""
import tomllib
from typing import Any

from .errors import N6Error
from .jsonfile import read_text
from .paths import StrPath


def read_toml(path: StrPath, what: str = "TOML file") -> dict[str, Any]:
    return parse_toml(path, read_text(path, what), what)


def parse_toml(path: StrPath, text: str, what: str = "TOML file") -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise N6Error(path, f"malformed {what}: {e}", "fix the TOML syntax") from None
