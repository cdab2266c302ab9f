"""Finding an ST Edge AI Core install and telling its release, without running anything."""
import os
import re

from .errors import N6Error
from .host_layout import HOST, Host, stedgeai_cli
from .releases import Release, release_for_atonn

# The author line of the simulated tool's C files; a real stedgeai output never has it.
SIMULATED_AUTHOR = "ST Edge AI Core (simulated)"


def by_simulated_tool(c_text: str) -> bool:
    """Whether a generated C file's text was written by the simulated tool (its header's author)."""
    return SIMULATED_AUTHOR in c_text[:4096]

# The paths the build reads from an install (real or simulated: both have this layout; read_paths()
# lists them all). The CLI is the host's: Utilities/<windows|linux|mac|macarm>/stedgeai[.exe], as
# ST's scripts find it.
CLI = stedgeai_cli(HOST)
LL_ATON = os.path.join("Middlewares", "ST", "AI", "Npu", "ll_aton")
LL_ATON_VERSION = os.path.join(LL_ATON, "ll_aton_version.h")
SW_LIB_INC = os.path.join("Middlewares", "ST", "AI", "Inc")
RUNTIME_LIB_DIR = os.path.join("Middlewares", "ST", "AI", "Lib", "GCC", "ARMCortexM55")
RUNTIME_LIB_GLOB = os.path.join(RUNTIME_LIB_DIR, "NetworkRuntime*_PIC.a")
# The platform headers ST's relocatable-model makefile compiles with (-I<this> -I<this>/..).
PLATFORM = os.path.join("scripts", "N6_reloc", "resources", "platform", "stm32n6")
# LL_ATON sources compiled into every relocatable image, in link order: ST's makefile's list in a
# real install; the simulated install has its operator-list runner (ec_ops.c) where ST's has its
# blob loader (ecloader.c). None of them reads the model's configuration header (MODEL_CONF): their
# objects are the same for every model compiled with the same flags.
ST_RUNTIME_SOURCES = ("ll_aton.c", "ll_aton_util.c", "ll_sw_integer.c", "ll_sw_float.c", "ll_aton_lib_sw_operators.c",
                      "ecloader.c")
SIMULATED_RUNTIME_SOURCES = ST_RUNTIME_SOURCES[:-1] + ("ec_ops.c",)
# Linked after the runtime archive. They read MODEL_CONF (through ll_aton_reloc_network.h) but use
# none of its values: also compiled once per flag set, with a neutral header (n6.reloc.shared).
CONF_SHARED_SOURCES = ("ll_aton_reloc_callbacks.c",)
# What ST's makefile adds to some of them: -DNDEBUG, the software library's include folder
# (SW_LIB_INC; ec_ops.c includes the simulated runtime archive's kernels from there).
NDEBUG_SOURCES = ("ll_aton_lib_sw_operators.c", "ecloader.c")
SW_LIB_INC_SOURCES = ("ll_sw_integer.c", "ll_sw_float.c", "ecloader.c", "ec_ops.c")
# Read when present: ST's prebuilt validation firmwares (the flash gate reads what they check). The
# simulated install ships none: the simulated board plays the firmware.
VALIDATION_FIRMWARE_DIR = os.path.join("scripts", "N6_reloc", "test")
NPU_DEVICE_HEADER = os.path.join("Middlewares", "ST", "AI", "Npu", "Devices", "STM32N6XX", "ATON.h")
OPTIONAL_READ_PATHS = (VALIDATION_FIRMWARE_DIR,)


# The file only a simulated install has (its tool reads its release there).
SIMULATED_INSTALL_MARK = os.path.join("Utilities", "linux", "stedgeai_sim.json")


def is_simulated_install(root: str) -> bool:
    """Whether the install at `root` is a simulated one: the build's own, or a copy of it given as
    STEDGEAI_CORE_DIR (its runtime sources are the simulated ones all the same)."""
    return os.path.isfile(os.path.join(root, SIMULATED_INSTALL_MARK))


def runtime_sources(simulated: bool) -> tuple[str, ...]:
    """The LL_ATON sources compiled into every image, for the simulated install or a real one."""
    return SIMULATED_RUNTIME_SOURCES if simulated else ST_RUNTIME_SOURCES


def read_paths(simulated: bool) -> tuple[str, ...]:
    """Every path the build reads from the install (the simulated one, or a real one)."""
    return (CLI, LL_ATON, LL_ATON_VERSION, SW_LIB_INC, PLATFORM, os.path.dirname(PLATFORM), RUNTIME_LIB_GLOB) + \
        tuple(os.path.join(LL_ATON, s) for s in runtime_sources(simulated) + CONF_SHARED_SOURCES)


def check_install(root: str, host: Host = HOST) -> str:
    """A real install given through STEDGEAI_CORE_DIR must have ST's layout (the CLI of `host`)."""
    for rel in (stedgeai_cli(host), LL_ATON, PLATFORM):
        if not os.path.exists(os.path.join(root, rel)):
            raise N6Error(root, f"not an ST Edge AI Core install (no {rel})",
                          "point STEDGEAI_CORE_DIR at the install root, or unset it to use the simulated one")
    return root


def read_ll_aton_version(header: str) -> tuple[int, ...]:
    """(major, minor, micro, dev) from an ll_aton_version.h."""
    try:
        with open(header) as f:
            text = f.read()
    except FileNotFoundError:
        raise N6Error(header, "LL_ATON version header not found", "check the ST Edge AI Core install") from None
    values = []
    for part in ("MAJOR", "MINOR", "MICRO", "DEV"):
        m = re.search(rf"#define\s+LL_ATON_VERSION_{part}\s+\(?(\d+)", text)
        if not m:
            raise N6Error(header, f"no LL_ATON_VERSION_{part} definition", "check the ST Edge AI Core install")
        values.append(int(m.group(1)))
    return tuple(values)


def install_release(root: str) -> Release:
    version = read_ll_aton_version(os.path.join(root, LL_ATON_VERSION))
    rel = release_for_atonn(version)
    if rel is None:
        raise N6Error(root, "LL_ATON {}.{}.{}-{} belongs to an unsupported ST Edge AI Core release".format(*version),
                      "install ST Edge AI Core 2.2 or 3.0")
    return rel
