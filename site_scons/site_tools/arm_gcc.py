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


def expanded_flags(env, **overrides):
    """`overrides` (CPPPATH, CPPDEFINES, ...) plus their -I/-D flags expanded once, here: SCons
    would expand them again for every object's signature on every run, the largest cost of a
    no-op build. CPPPATH stays for the header scanner."""
    e = env.Override(overrides)
    return dict(overrides, **{var: [str(arg) for arg in e.subst_list(f"${var}")[0]]
                              for var in ("_CPPINCFLAGS", "_CPPDEFFLAGS")})


def exists(env):
    return shutil.which(env.get("CROSS_COMPILE", "arm-none-eabi-") + "gcc")
