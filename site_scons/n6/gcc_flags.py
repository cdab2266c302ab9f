"""GCC flag groups of ST's relocatable-model makefile (reloc-format.md §1.3), as data."""

CORE = ["-mthumb", "-mcpu=cortex-m55", "-mfpu=fpv4-sp-d16", "-mtune=cortex-m55", "-mfloat-abi=hard"]
SECURE = ["-mcmse"]
PIC = ["-fpic", "-mno-pic-data-is-text-relative", "-msingle-pic-base", "-mpic-register=r9"]
OPT = ["-std=gnu99", "-mno-thumb-interwork", "-ffast-math", "-fsingle-precision-constant", "-fvisibility=hidden",
       "-fno-unwind-tables", "-fstack-reuse=all", "-ffunction-sections", "-fdata-sections", "-fno-math-errno",
       "-fomit-frame-pointer", "-fno-builtin", "-Os"]
DEFINES = ["LL_ATON_DUMP_DEBUG_API", "LL_ATON_PLATFORM=LL_ATON_PLAT_STM32N6", "LL_ATON_OSAL=LL_ATON_OSAL_BARE_METAL",
           "LL_ATON_RT_MODE=LL_ATON_RT_ASYNC", "LL_ATON_SW_FALLBACK", "LL_ATON_DBG_BUFFER_INFO_EXCLUDED=1",
           "LL_ATON_RT_RELOC"]
RELOC_DEFINE = "BUILD_AI_NETWORK_RELOC"
DBG_INFO_DEFINE = "LL_ATON_EB_DBG_INFO"
ECBLOB_DEFINE = 'ECBLOB_CONST_SECTION=__attribute__((used, section (".const_ec_blob"), ))'


def defines(name: str | None, dbg_info: bool = True, ecblob_in_params: bool = False) -> list[str]:
    """The -D list of ST's makefile, in its order: the reloc define, the model's config header,
    then the runtime's (the debug-info switch among them, the EC-blob section last). `name` None:
    no config header, for the runtime sources that never read it (shared by the models)."""
    runtime = list(DEFINES)
    if dbg_info:
        runtime.insert(runtime.index("LL_ATON_DBG_BUFFER_INFO_EXCLUDED=1"), DBG_INFO_DEFINE)
    return [RELOC_DEFINE] + ([f'MODEL_CONF="{name}_reloc_conf.h"'] if name else []) + runtime + \
        ([ECBLOB_DEFINE] if ecblob_in_params else [])


def flag_set_name(secure: bool = True, dbg_info: bool = True, ecblob_in_params: bool = False) -> str:
    """A folder name for one set of the image's compile flags, e.g. "secure-dbg_info"."""
    return "-".join(["secure" if secure else "nonsecure"] + ["dbg_info"] * dbg_info +
                    ["ecblob_in_params"] * ecblob_in_params)

# The runtime library is compiled like the model (it is linked into it), and its own memcpy &
# co. must not be turned back into calls to themselves.
# IEEE float without fused multiply-add (-fno-fast-math -ffp-contract=off): the Cortex-M kernels round
# every float step as the host build does, so the simulated board's outputs equal the host's bit for bit.
# nr_kernels.c alone is -O2 by its own pragma, so every build of it (this one, the tests') agrees.
RUNTIME_LIB = CORE + PIC + OPT + ["-fno-tree-loop-distribute-patterns", "-fno-fast-math", "-ffp-contract=off"]


def compile_flags(secure: bool = True) -> list[str]:
    return CORE + (SECURE if secure else []) + PIC + OPT
