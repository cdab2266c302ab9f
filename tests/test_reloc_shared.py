"""The shared runtime objects compiled with a neutral configuration header (n6.reloc.shared):
the compile stops unless the source ignores every value of the header."""
import pytest

from n6.errors import N6Error
from n6.reloc.shared import compile_shared, neutral_conf_h

ARGV = ["arm-none-eabi-gcc", "-mthumb", "-mcpu=cortex-m55", "-Os", "-DBUILD_AI_NETWORK_RELOC",
        '-DMODEL_CONF="runtime_reloc_conf.h"', "-o", "$TARGET", "-c", "$SOURCES"]


def _compile(tmp_path, body):
    src = tmp_path / "callbacks.c"
    src.write_text("#include MODEL_CONF\n" + body + "\n")
    obj = tmp_path / "out" / "callbacks.o"
    obj.parent.mkdir()
    compile_shared(ARGV, str(src), str(obj))
    return obj


def test_a_source_that_ignores_the_header_compiles_once_for_every_model(tmp_path):
    obj = _compile(tmp_path, "int ll_aton_reloc_answer(void) { return 42; }")
    assert obj.read_bytes()[:4] == b"\x7fELF"
    assert sorted(p.name for p in obj.parent.iterdir()) == ["callbacks.o"]   # the headers were temporary


@pytest.mark.parametrize("use", ["int acts = ACTS_SZ;", 'const char *name = C_NAME;', "int ram = EXT_RAM_SZ;",
                                 "int version = RUNTIME_VERSION;",
                                 "#define F(s) f_##s\n#define G(s) F(s)\nint G(C_FCT_SUFFIX)(void) { return 0; }"])
def test_a_source_that_reads_a_value_of_the_header_is_refused(tmp_path, use):
    with pytest.raises(N6Error) as e:
        _compile(tmp_path, use)
    assert "compiles differently with each model's configuration header" in str(e.value)
    assert not (tmp_path / "out" / "callbacks.o").exists()
    assert list((tmp_path / "out").iterdir()) == []


def test_the_two_neutral_headers_differ_in_every_value():
    lines = [dict((line.split(" ", 2)[1:] + [""])[:2] for line in neutral_conf_h(v).splitlines()
                  if line.startswith("#define ")) for v in (0, 1)]
    assert lines[0].keys() == lines[1].keys()
    guard = "RUNTIME_RELOC_CONF_H"
    assert lines[0][guard] == lines[1][guard] == ""   # both are runtime_reloc_conf.h
    # PARAMS_BIN_* are 0 in every model's header too (pack writes the real values into the image)
    assert [k for k in lines[0] if lines[0][k] == lines[1][k]] == [guard, "PARAMS_BIN_SZ", "PARAMS_BIN_CRC32"]


def test_a_source_that_does_not_compile_is_one_line(tmp_path):
    with pytest.raises(N6Error) as e:
        _compile(tmp_path, "int broken(")
    assert "does not compile" in str(e.value) and "\n" not in str(e.value)
