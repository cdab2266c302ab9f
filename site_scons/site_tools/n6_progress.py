"""Short aligned progress lines (`  GEN      build/kws/st_ai_output/network.c`); full command
lines with VERBOSE=1. Builders of the other n6 tools take their COMSTR from `n6_comstr()`."""


def comstr(env, verb):
    return None if env.get("VERBOSE") else f"  {verb:<8} $TARGET"


def generate(env):
    env.AddMethod(comstr, "N6ComStr")
    if not env.get("VERBOSE"):
        env.SetDefault(CCCOMSTR="  CC       $TARGET", ASCOMSTR="  AS       $TARGET", ASPPCOMSTR="  AS       $TARGET",
                       ARCOMSTR="  AR       $TARGET", RANLIBCOMSTR="", LINKCOMSTR="  LINK     $TARGET",
                       INSTALLSTR="  INSTALL  $TARGET")


def exists(env):
    return True
