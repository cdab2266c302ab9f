"""ST Edge AI Core releases we support and the facts that differ between them."""
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .errors import N6Error


SINGLE_MODEL_HEADER_WORDS = 24   # 2.x: one model on the board at a time


@dataclass(frozen=True)
class Release:
    core: str               # "2.2"
    core_full: str          # as printed by `stedgeai --version`
    atonn: tuple[int, int, int, int]   # LL_ATON / atonn version (major, minor, micro, dev)
    git_sha: str
    oe_suffix: str          # intermediate ONNX suffix
    runtime_lib: str        # GCC Cortex-M55 runtime library stem
    header_words: int       # words of the relocatable image header
    default_c_symbol: str   # C-symbol suffix when the name is the default `network`
    guard: str              # "warning" | "error" for the LL_ATON version guard
    stai_wrapper: bool      # writes stai_<N>.c/.h
    encryption_info: bool   # network.c has the encryption-info functions

    @property
    def atonn_str(self) -> str:
        return "{}.{}.{}-{}".format(*self.atonn)

    @property
    def git_description(self) -> str:
        return f"atonn-v{self.atonn_str}-g{self.git_sha[:8]}"

    @property
    def git_branch(self) -> str:
        return f"STAI-{self.core}"

    @property
    def rt_version(self) -> int:
        major, minor, micro, _ = self.atonn
        return major << 24 | minor << 16 | micro << 8

    @property
    def header_size(self) -> int:
        return self.header_words * 4

    @property
    def multi_model(self) -> bool:
        """Its validation firmware loads a set of models (3.x): the image header grew past 2.x's
        24 words with the words that place an image among others."""
        return self.header_words > SINGLE_MODEL_HEADER_WORDS


RELEASES = {
    "2.2": Release("2.2", "2.2.0-20266 2adc00962", (1, 1, 1, 14), "3f2a9c81d07be6e4a51c0d9b8e7f6a2c4d1b0e93",
                   "_OE_3_3_0", "NetworkRuntime1020_CM55_GCC", 24, "Default", "warning", False, False),
    "3.0": Release("3.0", "3.0.0-20426 5c81e2f7a", (1, 1, 3, 8), "80369096c1c1b7ea4d6b2cc985d9e001f59b7c27",
                   "_OE_3_3_1", "NetworkRuntime1100_CM55_GCC", 26, "network", "error", True, True),
}
DEFAULT_RELEASE = "2.2"


def release(core: str) -> Release:
    """Release for a version string such as "2.2", "3.0.0-20426" or "v2.2.0-20266 2adc00962"."""
    key = ".".join(str(core).lstrip("v").split(".")[:2])
    if key not in RELEASES:
        raise N6Error(None, f"ST Edge AI Core {core} is not supported (supported: {', '.join(RELEASES)})",
                      "install a supported release and point STEDGEAI_CORE_DIR at it")
    return RELEASES[key]


def release_for_atonn(version: Sequence[int]) -> Release | None:
    """Release whose LL_ATON version is `version` (a 4-tuple), or None."""
    return next((r for r in RELEASES.values() if r.atonn == tuple(version)), None)


def c_symbol(rel: Release, name: str | None) -> str:
    """C-symbol suffix for c-name `name`: 2.x maps the default name to `Default`."""
    return rel.default_c_symbol if name in (None, "network") else name


def generate_outputs(rel: Release, name: str | None, model_stem: str, epoch_controller: bool,
                     raw_postfixes: Iterable[str], mem_file_prefix: str = "atonbuf") -> list[str]:
    """File names `stedgeai generate` writes into its output directory, in a stable order."""
    n = name or "network"
    files = [f"{n}.c", f"{n}.h", f"{n}_c_info.json", f"{n}_generate_report.txt",
             f"{model_stem}{rel.oe_suffix}.onnx", f"{model_stem}{rel.oe_suffix}_Q.json", "LICENSE.txt"]
    if epoch_controller:
        files.append(f"{n}_ecblobs.h")
    if rel.stai_wrapper:
        files += [f"stai_{n}.c", f"stai_{n}.h"]
    files += [f"{n}_{mem_file_prefix}.{p}.raw" for p in raw_postfixes]
    return files
