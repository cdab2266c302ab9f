"""Thumb-2 snippets for the emulator tests: assembled and linked with the GNU Arm toolchain at a
given address, as raw bytes."""
import subprocess

ARCH = "armv8.1-m.main+mve.fp+fp.dp"       # the Cortex-M55's instruction set


def assemble(tmp_path, source, address, name="snippet", arch=ARCH):
    """The bytes of `source` linked at `address`."""
    src, obj, elf, binary = (tmp_path / f"{name}{ext}" for ext in (".s", ".o", ".elf", ".bin"))
    src.write_text(".syntax unified\n.thumb\n" + source)
    for argv in (["arm-none-eabi-as", f"-march={arch}", "-mthumb", str(src), "-o", str(obj)],
                 ["arm-none-eabi-ld", f"-Ttext=0x{address:X}", "-o", str(elf), str(obj)],
                 ["arm-none-eabi-objcopy", "-O", "binary", str(elf), str(binary)]):
        subprocess.run(argv, check=True, capture_output=True)
    return binary.read_bytes()
