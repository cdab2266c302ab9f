"""The firmware callback table a relocatable model calls through (`rt_ctx.cbs`), per ST Edge AI
release: entry names in table order (reloc-format.md §6). The loader stores the table's address
in rt_ctx word 4; the model's forwarding functions load entry i from `cbs + 4 * i`. The
simulated board's firmware side serves these entries; the simulated runtime's C side follows
the same list."""

COMMON = ("assert_func", "ll_lib_error",
          "ll_aton_cache_mcu_clean_range", "ll_aton_cache_mcu_invalidate_range",
          "ll_aton_cache_mcu_clean_invalidate_range", "ll_aton_cache_npu_clean_range",
          "ll_aton_cache_npu_clean_invalidate_range",
          "ll_aton_lib_concat", "ll_aton_lib_cast")

_LIB_2_2 = ("ll_aton_lib_softmax", "ll_aton_lib_dma_imagetorow", "ll_aton_lib_dma_spacetodepth",
            "ll_aton_lib_dma_rowtoimage", "ll_aton_lib_dma_depthtospace", "ll_aton_lib_dma_outputs_flat_copy",
            "ll_aton_lib_dma_outputs_slice_splitlike", "ll_aton_lib_dma_outputs_channel_split_aton",
            "ll_aton_lib_dma_outputs_channel_split_batched", "ll_aton_lib_dma_pad_memset",
            "ll_aton_lib_dma_pad_filling", "ll_aton_lib_dma_transpose")

TABLES = {
    # checked against the 2.2 install's struct
    "2.2": COMMON + _LIB_2_2,
    # 2.2 plus two entries after transpose (3.0's LL_ATON 1.1.3-8 ll_aton_reloc_network.h)
    "3.0": COMMON + _LIB_2_2 + ("ll_aton_lib_async_memcpy", "ll_aton_lib_dma_pad_4loop_filling"),
    # entry 9 is transpose; pad_memset / pad_filling / async_memcpy / pad_4loop_filling dropped,
    # pad_std and pad_4loop added after slice_splitlike (4.0's LL_ATON 1.1.3-262 ll_aton_reloc_network.h)
    "4.0": COMMON + ("ll_aton_lib_dma_transpose", "ll_aton_lib_softmax", "ll_aton_lib_dma_imagetorow",
                     "ll_aton_lib_dma_spacetodepth", "ll_aton_lib_dma_rowtoimage", "ll_aton_lib_dma_depthtospace",
                     "ll_aton_lib_dma_outputs_slice_splitlike", "ll_aton_lib_pad_std", "ll_aton_lib_pad_4loop",
                     "ll_aton_lib_dma_outputs_flat_copy", "ll_aton_lib_dma_outputs_channel_split_aton",
                     "ll_aton_lib_dma_outputs_channel_split_batched"),
}
CACHE_OPS = COMMON[2:7]
SIZES = {release: len(names) for release, names in TABLES.items()}   # 21, 23, 21


def table(release: str) -> tuple[str, ...]:
    """Entry names of `release`'s callback table, in order ("2.2.0" and "2.2" alike)."""
    key = ".".join(str(release).split(".")[:2])
    try:
        return TABLES[key]
    except KeyError:
        raise KeyError(f"no callback table known for ST Edge AI {release} (known: {', '.join(TABLES)})") from None

