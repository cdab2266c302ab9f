"""The stat cache and the decider's replacements of SCons's File methods, in-process: the margin
at the nanosecond where a file turns from racy to settled, which stat fields count, when a
remembered signature is reused, what the cache file holds; and each decider rule on stand-in
nodes (an output changed outside the build, an entry written only when it changed). The SCons
runs of test_incremental.py judge the same rules end to end, in minutes."""
import os
import pickle
import sys
from types import SimpleNamespace as NS

import pytest
import SCons.Environment
import SCons.Node
import SCons.Node.FS
import SCons.SConsign
import SCons.Script
import SCons.Util

from conftest import SITE
from n6.errors import N6Error
from n6.statcache import FINE_MARGIN_NS, FORMAT, MARGIN_NS, StatCache, settled, stat_key

sys.path.insert(0, os.path.join(SITE, "site_tools"))
import n6_decider  # noqa: E402  (a tool module: SCons loads it by path)

S = 1_000_000_000


# -- the margin -------------------------------------------------------------------------------------

@pytest.mark.parametrize("changed, margin", [(10 * S, MARGIN_NS), (10 * S + 123, FINE_MARGIN_NS)])
def test_a_file_is_settled_one_nanosecond_after_its_margin(changed, margin):
    key = (changed, 10, 1, changed, 1)
    assert not settled(key, changed + margin)
    assert settled(key, changed + margin + 1)
    assert (MARGIN_NS, FINE_MARGIN_NS) == (2 * S, S // 10)


@pytest.mark.parametrize("mtime, ctime", [(10 * S + 5, 3 * S + 5), (3 * S + 5, 10 * S + 5)])
def test_the_later_of_mtime_and_ctime_counts_not_size_inode_or_device(mtime, ctime):
    key = (mtime, 1, 2, ctime, 3)
    assert not settled(key, 10 * S + 5 + FINE_MARGIN_NS)
    assert settled(key, 10 * S + 6 + FINE_MARGIN_NS)


# -- the cache ------------------------------------------------------------------------------------

class Hasher:
    """A hash_file that counts its calls."""
    def __init__(self):
        self.calls = 0

    def __call__(self, path):
        self.calls += 1
        return open(path, "rb").read().decode()


@pytest.fixture
def f(tmp_path):
    path = tmp_path / "a.raw"
    path.write_bytes(b"x" * 10)
    return str(path)


def _later(f):
    st = os.stat(f)
    return max(st.st_mtime_ns, st.st_ctime_ns) + MARGIN_NS + 1


def test_a_settled_entry_of_the_same_stat_is_reused_and_its_file_not_read(f, tmp_path):
    cache = StatCache(str(tmp_path / "cache"), "sha256")
    cache.moment = _later(f)
    h = Hasher()
    assert cache.signature(f, h) == "x" * 10 and h.calls == 1 and cache.dirty
    assert cache.entries[f][1:] == ("x" * 10, cache.moment)
    cache.save()
    assert not cache.dirty
    fmt, name, entries, facts = pickle.load(open(tmp_path / "cache", "rb"))
    assert (fmt, name, list(entries), facts) == (1, "sha256", [f], {}) and FORMAT == 1
    again = StatCache(str(tmp_path / "cache"), "sha256")
    assert again.signature(f, h) == "x" * 10 and h.calls == 1 and not again.dirty
    assert StatCache(str(tmp_path / "cache"), "md5").signature(f, h) == "x" * 10 and h.calls == 2
    assert StatCache(str(tmp_path / "cache"), "sha256", always_hash=True).signature(f, h) and h.calls == 3


def test_what_this_run_wrote_and_hashed_is_not_read_while_its_stat_stays(f, tmp_path):
    """A step that hashed the bytes it wrote gives their signature for the rest of the run; a
    change of the file's stat after that is hashed; the next run hashes the file (racy)."""
    cache = StatCache(str(tmp_path / "cache"), "sha256")
    cache.moment = _later(f) - MARGIN_NS - 1          # the run started as the file was written
    h = Hasher()
    cache.wrote(f, "as written")
    assert cache.signature(f, h) == "as written" and h.calls == 0 and cache.dirty
    assert cache.entries[f][2] == cache.moment           # taken at the run's start: racy for the next run
    cache.save()
    assert StatCache(str(tmp_path / "cache"), "sha256").signature(f, h) == "x" * 10 and h.calls == 1
    with open(f, "ab") as out:
        out.write(b"y")
    assert cache.signature(f, h) == "x" * 10 + "y" and h.calls == 2
    cache.wrote(str(tmp_path / "gone"), "never written")   # no such file: nothing recorded
    assert str(tmp_path / "gone") not in cache.written


def test_a_cache_file_of_format_1_is_read(f, tmp_path):
    key = stat_key(os.stat(f))
    (tmp_path / "cache").write_bytes(pickle.dumps((1, "sha256", {f: (key, "remembered", _later(f))})))
    assert StatCache(str(tmp_path / "cache"), "sha256").signature(f, Hasher()) == "remembered"
    (tmp_path / "cache").write_bytes(b"not a pickle")
    assert StatCache(str(tmp_path / "cache"), "sha256").entries == {}


@pytest.mark.parametrize("gone", [b"cn6.reloc.options\nNoSuchFacts\n.", b"cn6.no_such_module\nFacts\n."],
                         ids=["a class renamed", "a module removed"])
def test_a_cache_file_naming_code_that_is_gone_is_read_as_no_cache(tmp_path, gone):
    """A fact kept by an earlier version of the project whose class or module is gone: the
    cache is not there (every file hashed once), not a traceback stopping the build."""
    (tmp_path / "cache").write_bytes(gone)
    assert StatCache(str(tmp_path / "cache"), "sha256").entries == {}


def test_a_fact_read_from_a_file_is_kept_while_its_content_is(f, tmp_path):
    """from_content: read once per content and reader, also by the next run; read again after a
    change or by another reader's version, not kept when the file changes while it is read; None
    for a missing file."""
    reads = []

    def first_byte(path):
        reads.append(path)
        return open(path, "rb").read()[:1]
    cache = StatCache(str(tmp_path / "cache"), "sha256")
    cache.moment = _later(f)
    h = Hasher()
    for _ in range(2):
        assert cache.from_content(f, first_byte, "first byte v1", h) == b"x"
    assert len(reads) == 1
    cache.from_content(f, first_byte, "first byte v0", h)    # a reader the next run does not ask
    del reads[1:]
    cache.save()
    again = StatCache(str(tmp_path / "cache"), "sha256")
    again.moment = _later(f)
    assert again.from_content(f, first_byte, "first byte v1", h) == b"x" and len(reads) == 1
    with open(f, "r+b") as out:
        out.write(b"z")                                 # same size, new content
    again.moment = _later(f)
    assert again.from_content(f, first_byte, "first byte v1", h) == b"z" and len(reads) == 2
    assert again.from_content(str(tmp_path / "none"), first_byte, "first byte v1", h) is None and len(reads) == 2

    def rewrites(path):
        with open(path, "r+b") as out:
            out.write(b"w")
        return b"z"
    assert again.from_content(f, first_byte, "first byte v2", h) == b"z" and len(reads) == 3   # other code
    assert again.from_content(f, rewrites, "rewrites", h) == b"z" and (f, "rewrites") not in again.facts
    again.save()      # what this run did not ask for is not kept (an older reader's facts)
    assert set(StatCache(str(tmp_path / "cache"), "sha256").facts) == {(f, "first byte v1"), (f, "first byte v2")}
    assert again.asked == {(f, "first byte v1"), (f, "first byte v2"), (f, "rewrites")}


def test_a_racy_or_changed_entry_is_hashed_again(f, tmp_path):
    cache = StatCache(str(tmp_path / "cache"), "sha256")
    cache.moment = _later(f) - MARGIN_NS - 1 + FINE_MARGIN_NS     # hashed within the margin of its change
    h = Hasher()
    cache.signature(f, h)
    cache.signature(f, h)
    assert h.calls == 2
    cache.moment = _later(f)
    cache.signature(f, h)
    assert cache.signature(f, h) == "x" * 10 and h.calls == 3
    with open(f, "ab") as out:
        out.write(b"y")
    assert cache.signature(f, h) == "x" * 10 + "y" and h.calls == 4
    assert cache.signature(str(tmp_path / "none"), h) is None and h.calls == 4


def test_a_file_changed_while_it_is_hashed_is_not_remembered(f, tmp_path):
    cache = StatCache(str(tmp_path / "cache"), "sha256")
    cache.entries[f] = ("stale",)

    def rewrite(path):
        with open(path, "ab") as out:
            out.write(b"!")
        return "sig"
    assert cache.signature(f, rewrite) == "sig" and f not in cache.entries and cache.dirty


def test_forget_and_save_write_only_what_changed(f, tmp_path, monkeypatch):
    cache = StatCache(str(tmp_path / "cache"), "sha256")
    cache.forget(f)
    cache.save()
    assert not cache.dirty and not (tmp_path / "cache").exists()        # nothing changed: nothing written
    cache.moment = _later(f)
    cache.signature(f, Hasher())
    cache.dirty = False
    cache.forget(f)
    assert cache.dirty and f not in cache.entries
    lost = StatCache(str(tmp_path / "gone" / "cache"), "sha256")
    lost.dirty = True
    lost.save()                                                        # its folder is gone: nothing, no error
    assert not (tmp_path / "gone").exists()
    monkeypatch.chdir(tmp_path)
    here = StatCache("cache", "sha256")
    here.moment = _later(f)
    here.signature(f, Hasher())
    here.save()
    assert f in pickle.load(open(tmp_path / "cache", "rb"))[2]


# -- the decider ----------------------------------------------------------------------------------

def test_the_pin_is_read_from_any_line_of_requirements_whatever_its_case(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text(f"tabulate==0.9\nscons=={SCons.__version__}\n")
    n6_decider.check_scons(SCons.__version__, SCons.Node.FS.File, str(req))
    with pytest.raises(N6Error, match=f"SCons 1.0 is not {SCons.__version__}, the version n6_decider replaces "
                                      r"File methods of \(fix: install"):
        n6_decider.check_scons("1.0", SCons.Node.FS.File, str(req))


def test_requirements_without_the_pin_is_one_line(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("tabulate==0.9\n# SCons pinned elsewhere\n")
    with pytest.raises(N6Error, match=f"^{req}: no SCons==<version> line: .* \\(fix: put back the SCons pin"):
        n6_decider.check_scons(SCons.__version__, SCons.Node.FS.File, str(req))


class Node:
    """A stand-in for SCons's File: what the replaced methods ask of it."""
    def __init__(self, builder=True, state=SCons.Node.no_state, stored_csig="sig", csig="sig", path="/x"):
        self.builder, self.state, self.path = builder, state, path
        self.stored = NS(ninfo=NS(csig=stored_csig, timestamp=1, size=2), binfo=self._binfo())
        self.ninfo = NS(csig=csig, timestamp=1, size=2)
        self.binfo = self._binfo()

    @staticmethod
    def _binfo():
        return NS(bactsig="act", bsourcesigs=[NS(csig="a")], bdependsigs=[], bimplicitsigs=[NS(csig="h")])

    def has_builder(self):
        return self.builder

    def get_state(self):
        return self.state

    def get_stored_info(self):
        return self.stored

    def get_ninfo(self):
        return self.ninfo

    def get_binfo(self):
        return self.binfo

    def get_abspath(self):
        return self.path


class Cache:
    def __init__(self, sigs):
        self.sigs = sigs

    def signature(self, path, hash_file):
        return self.sigs.get(path)


@pytest.fixture
def decider(monkeypatch):
    """n6_decider with SCons's own answers stood in for: up to date, explained, stored, written."""
    calls = []
    monkeypatch.setattr(n6_decider, "_CACHE", [Cache({"/x": "sig"})])
    monkeypatch.setattr(n6_decider, "_CHANGED_OUTSIDE", set())
    monkeypatch.setattr(n6_decider, "_SCONS_IS_UP_TO_DATE", lambda node: node.scons_says)
    monkeypatch.setattr(n6_decider, "_SCONS_EXPLAIN", lambda node: "scons's reason")
    monkeypatch.setattr(n6_decider, "_SCONS_STORE_INFO", lambda sconsign, name, node: calls.append(("store", name)))
    monkeypatch.setattr(n6_decider, "_SCONS_WRITE_SCONSIGN", lambda: calls.append(("write",)))
    return calls


def _up_to_date(node, scons_says=True):
    node.scons_says = scons_says
    return n6_decider._is_up_to_date(node)


def test_an_output_is_up_to_date_only_if_it_still_holds_what_was_built(decider):
    assert _up_to_date(Node())
    assert not _up_to_date(Node(), scons_says=False)
    changed = Node(csig="sig", stored_csig="other")
    assert not _up_to_date(changed) and n6_decider._CHANGED_OUTSIDE == {changed}
    assert n6_decider._explain(changed) == "rebuilding `%s' because it was changed outside the build\n" % changed
    assert n6_decider._explain(Node()) == "scons's reason"
    assert not _up_to_date(Node(stored_csig=None))
    assert _up_to_date(Node(builder=False, stored_csig="other"))             # a source: SCons's answer
    assert _up_to_date(Node(state=SCons.Node.up_to_date, stored_csig="other"))   # verified by this run already
    assert not _up_to_date(Node(state=SCons.Node.executing, stored_csig="other"))


def test_a_signature_is_the_one_this_run_took_else_the_stat_cache_s_and_empty_for_no_file(decider, monkeypatch):
    assert n6_decider._stat_cache_csig(Node(path="/x", csig=None)) == "sig"
    assert n6_decider._stat_cache_csig(Node(path="/none", csig=None)) == ""
    assert n6_decider._stat_cache_csig(Node(path="/none", csig="taken")) == "taken"    # no second read
    assert n6_decider._content_signature(None, "/x") == "sig"
    assert n6_decider._content_signature(None, "/none") == ""
    monkeypatch.setattr(n6_decider, "_CACHE", [None])
    assert n6_decider._stat_cache_csig(Node(csig=None)) == "" and n6_decider._content_signature(None, "/x") == ""


def _store(calls, node):
    """Whether SCons's store_info is called for the node's entry."""
    before = len(calls)
    n6_decider._store_info(None, "entry", node)
    return calls[before:] == [("store", "entry")]


def _differ(**changes):
    """A node whose build info differs from the stored one in one field."""
    node = Node()
    for k, v in changes.items():
        setattr(node.binfo, k, v)
    return node


def test_an_entry_is_stored_only_when_it_changed(decider):
    assert not _store(decider, Node())
    assert _store(decider, Node(csig="new"))
    source = Node(builder=False)
    source.stored.binfo = NS()                   # a source's entry holds no build information
    assert not _store(decider, source)
    node = Node(builder=False)
    node.ninfo.timestamp = 5
    assert _store(decider, node)
    assert _store(decider, Node(state=SCons.Node.executed))
    assert _store(decider, _differ(bactsig="other action"))
    assert _store(decider, _differ(bsourcesigs=[NS(csig="b")]))
    assert _store(decider, _differ(bsourcesigs=[NS(csig="a"), NS(csig="b")]))
    assert _store(decider, _differ(bsourcesigs=[]))
    assert _store(decider, _differ(bdependsigs=[NS(csig="d")]))
    assert _store(decider, _differ(bimplicitsigs=[NS(csig="h", size=3)]))


def test_the_database_is_written_only_when_an_entry_changed(decider, monkeypatch):
    monkeypatch.setattr(SCons.SConsign, "sig_files", [NS(dirty=False), NS(dirty=False)])
    n6_decider._write_sconsign()
    assert decider == []
    SCons.SConsign.sig_files[1].dirty = True
    n6_decider._write_sconsign()
    assert decider == [("write",)]


@pytest.mark.parametrize("decider_option, hash_format, always, name", [
    (None, None, False, "md5"), ("content", "sha256", True, "sha256")])
def test_generate_installs_one_stat_cache_and_the_replacements(tmp_path, monkeypatch, decider_option, hash_format,
                                                              always, name):
    for cls, attr in ((SCons.Node.FS.File, "get_max_drift_csig"), (SCons.Node.FS.File, "is_up_to_date"),
                      (SCons.Node.FS.File, "explain"), (SCons.SConsign.Base, "store_info"), (SCons.SConsign, "write")):
        monkeypatch.setattr(cls, attr, getattr(cls, attr))      # put back after the test
    monkeypatch.setattr(n6_decider, "_CACHE", [None])
    monkeypatch.setattr(n6_decider.atexit, "register", lambda fn: None)
    monkeypatch.setattr(SCons.Script, "GetOption", {"hash_format": hash_format}.get)
    env = SCons.Environment.Environment(tools=[], BUILD_DIR=str(tmp_path / "build"),
                                        **({"DECIDER": decider_option} if decider_option else {}))
    n6_decider.generate(env)
    cache = n6_decider._CACHE[0]
    assert (cache.path, cache.hash_name, cache.always_hash) == (str(tmp_path / "build" / ".n6-stat"), name, always)
    assert env.N6HashName() == name      # what pack hashes its outputs with
    assert SCons.Node.FS.File.get_max_drift_csig is n6_decider._stat_cache_csig
    assert SCons.Node.FS.File.is_up_to_date is n6_decider._is_up_to_date
    assert SCons.SConsign.write is n6_decider._write_sconsign
    n6_decider.generate(env)
    assert n6_decider._CACHE[0] is cache and env.N6ContentSignature("/none") == ""


def test_the_cache_is_saved_at_exit(monkeypatch):
    saved = []
    monkeypatch.setattr(n6_decider, "_CACHE", [NS(save=lambda: saved.append(1))])
    n6_decider._save()
    assert saved == [1]
    monkeypatch.setattr(n6_decider, "_CACHE", [None])
    n6_decider._save()
