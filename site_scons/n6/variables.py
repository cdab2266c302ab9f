"""The build's variables (`scons NAME=value`), each declared once: its name, help, default and
allowed values, the latter taken from the library's own tables (a release added to
`releases.RELEASES` is a value STEDGEAI_SIM_RELEASE accepts). The SCons variables, the tools'
defaults, `scons -h` and docs/variables.md are all made from `VARIABLES`."""
import os
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from . import numbers
from .errors import N6Error
from .board_files import DEFAULT_BOARD
from .build_layout import DEFAULT_BUILD_DIR
from .flash.backend import BACKENDS, RESET_MODES
from .releases import DEFAULT_RELEASE, RELEASES
from .run.options import NPU_MAX_LSB, PER_LAYER_MODES, RUN_MODES, TOLERANCE_LSB

BOOL, CHOICE, PATH, TEXT, NUMBER = "bool", "choice", "path", "text", "number"


@dataclass(frozen=True)
class Variable:
    name: str
    help: str
    default: object = ""
    kind: str = TEXT                        # how the value is read: BOOL, CHOICE, PATH, TEXT, NUMBER
    choices: tuple = ()                     # CHOICE: the values allowed
    aliases: Mapping = field(default_factory=dict)   # CHOICE: other spellings → a value
    ignorecase: bool = False                # CHOICE: any case, read as the lower-case value
    parse: Optional[Callable] = None        # NUMBER: (name, text) → number, N6Error when out of range
    environ: Optional[str] = None           # an environment variable that sets the default
    empty: bool = True                      # "" is a value (False: refused, e.g. BUILD_DIR= would build in the tree)

    def check(self, value: object) -> None:
        """Refuse what no table of SCons's checks: an empty value where there must be one."""
        if not self.empty and str(value).strip() == "":
            raise N6Error(None, f"{self.name}= is empty", f"give {self.name} a value (default: {self.shown_default()})")

    def default_value(self, environ: Mapping[str, str] = os.environ) -> object:
        """The default in effect: the environment variable's value when it is set."""
        return environ.get(self.environ, self.default) if self.environ else self.default

    def shown_default(self) -> str:
        """The default as `scons -h` and the docs print it."""
        yes_no: dict[object, object] = {True: "yes", False: "no"}
        text = yes_no.get(self.default, self.default) if self.kind == BOOL else self.default
        text = str(text) if text != "" else "empty"
        return f"{text} (${self.environ} when set)" if self.environ else text

    def shown_values(self) -> str:
        """The values allowed, as `scons -h` and the docs print them ("" when any text goes)."""
        if self.kind == BOOL:
            return "yes|no"
        if self.kind == CHOICE:
            return "|".join(v if v else "''" for v in self.choices)
        return ""


_PER_MODEL = "; model.json \"reloc\" overrides it per model"
_BUDGET = "0x.., K/M suffixes; none: gate off; empty: the board file's"

