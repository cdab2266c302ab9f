"""Neural-ART profile files (`user_neuralart.json`) and the `--st-neural-art` argument."""
import os
import shlex
from dataclasses import dataclass

from .errors import N6Error
from .jsonfile import read_json


@dataclass(frozen=True)
class NeuralArtProfile:
    name: str
    path: str            # the profile JSON
    options: tuple       # compiler options, split like a shell would
    memory_pool: str     # absolute path of the .mpool
    memory_desc: str = None

    def has(self, option):
        return option in self.options

    @property
    def epoch_controller(self):
        return self.has("--enable-epoch-controller")

    @property
    def all_buffers_info(self):
        return self.has("--all-buffers-info")


# Neural-ART compiler options a profile may hold (flags, then options taking one value).
FLAGS = {"--all-buffers-info", "--enable-epoch-controller", "--Os", "--mvei", "--cache-maintenance", "--native-float",
         "--enable-virtual-mem-pools", "--Ocache-opt", "--Oauto-sched", "--Oalt-sched", "--Oconv-split-kw",
         "--no-hw-sw-parallelism", "--ec-single-epoch", "--force-8bits-scale-offset", "-O0", "-O1", "-O2", "-O3",
         "--Oauto"}
VALUED = {"--csv-file", "--optimization", "--Omax-ca-pipe"}


def parse_options(path, name, text):
    """The profile's `options` string as argv; unbalanced quotes and unknown options are errors."""
    if not isinstance(text, str):
        raise N6Error(path, f"profile '{name}': 'options' is {type(text).__name__}, not a string",
                      'write "options": "--all-buffers-info ..."')
    try:
        argv = shlex.split(text)
    except ValueError as e:
        raise N6Error(path, f"profile '{name}': options: {str(e).lower()} in {text!r}",
                      "balance the quotes in the options string") from None
    i = 0
    while i < len(argv):
        opt = argv[i]
        key = opt.split("=", 1)[0]
        if key in VALUED:
            if "=" not in opt and (i + 1 >= len(argv) or argv[i + 1].startswith("--")):
                raise N6Error(path, f"profile '{name}': option {opt} needs a value", f"write {opt} <value>")
            i += 1 if "=" in opt else 2
            continue
        if opt not in FLAGS:
            raise N6Error(path, f"profile '{name}': unknown Neural-ART compiler option {opt!r}",
                          "remove it or fix its spelling (known: " + " ".join(sorted(FLAGS | VALUED)) + ")")
        i += 1
    return tuple(argv)


def split_profile_arg(arg):
    """`<profile>@<file.json>` → (profile, file)."""
    profile, sep, path = arg.partition("@")
    if not sep or not profile or not path:
        raise N6Error(None, f"--st-neural-art {arg!r} is not of the form <profile>@<file.json>",
                      "pass e.g. --st-neural-art default@models/kws/neural_art.json")
    return profile, path


def read_profile(path, name):
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
    return NeuralArtProfile(
        name=name, path=str(path),
        options=parse_options(path, name, entry.get("options", "")),
        memory_pool=os.path.normpath(os.path.join(base, entry["memory_pool"])),
        memory_desc=os.path.normpath(os.path.join(base, desc)) if desc else None,
    )
