"""GNU Arm Embedded toolchain (arm-none-eabi-*) as an SCons tool.

Compiles and links run as n6_scons.ArgvAction: their argument lists are made once, when the
build is declared."""
import shutil

import SCons.Errors


def generate(env):
    prefix = env.get("CROSS_COMPILE", "arm-none-eabi-")
    if not exists(env):
        raise SCons.Errors.StopError(f"{prefix}gcc not found on PATH (fix: run ./n6 setup, which installs the "
                                     "Debian packages gcc-arm-none-eabi and libnewlib-arm-none-eabi)")
    for tool in ("cc", "ar", "link", "as"):   # generic tools: no host-compiler probing at read time
        env.Tool(tool)
    env.Replace(CC=prefix + "gcc", AS=prefix + "gcc", LINK=prefix + "gcc", AR=prefix + "ar",
                RANLIB=prefix + "ranlib", OBJCOPY=prefix + "objcopy", OBJDUMP=prefix + "objdump",
                SIZE=prefix + "size", LIBPREFIX="", PROGSUFFIX=".elf", ARFLAGS="rcs", RANLIBCOM="")
    env.AddMethod(compile_argv, "CompileArgv")


FLAGS = {"CPPPATH": "_CPPINCFLAGS", "CPPDEFINES": "_CPPDEFFLAGS"}   # a variable → its expanded -I / -D flags
_EXPANDED: dict[tuple[str, object], list[str]] = {}   # (variable, one entry) → its flags


def compile_argv(env, ccflags, cppdefines, cpppath):
    """The argument list of the cc tool's command line ($CCCOM) that compiles $SOURCES into $TARGET
    with these flags, defines and include folders. Each define's and folder's flag is expanded
    once per build (models share all but their own folder and configuration header)."""
    return [env["CC"], "-o", "$TARGET", "-c", *ccflags] + \
        [f for var, items in (("CPPDEFINES", cppdefines), ("CPPPATH", cpppath))
         for item in items for f in _entry_flags(env, var, item)] + ["$SOURCES"]


def _entry_flags(env, var, item):
    key = (var, item)
    if key not in _EXPANDED:
        _EXPANDED[key] = [str(arg) for arg in env.Override({var: [item]}).subst_list(f"${FLAGS[var]}")[0]]
    return _EXPANDED[key]


def exists(env):
    return shutil.which(env.get("CROSS_COMPILE", "arm-none-eabi-") + "gcc")
