"""Pool figures as ST's relocation flow computes them, from network.c fragments: every buffer is
clipped to each physical pool it overlaps (buffers of a virtual pool straddle physical ones), a
pool no buffer touches keeps its `global pool` figure, and only pools with a .raw file or a
global size get a descriptor."""
from n6.network_c import Buffer, NetworkC, PoolComment
from n6.reloc.pools import TYPE_RESET, TYPE_UNUSED, pools_of

MB = 1 << 20


def _net(buffers, extra_pools=()):
    """AXISRAM2 (1 MB at 0x34100000), AXISRAM3 (448 KB at 0x34200000), AXISRAM4 (448 KB at
    0x34270000) and their virtual pool at 0x34100000, like the real 2.2 outputs."""
    net = NetworkC(path="m/network.c", text="")
    rw = "absolute_mode size={} READ_WRITE cacheable=OFF"
    for index, postfix, offset, size, glob in [(4, "AXISRAM2", 0x34100000, MB, "?"),
                                               (3, "AXISRAM3", 0x34200000, 0x70000, "?"),
                                               (2, "AXISRAM4", 0x34270000, 0x70000, "?"),
                                               (11, "AXISRAM2_AXISRAM3_AXISRAM4", 0x34100000, 0x1E0000, "2.28 MB")]:
        desc = f"offset=0x{offset:08x} " + rw.format(size) + (" vpool" if "_" in postfix else "")
        net.pools.append(PoolComment(index, postfix, postfix, offset, desc, glob))
    net.pools += list(extra_pools)
    net.buffers = [Buffer("Internal", f"b{i}", base, start, end, end, param) for i, (base, start, end, param)
                   in enumerate(buffers)]
    return net


def _figures(net, raws=None):
    return {p.name: (p.used, p.const, p.type) for p in (pools_of(net, raws) if raws else pools_of(net))}


def test_a_buffer_of_the_virtual_pool_counts_in_each_physical_pool_it_straddles():
    net = _net([(0x34100000, 0x0, 0x1000, False),            # AXISRAM2 start
                (0x34100000, 0xF0000, 0x110000, False),      # 0x341F0000..0x3420FFFF: AXISRAM2 → AXISRAM3
                (0x34200000, 0x20000, 0x30000, False)])      # AXISRAM3, against the physical base
    got = _figures(net)
    assert got["AXISRAM2"] == (MB, 0, TYPE_RESET)                # clipped at the pool's end, not 0x110000
    assert got["AXISRAM3"] == (0x30000, 0, TYPE_RESET)           # from the pool's start to b2's end
    assert "AXISRAM2_AXISRAM3_AXISRAM4" not in got


def test_a_buffer_that_begins_before_a_pool_and_covers_it_uses_all_of_it():
    net = _net([(0x34100000, 0x160000, 0x1E0000, False)])      # 0x34260000..0x342DFFFF covers AXISRAM4
    got = _figures(net)
    assert got["AXISRAM4"] == (0x70000, 0, TYPE_RESET)
    assert got["AXISRAM3"] == (0x10000, 0, TYPE_RESET)           # 0x34260000..0x3426FFFF, clipped at its start


def test_constants_are_clipped_the_same_way_and_offsets_mix_virtual_and_physical_bases():
    net = _net([(0x34100000, 0x100100, 0x100200, True),        # in AXISRAM3, against the virtual base
                (0x34200000, 0x400, 0x500, False)])          # in AXISRAM3, against its own base
    used, const, _ = _figures(net)["AXISRAM3"]
    assert (used, const) == (0x400, 0x100)                       # 0x34200100..0x342004FF; params 0x100


def test_an_untouched_pool_keeps_its_global_size_truncated_like_st():
    extra = PoolComment(8, "xSPI1", "hyperRAM", 0x90000000, "offset=0x90000000 absolute_mode size=33554424 "
                        "READ_WRITE cacheable=ON", "162.33 KB")
    got = _figures(_net([], [extra]))
    assert got["xSPI1"][0] == 166225                             # int(162.33 * 1024), not rounded


def test_a_pool_without_raw_file_or_global_size_gets_no_descriptor():
    net = _net([(0x34270000, 0, 0x100, False)])
    assert _figures(net, raws=["network_atonbuf.xSPI2"])["AXISRAM4"] == (0x100, 0, TYPE_UNUSED)
    assert _figures(net)["AXISRAM4"] == (0x100, 0, TYPE_RESET)   # with every .raw present
