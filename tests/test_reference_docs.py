"""The reference under docs/ says what the code does: the variables are declared once
(n6.variables) and `scons -h`, the declaration and docs/variables.md say the same; a value the
library's tables gain is one the command line takes; every key of a bundled board file is in
docs/boards.md."""
import os
import re

from conftest import ROOT, copy_repo, scons
from n6.variables import VARIABLES, markdown_table

HELP_LINE = re.compile(r"^  (\w+)=(\S*)\s+(.*?)(?: \(([^()|]*\|[^()]*)\))? \[default: (.*)\]$")


def _helped(repo, *args):
    """{name: (value, help, allowed values, default)} of the Variables part of `scons -h`."""
    text = scons(repo, "-h", *args).stdout.split("Variables (scons NAME=value ...):\n")[1]
    return {m[1]: m.groups()[1:] for m in map(HELP_LINE.match, text.splitlines()) if m}


def test_help_docs_and_declaration_agree(tmp_path):
    helped = _helped(copy_repo(tmp_path / "repo"))
    assert list(helped) == [v.name for v in VARIABLES]
    for v in VARIABLES:
        value, text, values, default = helped[v.name]
        assert (text, values or "", default) == (v.help, v.shown_values(), v.shown_default()), v.name
    with open(os.path.join(ROOT, "docs", "variables.md"), encoding="utf-8") as f:
        doc = f.read()
    table = doc.split("-->\n", 1)[1].split("<!--", 1)[0]
    assert table == markdown_table(), "docs/variables.md: paste `python -m n6.variables` (site_scons) over its table"


def test_a_release_added_to_the_table_is_accepted(tmp_path):
    """STEDGEAI_SIM_RELEASE's values are releases.RELEASES: one more entry there, nothing else."""
    repo = copy_repo(tmp_path / "repo")
    releases = os.path.join(repo, "site_scons", "n6", "releases.py")
    with open(releases, "a", encoding="utf-8") as f:
        f.write('\nRELEASES["3.1"] = Release("3.1", "3.1.0-1 0", (1, 1, 4, 0), "0" * 40, "_OE_3_3_2", '
                '"NetworkRuntime1110_CM55_GCC", 26, "network", "error", True, True)\n')
    helped = _helped(repo, "STEDGEAI_SIM_RELEASE=3.1")
    assert helped["STEDGEAI_SIM_RELEASE"][0] == "3.1" and helped["STEDGEAI_SIM_RELEASE"][2] == "2.2|3.0|3.1"
    refused = scons(repo, "-h", "STEDGEAI_SIM_RELEASE=3.2", check=False)
    assert refused.returncode == 2 and "Invalid value for enum variable 'STEDGEAI_SIM_RELEASE': '3.2'" in \
        refused.stderr, refused.stderr


def test_every_bundled_board_key_is_documented():
    """docs/boards.md names every key the bundled board files use (as `table.key`)."""
    import glob
    import tomllib
    with open(os.path.join(ROOT, "docs", "boards.md"), encoding="utf-8") as f:
        documented = set(re.findall(r"^\| `([\w.]+)` \|", f.read(), re.M))

    def keys(table, prefix=""):
        for k, v in table.items():
            yield prefix + k
            if isinstance(v, dict) and not prefix:
                yield from keys(v, k + ".")
    for path in glob.glob(os.path.join(ROOT, "firmware", "boards", "*.toml")):
        with open(path, "rb") as f:
            used = {k for k in keys(tomllib.load(f)) if "." in k or k == "name"}
        assert used <= documented, (path, sorted(used - documented))
