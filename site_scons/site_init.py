"""Loaded by SCons before the SConstruct: an N6Error raised while reading the build description
becomes one line and exit code 2, not a traceback."""
import sys

import SCons.Script



def n6_fail(error):
    sys.stderr.write(f"scons: *** {error}\n")
    SCons.Script.Exit(2)


SCons.Script.n6_fail = n6_fail
