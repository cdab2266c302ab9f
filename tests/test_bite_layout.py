"""The checker's layout rules (n6.reloc.layout) on built images: a REL table whose end is off a
word boundary while its start is on one (the rule tests both bounds). Written against the
survivors of tools/mutate.py (target `reloc-check`)."""
import pytest

from test_loader_model import _header, _refusal, images  # noqa: F401 (images: the fixture)


def test_rel_table_end_off_a_word(images):  # noqa: F811 (the fixture imported above)
    data, _ = images("kws_mlp")
    assert _refusal(_header(data, "rel_end", lambda w: w - 2)).rule == "rel_table"



def test_install_writes_rt_ctx_words_as_st_loader(images):  # noqa: F811
    """After relocation the loader stores in rt_ctx's first words its state (1 | XIP 2), the file's
    address, the RAM base and the RO base, in this order (words 0..3; test_st_loader_judge compares
    the whole installed RAM with ST's)."""
    import struct

    from n6.reloc import check
    from n6.reloc.image import off
    data, img = images("kws_mlp")
    for mode, state in ((check.MODE_XIP, 3), (check.MODE_COPY, 1)):
        done = check.install(data, check.FILE_ADDR, check.Config(mode=mode | check.MODE_CLEAR))
        rt = done.ram_base + off(img.header.rt_ctx)
        assert struct.unpack("<4I", done.memory.read(rt, 16)) == (state, check.FILE_ADDR, done.ram_base,
                                                                  done.ro_base)
        exec_ram = check.Config().exec_ram_addr                             # COPY: the RO part first
        assert (done.ro_base, done.ram_base) == ((check.FILE_ADDR, exec_ram) if mode == check.MODE_XIP else
                                                 (exec_ram, exec_ram + off(img.header.data_data)))
        assert struct.unpack("<I", done.memory.read(rt + 16, 4))[0] == struct.unpack_from(
            "<I", data, img.ro_size + off(img.header.rt_ctx) + 16)[0]        # word 4 (cbs) as the file holds it


def test_rt_ctx_must_end_inside_the_data_image(images):  # noqa: F811
    from n6.reloc.image import RtCtx, off
    from n6.reloc.layout import Damaged, check_layout
    data, img = images("kws_mlp")
    last = 0x4000_0000 | off(img.header.bss_start) - RtCtx.SIZE       # rt_ctx's last word is the data's last
    check_layout(_header(data, "rt_ctx", lambda w: last))
    with pytest.raises(Damaged) as e:
        check_layout(_header(data, "rt_ctx", lambda w: last + 4))
    assert e.value.rule == "tables" and e.value.detail.startswith(f"rt_ctx at 0x{off(last) + 4:X} is not inside")
