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
