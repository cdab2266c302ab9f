"""Short aligned progress lines (`  CC       build/kws/reloc/obj/network_reloc.o`) for SCons's own
builders; full command lines with VERBOSE=1. The n6 builders use n6_scons.progress()."""


def generate(env):
    if not env.get("VERBOSE"):
        env.SetDefault(CCCOMSTR="  CC       $TARGET", ARCOMSTR="  AR       $TARGET", LINKCOMSTR="  LINK     $TARGET")


def exists(env):
    return True