VARIABLES = (
    Variable("VERBOSE", "show full command lines instead of short progress lines", False, BOOL),
    Variable("BUILD_DIR", "where every output goes", DEFAULT_BUILD_DIR, PATH, empty=False),
    Variable("STEDGEAI_CORE_DIR", "ST Edge AI Core install (empty: the simulated one)", "", PATH,
             environ="STEDGEAI_CORE_DIR"),
    Variable("STEDGEAI_TIMEOUT", "seconds `stedgeai generate` may take per model before it is stopped", 3600,
             NUMBER, parse=numbers.seconds),
    Variable("STEDGEAI_SIM_RELEASE", "release of the simulated ST Edge AI Core", DEFAULT_RELEASE, CHOICE,
             choices=tuple(RELEASES)),
    Variable("RELOC_SECURE", "build images for a secure firmware (-mcmse), like ST's default" + _PER_MODEL, True,
             BOOL),
    Variable("RELOC_SPLIT", "params in a separate <name>_rel_params.bin" + _PER_MODEL, False, BOOL),
    Variable("RELOC_DBG_INFO", "epoch debug info (LL_ATON_EB_DBG_INFO)" + _PER_MODEL, True, BOOL),
    Variable("RELOC_ECBLOB_IN_PARAMS", "constant epoch-controller blobs in the params area" + _PER_MODEL, False,
             BOOL),
    Variable("RELOC_ABSOLUTE_FLASH_POOLS", "build absolute pools in read-only external flash anyway, like ST's "
             "flow (the loader would copy into flash; normally an error)", False, BOOL),
    Variable("RELOC_COPY_MODE", "size-gate exec RAM for COPY mode instead of XIP", False, BOOL),
    Variable("RELOC_NAME", "image base name (default: the network file stem)" + _PER_MODEL),
    Variable("RELOC_FLASH_SIZE", f"flash bytes for <name>_rel.bin (size gate; {_BUDGET})"),
    Variable("RELOC_PARAMS_FLASH_SIZE", f"flash bytes for <name>_rel_params.bin (size gate; {_BUDGET})"),
    Variable("RELOC_EXEC_RAM_SIZE", f"exec RAM bytes for the model (size gate; {_BUDGET})"),
    Variable("RELOC_EXT_RAM_SIZE", f"external RAM bytes for the relocatable read/write pool (size gate; {_BUDGET})"),
    Variable("BOARD", "board file: a name in firmware/boards/ or a path to a .toml file", DEFAULT_BOARD),
    Variable("MODEL", "model(s) to flash, run, validate or profile (comma list; default: the board file's, else "
             "every model, each in turn on the board, with a summary; flash needs a choice when they do not fit "
             "together)"),
    Variable("PROBE", "serial number of the ST-LINK to flash (default: the only one attached); several, comma "
             "separated: a board each, the models spread over them (docs/boards.md)"),
    Variable("FORCE", "flash: write every sector, ignoring what the board holds; profile: measure again", False,
             BOOL),
    Variable("FLASH_BACKEND", "programmer (empty: the board file's)", "", CHOICE, choices=("",) + BACKENDS),
    Variable("FLASH_RESET", "reset after flashing", "none", CHOICE, choices=RESET_MODES),
    Variable("DRY_RUN", "flash: print the programmer commands instead of running them", False, BOOL),
    Variable("DECIDER", "change detection by content: signature reuses a file's hash while its full stat is "
             "unchanged; content hashes every file", "signature", CHOICE, choices=("signature", "content")),
    Variable("RUNS", "run/validate: inferences per model (default: one per sample of INPUTS=, else 1)", 1, NUMBER,
             parse=numbers.count),
    Variable("SEED", "run/validate: seed of the random inputs", 0, NUMBER, parse=numbers.seed),
    Variable("INPUTS", "run/validate: inputs (.npy, .npz: one array per input) instead of random data", "", PATH),
    Variable("PORT", "run/validate: the board's serial port (empty: the simulated board); several, comma "
             "separated: one per PROBE= board, in order"),
    Variable("LAB_PLACES", "run/validate/profile: labgrid places whose boards to use (comma list; acquired for "
             "the build, released at its end: docs/lab.md)"),
    Variable("LAB_COORDINATOR", "the labgrid coordinator of LAB_PLACES (HOST:PORT)", "127.0.0.1:20408",
             environ="LG_COORDINATOR"),
    Variable("SIM_BOARDS", "run/validate/profile: simulated boards to spread the models over (one job each)", 1,
             NUMBER, parse=numbers.count),
    Variable("SIM_FIRMWARE", "the simulated board's firmware: empty = its own; ST's validation firmware ELF, an ST "
             "Edge AI Core install (the variant the flash step chooses) or 'st' (STEDGEAI_CORE_DIR's) = that "
             "firmware on the DK twin", environ="N6_SIM_FIRMWARE"),
    Variable("RUN_PER_LAYER", "run: per-epoch counters (yes), and the epochs' tensors as .npy (data); the simulated "
             "board then counts cycles, ~10x slower", "no", CHOICE, choices=PER_LAYER_MODES,
             aliases={"0": "no", "1": "yes", "false": "no", "true": "yes", "off": "no", "on": "yes"},
             ignorecase=True),
    Variable("RUN_MODE", "run: io (inputs sent, outputs saved) or perf (timing only: each input filled from one "
             "value, no outputs back, as ST's profiler measures)", "io", CHOICE, choices=RUN_MODES, ignorecase=True),
    Variable("VALIDATE_TOLERANCE", f"validate: largest allowed output error in LSB (empty: {TOLERANCE_LSB:g}, and "
             f"{NPU_MAX_LSB} for outputs of the simulated NPU: docs/validate.md)", "", NUMBER, parse=numbers.tolerance),
    Variable("PROFILE_SAMPLES", "profile: runs per counter set", 1, NUMBER, parse=numbers.count),
    Variable("PROFILE_BASELINE", "profile: compare with this profile.json (default: the previous profile)", "",
             PATH),
    Variable("CACHE_DIR", "shared build cache (off when empty); deploy steps are never cached", "", PATH,
             environ="N6_CACHE_DIR"),
)
BY_NAME = {v.name: v for v in VARIABLES}


def defaults(*names: str) -> dict:
    """{name: default} of the variables `names` (all when none is given): a tool's defaults."""
    return {v.name: v.default_value() for v in VARIABLES if not names or v.name in names}


def markdown_table() -> str:
    """The variables as the Markdown table of docs/variables.md."""
    rows = ["| Variable | Default | Values | What it does |", "|---|---|---|---|"]
    def cell(text: str) -> str:
        return text.replace("|", "/").replace("<", "&lt;")
    rows += [f"| `{v.name}` | {cell(v.shown_default())} | {v.shown_values().replace('|', ' or ')} | {cell(v.help)} |"
             for v in VARIABLES]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":   # cd site_scons && python -m n6.variables: the table of docs/variables.md
    print(markdown_table(), end="")
