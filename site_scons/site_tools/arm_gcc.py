"""GNU Arm Embedded toolchain (arm-none-eabi-*) as an SCons tool."""
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
    env.AddMethod(expanded_flags, "ExpandedFlags")


FLAGS = {"CPPPATH": "_CPPINCFLAGS", "CPPDEFINES": "_CPPDEFFLAGS"}   # a variable → its expanded -I / -D flags
_EXPANDED: dict[tuple[str, object], list[str]] = {}   # (variable, one entry) → its flags


def expanded_flags(env, **overrides):
    """`overrides` (CPPPATH, CPPDEFINES, ...) plus their -I/-D flags expanded once, here: SCons
    would expand them again for every object's signature on every run, the largest cost of a
    no-op build. Each entry's flags are expanded once per build (models share all but their own
    folder). CPPPATH stays for the header scanner."""
    out = dict(overrides)
    for var, flags in FLAGS.items():
        out[flags] = [f for item in overrides.get(var, env.get(var, [])) for f in _entry_flags(env, var, item)]
    return out


def _entry_flags(env, var, item):
    key = (var, item)
    if key not in _EXPANDED:
        _EXPANDED[key] = [str(arg) for arg in env.Override({var: [item]}).subst_list(f"${FLAGS[var]}")[0]]
    return _EXPANDED[key]


def exists(env):
    return shutil.which(env.get("CROSS_COMPILE", "arm-none-eabi-") + "gcc")
