"""Command line of the simulated `stedgeai` (the subset this project uses)."""
import argparse
import json
import os
import shlex
import sys

from n6.errors import N6Error, machine_error
from n6.neural_art_profile import split_profile_arg
from n6.releases import DEFAULT_RELEASE, release
from n6.stedgeai_install import SIMULATED_INSTALL_MARK

PROG = "stedgeai"


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise N6Error(None, f"{message}", f"see '{PROG} {self.prog.split()[-1]} --help'"
                      if " " in self.prog else f"see '{PROG} --help'")


def install_root():
    """The simulated install tree this CLI belongs to (set by its launcher script)."""
    return os.environ.get("STEDGEAI_SIM_ROOT", "")


def install_dir_for_report(rel):
    """Install path written into generated files; a neutral default when run outside an install."""
    return install_root() or f"/opt/ST/STEdgeAI/{rel.core}"


def installed_release():
    cfg = os.path.join(install_root(), SIMULATED_INSTALL_MARK)
    if os.path.exists(cfg):
        with open(cfg) as f:
            return release(json.load(f)["release"])
    return release(DEFAULT_RELEASE)


def builtin_profile_file(rel):
    sub = ("targets/stm32/resources/NPU/STM32N6xx" if rel.core >= "3" else "targets/stm32/resources")
    return os.path.join(install_root(), "Utilities", "linux", sub, "neural_art.json")


def _parser():
    p = _Parser(prog=PROG, description="ST Edge AI Core (simulated)")
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)
    g = sub.add_parser("generate", help="generate the C code of a model")
    g.add_argument("-m", "--model", required=True)
    g.add_argument("--target", required=True, choices=["stm32n6"])
    g.add_argument("--st-neural-art", dest="st_neural_art", nargs="?", const="")
    g.add_argument("-n", "--name")
    g.add_argument("-o", "--output", default="st_ai_output")
    g.add_argument("-w", "--workspace", default="st_ai_ws")
    g.add_argument("--input-data-type", choices=["int8", "uint8", "float32"])
    g.add_argument("--output-data-type", choices=["int8", "uint8", "float32"])
    # accepted as the real tool accepts them; what they change is not simulated (the generated
    # report's command line shows them)
    g.add_argument("-t", "--type", choices=["keras", "tflite", "onnx"])
    g.add_argument("--inputs-ch-position", choices=["chfirst", "chlast"])
    g.add_argument("--outputs-ch-position", choices=["chfirst", "chlast"])
    g.add_argument("--no-inputs-allocation", action="store_true")
    g.add_argument("--no-outputs-allocation", action="store_true")
    g.add_argument("--c-api", choices=["legacy", "st-ai"])
    g.add_argument("-c", "--compression", choices=["none", "lossless", "low", "medium", "high"])
    g.add_argument("--memory-pool")
    g.add_argument("-v", "--verbosity", type=int, choices=[0, 1, 2, 3])
    return p


def run(argv):
    args, extra = _parser().parse_known_args(argv)
    if extra:
        where = f"{PROG} {args.command}" if args.command else PROG
        raise N6Error(None, f"unrecognized arguments: {' '.join(extra)}", f"see '{where} --help'")
    rel = installed_release()
    if args.version:
        print(f"ST Edge AI Core v{rel.core_full} (simulated)")
        return 0
    if args.command != "generate":
        raise N6Error(None, "no command given", f"run '{PROG} generate -m <model> --target stm32n6 ...'")
    if args.st_neural_art is None:
        raise N6Error(None, "--target stm32n6 needs --st-neural-art", "pass --st-neural-art <profile>@<file.json>")
    arg = args.st_neural_art
    if arg == "" or arg.startswith("profile-"):
        args.profile = (arg[len("profile-"):] or "default", builtin_profile_file(rel))
    else:
        args.profile = split_profile_arg(arg)
    from .generate import generate   # heavy imports (onnx) only when generating
    try:
        generate(args, rel, install_dir_for_report(rel), " ".join([PROG] + [shlex.quote(a) for a in argv]))
    except OSError as e:              # what the machine refuses (a full disk): one line, its fix
        refused = machine_error(e, args.output)
        if refused is None:
            raise
        raise refused from None
    return 0


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except N6Error as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
