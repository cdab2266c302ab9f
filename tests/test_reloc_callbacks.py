"""The firmware callback table facts per release (reloc-format.md §6)."""
from n6.reloc import callbacks


def test_table_sizes_and_shared_entries():
    assert callbacks.SIZES == {"2.2": 21, "3.0": 23, "4.0": 21}
    t22, t30, t40 = (callbacks.table(r) for r in ("2.2", "3.0", "4.0.1"))
    assert t22[:9] == t30[:9] == t40[:9]
    assert t22[9] == t30[9] == "ll_aton_lib_softmax" and t40[9] == "ll_aton_lib_dma_transpose"
    assert sum(n.startswith("ll_aton_lib_") for n in t22) == 14
    assert not {"ll_aton_lib_dma_pad_memset", "ll_aton_lib_dma_pad_filling", "ll_aton_lib_async_memcpy",
                "ll_aton_lib_dma_pad_4loop_filling"} & set(t40)
    assert {"ll_aton_lib_pad_std", "ll_aton_lib_pad_4loop"} <= set(t40)
    for t in (t22, t30, t40):
        assert len(set(t)) == len(t)
