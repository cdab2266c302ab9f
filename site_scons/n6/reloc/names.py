"""File names of the relocatable build, in one light module: the build's emitters read them at
SConscript time without importing the steps themselves."""
import os


IMAGE_SUFFIX = "_rel.bin"      # <name>_rel.bin: the relocatable image the board loads
CONF_NAME = "runtime"          # runtime_reloc_conf.h: the neutral header of the shared objects (n6.reloc.shared)


def prepare_outputs(name: str, epoch_controller: bool) -> list[str]:
    """What the prepare step writes into the model's reloc folder."""
    files = [f"{name}_reloc.c", f"{name}_reloc_mempools.c", f"{name}_reloc_conf.h", f"{name}_reloc_params.json"]
    return files + ([f"{name}_reloc_ecblobs.h"] if epoch_controller else [])


def params_path(bin_path: str) -> str:
    """`network_rel.bin` → `network_rel_params.bin`: where a split image's params go."""
    stem, ext = os.path.splitext(bin_path)
    return f"{stem}_params{ext}"
