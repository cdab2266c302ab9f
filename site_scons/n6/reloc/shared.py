"""Runtime sources that include the model's configuration header (MODEL_CONF) and yet compile to
the same object whatever its values: ST's ll_aton_reloc_callbacks.c reads it through
ll_aton_reloc_network.h and, in ST's 2.2 install and the simulated one, uses none of it. ST's
makefile compiles it per model; here once per flag set, with a header of neutral values. Every
such compile checks that promise: the object made with a second header, which differs in every
value, must be the same bytes, or the step stops in one line rather than give every model one
model's object."""
import os
import subprocess
import tempfile
from collections.abc import Sequence

from ..atomic import write_bytes, write_text
from ..errors import N6Error
from ..releases import RELEASES
from .names import CONF_NAME
from .prepare import Prepared, conf_h


def neutral_conf_h(variant: int) -> str:
    """The configuration header compiled with (variant 0) or compared against (1): every value
    differs between the two."""
    releases = sorted(RELEASES.values(), key=lambda r: r.atonn)
    n = 1 + variant * 4096
    prep = Prepared(CONF_NAME if variant == 0 else f"{CONF_NAME}_other", f"Neutral{variant}",
                    releases[variant % len(releases)], [], acts_sz=n, params_sz=n + 8, ext_ram_sz=n + 16,
                    runtime_desc=f"neutral configuration {variant}")
    return conf_h(prep).replace(f"{prep.name.upper()}_RELOC_CONF_H", f"{CONF_NAME.upper()}_RELOC_CONF_H")


def compile_shared(argv: Sequence[str], source: str, obj: str) -> None:
    """Compile `source` into `obj` with the argument list `argv` ($SOURCES, $TARGET: where they
    go) and a neutral configuration header (found through one more -I); again with the other
    header, and compare."""
    objects = []
    with tempfile.TemporaryDirectory(dir=os.path.dirname(obj) or ".") as tmp:
        for variant in (0, 1):
            folder = os.path.join(tmp, str(variant))
            os.mkdir(folder)
            write_text(os.path.join(folder, f"{CONF_NAME}_reloc_conf.h"), neutral_conf_h(variant))
            out = os.path.join(folder, os.path.basename(obj))
            args = [{"$SOURCES": source, "$TARGET": out}.get(a, a) for a in argv] + [f"-I{folder}"]
            proc = subprocess.run(args, capture_output=True, text=True)
            if proc.returncode:
                raise N6Error(source, f"does not compile: {(proc.stderr.strip().splitlines() or ['?'])[-1]}",
                              "check the ST Edge AI Core install")
            with open(out, "rb") as f:
                objects.append(f.read())
    if objects[0] != objects[1]:
        raise N6Error(source, "compiles differently with each model's configuration header, so its object cannot "
                      "be shared by the models", "report this to n6 with the install's release (ST's 2.2 does not)")
    write_bytes(obj, objects[0])
