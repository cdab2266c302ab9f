"""The image flags word as ST's loader tests it (n6.reloc.check.check_flags), in the default suite:
facts the test bed's judge established (tests/test_st_loader_judge.py: a flipped CPUID bit is
INVALID_BIN) and the loader's version test, where a matching major or a matching minor is enough.
Both sides of each rule, so CI without the test bed fails when one breaks."""
import pytest

from n6.reloc.check import LoaderError, check_flags
from n6.reloc.firmware import Firmware

CPU, FPU, SECURE, DBG, ASYNC = 0xD22, 1 << 12, 1 << 20, 1 << 21, 1 << 22
FW = Firmware("2.2", True, True, True, 0xD22)           # ST's validation firmware: secure, dbg-info, async, FPU


def flags(major=8, minor=0, cpu=CPU, extra=FPU | SECURE | DBG | ASYNC):
    return major << 28 | minor << 24 | extra | cpu


@pytest.mark.parametrize("major, minor, ok", [(8, 0, True), (8, 1, True), (7, 0, True), (9, 0, True),
                                              (7, 1, False), (9, 15, False)])
def test_runtime_version_either_part_matching_is_enough(major, minor, ok):
    if ok:
        assert check_flags(flags(major, minor), FW) == []
    else:
        with pytest.raises(LoaderError, match=f"reloc runtime version {major}.{minor} is not 8.0"):
            check_flags(flags(major, minor), FW)


@pytest.mark.parametrize("cpu", [CPU ^ 1, CPU - 1, CPU + 1, 0])
def test_cpu_part_must_be_the_firmware_cpus(cpu):
    with pytest.raises(LoaderError) as e:
        check_flags(flags(cpu=cpu), FW)
    assert (e.value.name, e.value.fact) == ("INVALID_BIN", "cpu_part") and f"0x{cpu:03X}" in str(e.value)


def test_fpu_secure_dbg_async_bits():
    no_fpu = Firmware("2.2", True, True, False, 0xD22)
    assert check_flags(flags(extra=SECURE | DBG | ASYNC), no_fpu) == []
    with pytest.raises(LoaderError, match="FPU"):
        check_flags(flags(), no_fpu)
    assert check_flags(flags(extra=FPU | DBG | ASYNC), FW) == ["non-secure image on a secure firmware"]
    with pytest.raises(LoaderError, match="secure image"):
        check_flags(flags(), Firmware("2.2", False, True, True, 0xD22))
    for bit, fact in ((DBG, "dbg_info"), (ASYNC, "async_mode")):
        with pytest.raises(LoaderError) as e:
            check_flags(flags(extra=(FPU | SECURE | DBG | ASYNC) ^ bit), FW)
        assert e.value.fact == fact


def test_error_codes_are_st_loaders():
    """AI_RELOC_RT_ERR_* of ST's ll_aton_reloc_network.h (PARAMS_CRC is ours: ST's never checks it)."""
    from n6.reloc.check import ERROR_CODES
    assert ERROR_CODES == {"NONE": 0, "INVALID_BIN": -1, "MEMORY": -2, "NOT_SUPPORTED": -3, "ARG": -4,
                           "INVALID_HDL": -5, "INSTALL": -6, "PARAM_ADDR": -7, "PARAM_DESC": -8, "PARAMS_CRC": -100}
    assert LoaderError("MEMORY", "x").code == -2


def test_dbg_info_and_struct_size_messages():
    with pytest.raises(LoaderError, match="dbg-info off but the firmware's is on"):
        check_flags(flags(extra=FPU | SECURE | ASYNC), FW)
    from n6.reloc.check import check_runtime
    fw = Firmware("2.2", True, True, True, 0xD22, struct_sizes=0x0C18)
    with pytest.raises(LoaderError, match=r"are 20 / 16 in the image, 24 / 12 in the firmware"):
        check_runtime(fw.version[0] << 24 | fw.version[1] << 16 | fw.version[2] << 8, 0x1014, fw)
