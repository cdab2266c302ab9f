"""Neural-ART profile files (`user_neuralart.json`) and the `--st-neural-art` argument.

The profile's `options` string is passed to the Neural-ART compiler as written: a tool in front
of a compiler must not be stricter than the compiler. It is checked for the grammar of compiler
options only; an option ST's profile schema does not list passes with a warning, and only the
few options whose meaning the build itself supplies are refused."""
import difflib
import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from .errors import N6Error
from .jsonfile import read_json
from .paths import StrPath


@dataclass(frozen=True)
class NeuralArtProfile:
    name: str
    path: str            # the profile JSON
    options: tuple[str, ...]   # compiler options, split like a shell would
    memory_pool: str     # absolute path of the .mpool
    memory_desc: str | None = None
    warnings: tuple[str, ...] = ()  # one line each: options ST's schema does not list, keys ST's tool ignores

    def has(self, option: str) -> bool:
        return option in self.options

    @property
    def epoch_controller(self) -> bool:
        return self.has("--enable-epoch-controller")

    @property
    def all_buffers_info(self) -> bool:
        return self.has("--all-buffers-info")


# The options of ST's Neural-ART profile schema (and of ST's shipped profiles): those taking one
# value, then the flags. They only decide whether a word after an option is its value.
VALUED = {
    "--optimization", "-O", "--Opreserve-inputs", "--Omax-ca-pipe", "--Oauto-th", "--Oconv-split-th",
    "--optimization-rounds", "--onnx-optimizations", "--onnx-optimizations-file", "--onnx-extra-opts",
    "--onnx-omit-opt", "--csv-file", "--dot-file", "--dot-maxlabel", "--gnuplot-mem-file", "--gnuplot-buf-file",
    "--initializers-infofile", "--def-sym", "-D", "--onnx-out-format", "--onnx-output", "--onnx-dir-prefix",
    "--vq-max-iter", "--hidden-param", "--max-ram-size", "--w-bits", "--f-bits", "--quant-file",
    "--json-quant-file", "--save-json-quant-file", "--load-mdesc", "--load-mdesc-file", "--save-mdesc-file",
    "--save-mpool-file", "--load-cdesc", "--target", "--d-onnx-p", "--d-onnx-g", "--d-qinfo", "--d-CFG", "--d-lv",
    "--d-sched", "--d-canonic", "--d-lower", "--d-o-dump", "--d-b-alloc", "--d-onnx-o", "--d-mach", "--d-ginf",
    "--d-dead", "--d-post", "--d-epoch", "--d-stat", "--d-vq", "--d-dma", "--d-onnx-temps", "--d-auto",
    "--load-mpool", "--load-mpool-file", "--network-name", "--out-dir-prefix", "--orlando-file", "-g",
    "--output-info-file"}
FLAGS = {
    "--all-buffers-info", "--enable-epoch-controller", "--ec-single-epoch", "--enable-virtual-mem-pools",
    "--enable-virtual-mem-pools-only", "--native-float", "--mvei", "--cache-maintenance", "--Os", "-M", "--Ox", "-x",
    "--Ocache-opt", "--Oalt-sched", "--Oclone-dma", "--Oshuffle-dma", "--Oconv-split-cw", "--Oconv-split-kw",
    "--Oconv-split-stripe", "--Oconv-split-stripe-full", "--Oauto", "--Oauto-sched", "--Oauto-x", "--Oauto-pipe",
    "--Oauto-O", "--no-hw-sw-parallelism", "--force-8bits-scale-offset", "--force-cache-use",
    "--enable-bus-signals", "--experimental-hw-lowering", "--emit-validation-info", "--disable-sw-fallback",
    "--sw-fallback", "--disable-orlando-opt", "--disable-decomp-bus", "--dont-remove-deadlocks",
    "--convert-scaleoffset-to-qmn", "--simulate-qmn-format", "--fake-Qmn", "--no-emit-pools-init",
    "--continue-on-errors", "--convert", "--onnx-only", "--save-all", "--verbose", "--doth", "--gnuplot-multi",
    "--num-ops-info", "--mapping-recap", "--dot-skip-params", "--d-cache-ops", "--d-onnx-all-temps",
    "--d-lower-iter-graph", "--skip-version-generation"}
# Options whose value the build supplies itself (stedgeai sets them from the profile and the
# generate command line): another value here would describe a network the build does not read.
SUPPLIED = {"--load-mpool": "the profile's memory_pool", "--load-mpool-file": "the profile's memory_pool",
            "--network-name": "the model's name (model.json \"name\")",
            "--out-dir-prefix": "its workspace folder", "--orlando-file": "its output folder",
            "-g": "its output folder",
            "--output-info-file": "its output folder"}
# `--long-name[=value]` or `-X[attached value]`, as the compiler's option parser reads them.
_LONG = re.compile(r"--[A-Za-z][A-Za-z0-9_]*(-[A-Za-z0-9_]+)*")
_SHORT = re.compile(r"-([A-Za-z])")


