"""Every path under the build folder, named once: the build's own folders (the simulated install,
the simulated board, the deploy records) and each model's folder `<build>/<model>/` with what
its steps write there. Tools and steps ask here instead of spelling a path."""
import os
from collections.abc import Mapping
from dataclasses import dataclass

DEFAULT_BUILD_DIR = "build"        # BUILD_DIR='s default
SIM_INSTALL = "stedgeai-sim"        # the simulated ST Edge AI Core: one tree per release
SIM_BOARD = "sim-board"             # the simulated board's flash and state
DEPLOY_RECORDS = "deploy-records"   # what each probe's board holds (n6.flash.records)
RUNTIME = "runtime"                 # LL_ATON objects shared by the models compiled with the same flags
SCONSIGN = ".sconsign"              # SCons's signatures of this build folder
FOLDERS = (SIM_INSTALL, SIM_BOARD, DEPLOY_RECORDS, RUNTIME)   # the build's own folders: no model may take their names

ON_BOARD = "on_board.json"          # per model, in its flash folder: what the flash step put on the board
FLASH_REPORT = "flash.json"         # per model, in its flash folder: the last flash's report
RUN_REPORT = "run.json"
VALIDATE_REPORT = "validate.json"
VALIDATE_FAILED = "validate-failed.json"   # beside it, instead of it, when the outputs differ


def sim_install(build_dir: str, core: str) -> str:
    """The simulated install of release `core` ("2.2")."""
    return os.path.join(build_dir, SIM_INSTALL, core)


def sim_install_objects(build_dir: str, core: str) -> str:
    """Where the simulated install's runtime archive is compiled (outside the install tree)."""
    return os.path.join(build_dir, SIM_INSTALL, "obj", core)


def runtime_objects(build_dir: str, flags: str) -> str:
    """The LL_ATON objects of every model compiled with the flag set named `flags`
    (gcc_flags.flag_set_name)."""
    return os.path.join(build_dir, RUNTIME, flags)


def sim_board(build_dir: str) -> str:
    return os.path.join(build_dir, SIM_BOARD)


def sim_board_state(build_dir: str, environ: Mapping[str, str] = os.environ) -> str:
    """The simulated board's state folder: N6_SIM_BOARD when set (the variable the simulated
    programmer and board read), else <build dir>/sim-board."""
    return environ.get("N6_SIM_BOARD") or sim_board(build_dir)


def deploy_records(build_dir: str) -> str:
    return os.path.join(build_dir, DEPLOY_RECORDS)


def sconsign(build_dir: str) -> str:
    return os.path.join(build_dir, SCONSIGN)


@dataclass(frozen=True)
class ModelLayout:
    """The folder of one model and every file its steps write; `image` is the image's base name
    (RELOC_NAME, else the network file's stem)."""
    build_dir: str
    model: str

    @property
    def folder(self) -> str:
        return os.path.join(self.build_dir, self.model)

    @property
    def st_ai_output(self) -> str:
        """What `stedgeai generate` writes (source models)."""
        return os.path.join(self.folder, "st_ai_output")

    @property
    def reloc(self) -> str:
        """The prepared sources, objects, ELF and code image."""
        return os.path.join(self.folder, "reloc")

    def obj(self, source: str) -> str:
        """The object of the C file named `source`."""
        return os.path.join(self.reloc, "obj", os.path.splitext(source)[0] + ".o")

    def elf(self, image: str) -> str:
        return os.path.join(self.reloc, f"{image}.elf")

    def code(self, image: str) -> str:
        return os.path.join(self.reloc, f"{image}_rel_code.bin")

    def image(self, image: str) -> str:
        """The relocatable image `<image>_rel.bin` (its params file and report beside it)."""
        return os.path.join(self.folder, f"{image}_rel.bin")

    @property
    def flash(self) -> str:
        return os.path.join(self.folder, "flash")

    @property
    def on_board(self) -> str:
        return os.path.join(self.flash, ON_BOARD)

    @property
    def flash_report(self) -> str:
        return os.path.join(self.flash, FLASH_REPORT)

    @property
    def run(self) -> str:
        return os.path.join(self.folder, "run")

    @property
    def run_report(self) -> str:
        return os.path.join(self.run, RUN_REPORT)

    @property
    def validate_report(self) -> str:
        return os.path.join(self.run, VALIDATE_REPORT)

    @property
    def profile(self) -> str:
        return os.path.join(self.folder, "profile")


def model_step(build_dir: str, path: str) -> tuple:
    """(model, step) of a file under `build_dir`: the step of build, flash, run, validate or
    profile that writes it (a failure's row in the project summary)."""
    model = os.path.relpath(path, build_dir).split(os.sep)[0]
    layout = ModelLayout(build_dir, model)
    if path == layout.validate_report:
        return model, "validate"
    return model, next((step for step, folder in (("flash", layout.flash), ("run", layout.run),
                                                  ("profile", layout.profile))
                        if path.startswith(folder + os.sep)), "build")
