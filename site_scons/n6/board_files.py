"""Where board description files are: BOARD= (the name of a bundled board, or a path to a
.toml file) → its file. Kept apart from the parser so that naming a board costs no import."""
import os

from .paths import BOARDS as BOARDS_DIR
DEFAULT_BOARD = "stm32n6570-dk"


def board_path(name_or_path: str) -> str:
    """BOARD= value → file: a path to a .toml file, or the name of a bundled board."""
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        return name_or_path
    path = os.path.join(BOARDS_DIR, name_or_path + ".toml")
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def available_boards() -> list[str]:
    return sorted(f[:-5] for f in os.listdir(BOARDS_DIR) if f.endswith(".toml"))
