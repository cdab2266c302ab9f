"""The placement rules of firmware/reloc_network_gcc.ld on two tiny objects, linked by the real
arm-none-eabi-gcc: where each input section lands decides every address of an image, and the rules
are ST's, so an image equals ST's only if its objects' sections land where ST's script puts them."""
import os
import subprocess

from n6 import gcc_flags

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "firmware", "reloc_network_gcc.ld")

FAMILIES = {"text": '"ax", %progbits', "rodata": '"a", %progbits', "data": '"aw", %progbits', "bss": '"aw", %nobits'}


def _object(p, prio, dotted_first=False):
    """Assembly of one object: a plain and a dotted section of every family, each holding one symbol
    (`<p>_<family>`, `<p>_<family>_x`), listed plain first or dotted first; a plain and a numbered
    constructor-table entry (`<p>_init`, `<p>_init_prio`)."""
    out = []
    for family, flags in FAMILIES.items():
        pair = [f"  .section .{family}, {flags}\n{p}_{family}: .space 4\n",
                f"  .section .{family}.{p}, {flags}\n{p}_{family}_x: .space 4\n"]
        out += pair[::-1] if dotted_first else pair
    out.append(f"  .section .init_array, \"aw\", %init_array\n{p}_init: .word 0\n")
    out.append(f"  .section .init_array.{prio}, \"aw\", %init_array\n{p}_init_prio: .word 0\n")
    return "".join(out)


def _link(tmp_path, sources):
    objects = []
    for name, text in sources.items():
        src = tmp_path / f"{name}.s"
        src.write_text(text)
        objects.append(str(tmp_path / f"{name}.o"))
        subprocess.run(["arm-none-eabi-gcc", *gcc_flags.CORE, "-c", str(src), "-o", objects[-1]], check=True)
    elf = tmp_path / "rules.elf"
    proc = subprocess.run(["arm-none-eabi-gcc", *gcc_flags.CORE, *objects, "-T", SCRIPT, "-nostartfiles", "-nostdlib",
                           "-Wl,-Map," + str(tmp_path / "rules.map"), "-o", str(elf)], capture_output=True, text=True)
    return proc, elf


def _symbols(elf):
    out = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {parts[2]: int(parts[0], 16) for parts in (line.split() for line in out.splitlines()) if len(parts) == 3}


def _in_address_order(sym, names):
    return sorted(names, key=sym.__getitem__)


def test_every_plain_section_before_any_dotted_one(tmp_path):
    # a lists its plain sections first, b its dotted ones; the constructor entries' names sort
    # the other way round from the link order
    proc, elf = _link(tmp_path, {"a": _object("a", "00200"), "b": _object("b", "00100", dotted_first=True)})
    assert proc.returncode == 0, proc.stderr
    sym = _symbols(elf)
    for family in ("text", "rodata", "data", "bss"):
        order = [f"a_{family}", f"b_{family}", f"a_{family}_x", f"b_{family}_x"]
        assert _in_address_order(sym, order) == order, family   # not object by object
    # numbered entries sorted by name (b's 00100 before a's 00200), then the plain ones in link order
    order = ["b_init_prio", "a_init_prio", "a_init", "b_init"]
    assert _in_address_order(sym, order) == order
    assert sym["__data_start"] <= sym["a_data"] and sym["b_data_x"] < sym["__data_end"] <= sym["b_init_prio"]
    assert sym["__bss_start"] <= sym["a_bss"] and sym["b_bss_x"] < sym["__bss_end"]


def test_what_the_objects_leave_undefined_comes_from_the_toolchain_libraries(tmp_path):
    """The script names libc, libm and libgcc: a link with -nostdlib still resolves from them."""
    proc, elf = _link(tmp_path, {"a": """
  .section .network_entries, "a", %progbits
  .word a_entry
  .section .text.a_entry, "ax", %progbits
  .thumb_func
a_entry: b abs
"""})
    assert proc.returncode == 0, proc.stderr
    sym = _symbols(elf)
    assert 0x20000000 < sym["abs"] < sym["__data_data"]   # in the read-only image
    loads = [line.split()[1] for line in (tmp_path / "rules.map").read_text().splitlines() if line.startswith("LOAD ")]
    assert [os.path.basename(p) for p in loads[-3:]] == ["libc.a", "libm.a", "libgcc.a"]   # after every input
