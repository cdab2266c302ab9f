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


def split_profile_arg(arg):
    """`<profile>@<file.json>` → (profile, file)."""
    profile, sep, path = arg.partition("@")
    if not sep or not profile or not path:
        raise N6Error(None, f"--st-neural-art {arg!r} is not of the form <profile>@<file.json>",
                      "pass e.g. --st-neural-art default@models/kws/neural_art.json")
    return profile, path


def read_profile(path, name):
    data = read_json(path, "Neural-ART profile file")
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
    base = os.path.dirname(path)
    desc = entry.get("memory_desc")
    return NeuralArtProfile(
        name=name, path=str(path),
        options=tuple(shlex.split(entry.get("options", ""))),
        memory_pool=os.path.normpath(os.path.join(base, entry["memory_pool"])),
        memory_desc=os.path.normpath(os.path.join(base, desc)) if desc else None,
    )
