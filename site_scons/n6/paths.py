"""Where the project's own folders are: the repository root, its board files and firmware
scripts, and the simulators of ST's tools. The one place that knows the layout of the tree; the
product reaches a simulator only through the paths here (its install folder, its executable)."""
import os

StrPath = str | os.PathLike[str]   # a file named by text or by a Path

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE_SCONS = os.path.join(ROOT, "site_scons")
N6 = os.path.join(SITE_SCONS, "n6")                    # the library (package n6)
MODELS = os.path.join(ROOT, "models")                  # the model folders (no build output goes there)
FIRMWARE = os.path.join(ROOT, "firmware")
BOARDS = os.path.join(FIRMWARE, "boards")
SIM = os.path.join(ROOT, "sim")
SIM_STEDGEAI = os.path.join(SIM, "stedgeai")          # the simulated ST Edge AI Core (package stedgeai_sim)
SIM_PROGRAMMER_BIN = os.path.join(SIM, "programmer", "bin")   # the simulated STM32_Programmer_CLI
SIM_BOARD = os.path.join(SIM, "board")                # the simulated board (package n6board)
# Folders of the source tree: no build output goes into one (BUILD_DIR, CACHE_DIR)
SOURCE_FOLDERS = tuple(os.path.join(ROOT, d) for d in (".git", ".ci", "bench", "docs", "firmware", "models", "sim",
                                                        "site_scons", "tests", "tools"))
