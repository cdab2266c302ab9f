"""The checker's layout rules (n6.reloc.layout) on built images: a REL table whose end is off a
word boundary while its start is on one (the rule tests both bounds). Written against the
survivors of tools/mutate.py (target `reloc-check`)."""
from test_loader_model import _header, _refusal, images  # noqa: F401 (images: the fixture)


def test_rel_table_end_off_a_word(images):  # noqa: F811 (the fixture imported above)
    data, _ = images("kws_mlp")
    assert _refusal(_header(data, "rel_end", lambda w: w - 2)).rule == "rel_table"

