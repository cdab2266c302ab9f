"""n6_decider replaces methods of SCons's File class: it refuses, in one line, an SCons that is
not the pinned one or lacks what it replaces."""
import os
import sys

import pytest
import SCons
import SCons.Node.FS

from conftest import SITE
from n6.errors import N6Error

sys.path.insert(0, os.path.join(SITE, "site_tools"))
from n6_decider import PATCHED, check_scons  # noqa: E402  (a tool module: SCons loads it by path)


def test_the_pinned_scons_passes():
    check_scons(SCons.__version__, SCons.Node.FS.File)


def test_another_version_is_one_line():
    with pytest.raises(N6Error, match=r"SCons 9\.0\.0 is not 4\.11\.1, .*fix: install SCons==4\.11\.1"):
        check_scons("9.0.0", SCons.Node.FS.File)


@pytest.mark.parametrize("method", PATCHED)
def test_a_missing_method_is_named(method):
    lacking = type("File", (), {m: getattr(SCons.Node.FS.File, m) for m in dir(SCons.Node.FS.File)
                                if m != method and m not in ("__slots__", "__dict__", "__weakref__")})
    with pytest.raises(N6Error, match=rf"File\.{method} missing"):
        check_scons(SCons.__version__, lacking)
