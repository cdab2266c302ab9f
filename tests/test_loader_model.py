"""Damaged images that ST's loader refuses or faults on (each found by the differential test against
it, tests/test_st_loader_judge.py), and the ones our checker refuses on purpose where ST's lets them
through: the checker refuses each, in XIP and COPY, with ST's error name; the simulated board,
which installs with the same model, refuses them too. Default suite: no test bed needed."""
import os

import pytest

from n6.reloc import check
from n6.reloc.image import LAYOUTS, Image, align8, off

from conftest import copy_repo, scons
from reloc_mutations import with_word, word_at


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    repo = copy_repo(tmp_path_factory.mktemp("loader-model") / "repo")
    scons(repo, "kws_mlp", "tiny_prebuilt")

    def get(model):
        with open(os.path.join(repo, "build", model, "network_rel.bin"), "rb") as f:
            data = f.read()
        return data, Image.parse(data)
    return get


def _header(data, name, change):
    at = 4 * LAYOUTS[24].index(name)
    return with_word(data, at, change(word_at(data, at)))


def _rel(data, img, i, change):
    at = off(img.header.rel_start) + 4 * i
    return with_word(data, at, change(word_at(data, at)))


def _refusal(data, name="INVALID_BIN"):
    """Both modes refuse, with `name`; returns the XIP refusal."""
    errors = []
    for mode in (check.MODE_XIP, check.MODE_COPY):
        with pytest.raises(check.LoaderError) as e:
            check.install(data, check.FILE_ADDR, check.Config(mode=mode | check.MODE_CLEAR))
        assert e.value.name == name, e.value
        errors.append(e.value)
    return errors[0]


def _refused(data, name="INVALID_BIN"):
    return _refusal(data, name).detail


def test_the_built_images_install(images):
    for model in ("kws_mlp", "tiny_prebuilt"):
        data, _ = images(model)
        xip, copy = check.check_image(data)
        assert (xip.mode, copy.mode) == ("XIP", "COPY")


# -- ST's loader refuses these (INVALID_BIN) -------------------------------------------------------

def test_a_got_word_in_the_null_segment_other_than_zero(images):
    data, img = images("kws_mlp")
    bad = with_word(data, img.ro_size + off(img.header.got_start), 4)
    assert "GOT at" in _refused(bad)


def test_a_relocated_word_in_the_null_segment_other_than_zero(images):
    data, img = images("kws_mlp")
    site = img.rel_sites[0]
    assert f"REL site 0x{site:08X}: word 0x00000004" in _refused(with_word(data, img.ro_size + off(site), 4))


def test_a_got_not_word_aligned(images):
    data, _ = images("kws_mlp")
    _refused(_header(data, "got_start", lambda w: w - 1))


@pytest.mark.parametrize("delta", [1, 2, 3])
def test_a_rel_site_not_word_aligned(images, delta):
    data, img = images("kws_mlp")
    assert f"REL site 0x{img.rel_sites[0] + delta:08X}" in _refused(_rel(data, img, 0, lambda w: w + delta))


@pytest.mark.parametrize("delta", [1, 2])
def test_a_rel_table_ending_inside_an_entry(images, delta):
    data, _ = images("kws_mlp")
    _refused(_header(data, "rel_end", lambda w: w + delta))


# -- ST's loader faults on these: an access outside the image and the RAM it asked for --------------

@pytest.mark.parametrize("word,change", [("bss_start", lambda w: w + 4), ("bss_end", lambda w: w - 4),
                                         ("bss_start", lambda w: w ^ 1 << 28), ("bss_end", lambda w: w ^ 1 << 28)])
def test_a_bss_that_ends_before_it_starts(images, word, change):
    data, _ = images("kws_mlp")
    _refused(_header(data, word, change))


@pytest.mark.parametrize("delta", [1, 4])
def test_a_got_running_past_the_ram_segment(images, delta):
    data, _ = images("kws_mlp")   # no .bss: the RAM segment ends with the GOT
    _refused(_header(data, "got_end", lambda w: w + delta))


@pytest.mark.parametrize("past", [0, 4, 8])
def test_a_rel_site_past_the_ram_segment(images, past):
    for model in ("kws_mlp", "tiny_prebuilt"):
        data, img = images(model)
        _refused(_rel(data, img, 0, lambda w, img=img: 0x4000_0000 | off(img.header.bss_end) + past))


def test_a_rel_site_past_the_ram_the_loader_asked_for(images):
    data, img = images("tiny_prebuilt")
    _refused(_rel(data, img, 0, lambda w: 0x4000_0000 | align8(off(img.header.bss_end)) + 4))


# -- our own rules: ST's loader lets these through, the image is damaged all the same ---------------

def _pool_word(img, i, field):
    return (img.ro_size + off(img.header.params_start) + 20 * i
            + 4 * ("name", "flags", "foff", "dst", "size").index(field))


RULES = {   # rule: (model, damage)
    "data_start": ("kws_mlp", lambda d, img: _header(d, "data_start", lambda w: w + 4)),
    "segments": ("kws_mlp", lambda d, img: _header(d, "rt_ctx", lambda w: w ^ 1 << 28)),
    "sections": ("kws_mlp", lambda d, img: _header(d, "got_start", lambda w: w + 0x4000)),
    "got": ("kws_mlp", lambda d, img: _header(d, "got_end", lambda w: w - 1)),
    "rel_table": ("kws_mlp", lambda d, img: _header(d, "rel_start", lambda w: w + 0x4000)),
    "rel_aligned": ("kws_mlp", lambda d, img: _rel(d, img, 0, lambda w: w + 3)),
    "rel_segment": ("kws_mlp", lambda d, img: _rel(d, img, 0, lambda w: w ^ 1 << 28)),
    "rel_range": ("tiny_prebuilt", lambda d, img: _rel(d, img, 0, lambda w: 0x4000_0000 | off(img.header.bss_end))),
    "tables": ("kws_mlp", lambda d, img: with_word(with_word(d, _pool_word(img, 2, "name"), 0x2000_0000),
                                              _pool_word(img, 2, "flags"), 0x0302_0200)),
    "entries": ("kws_mlp", lambda d, img: _header(d, "ec_network_init", lambda w: w + 1)),
    "pools": ("tiny_prebuilt", lambda d, img: with_word(d, _pool_word(img, 0, "foff"), -8)),
    "past_file": ("kws_mlp", lambda d, img: d[:-4]),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_each_of_our_rules(images, rule):
    model, damage = RULES[rule]
    data, img = images(model)
    assert _refusal(damage(data, img)).rule == rule


def test_the_simulated_board_refuses_what_the_loader_would(images):
    from n6board.firmware import InstalledModel
    data, img = images("kws_mlp")
    with pytest.raises(check.LoaderError) as e:
        InstalledModel(_rel(data, img, 0, lambda w: w + 2))
    assert e.value.name == "INVALID_BIN"