def _option_name(token: str) -> str | None:
    """The option a token names (`--csv-file=x` → `--csv-file`, `-O3` → `-O`), None when the
    token is a value, '' when it looks like an option but is not one."""
    if not token.startswith("-") or re.fullmatch(r"-\d[\d.]*", token):
        return None
    if token.startswith("--"):
        name = token.split("=", 1)[0]
        return name if _LONG.fullmatch(name) else ""
    m = _SHORT.match(token)
    return "-" + m.group(1) if m else ""


def parse_options(path: StrPath, name: str, text: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(argv, warnings) of a profile's `options` string: argv split like a shell would, a warning
    per option ST's schema does not list. What is not an option, a known option missing its value
    or followed by one it does not take, and an option the build supplies are N6Errors."""
    where = f"profile '{name}'"
    if not isinstance(text, str):
        raise N6Error(path, f"{where}: 'options' is {type(text).__name__}, not a string",
                      'write "options": "--all-buffers-info ..."')
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise N6Error(path, f"{where}: options: {str(e).lower()} in {text!r}",
                      "balance the quotes in the options string") from None
    warnings = []
    i = 0
    while i < len(argv):
        token = argv[i]
        opt = _option_name(token)
        if opt is None and i and _option_name(argv[i - 1]) in FLAGS:
            raise N6Error(path, f"{where}: {token!r} follows {argv[i - 1]}, which takes no value", "remove it")
        if not opt:
            raise N6Error(path, f"{where}: {token!r} is not an option",
                          "options start with - or -- (an option's value follows it)")
        if opt in SUPPLIED:
            raise N6Error(path, f"{where}: option {opt} is set by the build from {SUPPLIED[opt]}", "remove it")
        attached = "=" in token or (not token.startswith("--") and len(token) > 2)
        value_next = i + 1 < len(argv) and _option_name(argv[i + 1]) is None
        if opt in VALUED and not attached and not value_next:
            raise N6Error(path, f"{where}: option {opt} needs a value", f"write {opt} <value>")
        if opt not in VALUED | FLAGS:
            warnings.append(f"{path}: {where}: Neural-ART compiler option '{opt}' is not in ST's profile schema: "
                            "passed to the compiler as written")
        i += 2 if value_next and opt not in FLAGS and not attached else 1
    return tuple(argv), tuple(warnings)


def split_profile_arg(arg: str) -> tuple[str, str]:
    """`<profile>@<file.json>` → (profile, file)."""
    profile, sep, path = arg.partition("@")
    if not sep or not profile or not path:
        raise N6Error(None, f"--st-neural-art {arg!r} is not of the form <profile>@<file.json>",
                      "pass e.g. --st-neural-art default@models/kws/neural_art.json")
    return profile, path


PROFILE_KEYS = ("memory_pool", "memory_desc", "options")     # what ST's tool reads from a profile


def _unknown_keys(path: StrPath, name: str, entry: dict[str, object]) -> Iterator[str]:
    """A warning per key of the profile ST's tool does not read (it ignores them): a typo such as
    "option" would silently drop every option."""
    for key in entry:
        if key not in PROFILE_KEYS:
            near = difflib.get_close_matches(key, PROFILE_KEYS, 1)
            yield (f"{path}: profile '{name}': key '{key}' is not read by ST's tool (ignored)" +
                   (f"; did you mean '{near[0]}'?" if near else ""))


def read_profile(path: StrPath, name: str) -> NeuralArtProfile:
    data = read_json(path, "Neural-ART profile file", shape=dict)
    profiles = data.get("Profiles") if isinstance(data, dict) else None
    if not isinstance(profiles, dict):
        raise N6Error(path, "malformed profile file: no 'Profiles' object",
                      'write {"Globals": {}, "Profiles": {"<name>": {...}}}')
    if name not in profiles:
        known = ", ".join(sorted(profiles)) or "none"
        raise N6Error(path, f"profile '{name}' is not defined (defined: {known})",
                      "pick one of the defined profiles or add it to the file")
    entry = profiles[name]
    if not isinstance(entry, dict) or "memory_pool" not in entry:
        raise N6Error(path, f"profile '{name}' has no 'memory_pool'", "add \"memory_pool\": \"./<file>.mpool\"")
    for key in ("memory_pool", "memory_desc"):
        if key in entry and not (isinstance(entry[key], str) and entry[key]):
            raise N6Error(path, f"profile '{name}': '{key}' is {entry[key]!r}, not a file name",
                          f'write "{key}": "./<file>"')
    base = os.path.dirname(path)
    desc = entry.get("memory_desc")
    options, warnings = parse_options(path, name, entry.get("options", ""))
    warnings += tuple(_unknown_keys(path, name, entry))
    return NeuralArtProfile(
        name=name, path=str(path),
        options=options, warnings=warnings,
        memory_pool=os.path.normpath(os.path.join(base, entry["memory_pool"])),
        memory_desc=os.path.normpath(os.path.join(base, desc)) if desc else None,
    )
