"""The firmware that installs an image, as ST's loader compares the two: the release and build
options it was made with and the CPU it runs on. The one description of it: the image checker,
the flash gate (from a board file's [firmware] or ST's validation firmware ELF) and the
simulated board use it. A fact that is None is not known and not checked."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Self

from ..nn_interface import struct_sizes_word
from ..releases import DEFAULT_RELEASE, RELEASES

if TYPE_CHECKING:                 # a board file's [firmware] is read without the image format
    from .image import Image


@dataclass(frozen=True)
class Firmware:
    release: str | None = DEFAULT_RELEASE   # ST Edge AI Core release it was built with ("2.2", "3.0")
    secure: bool | None = True              # built with -mcmse
    dbg_info: bool | None = True            # LL_ATON_EB_DBG_INFO
    fpu: bool = True                        # CPACR enables the FPU
    cpu_part: int = 0xD22                   # CPUID[15:4] of the CPU: Cortex-M55
    ll_aton: tuple[int, ...] | None = None   # (major, minor, micro) of its runtime; None: the release's
    struct_sizes: int | None = None         # rt_c_struct_sizes it was built with; None: dbg_info's
    source: str = ""                        # where the facts come from (a firmware ELF); "": defaults, board file
    async_mode: bool | None = True          # LL_ATON_RT_MODE=LL_ATON_RT_ASYNC

    @property
    def version(self) -> tuple[int, ...] | None:
        """(major, minor, micro) of its LL_ATON runtime, None when unknown."""
        if self.ll_aton:
            return tuple(self.ll_aton)
        return RELEASES[self.release].atonn[:3] if self.release in RELEASES else None

    @property
    def header_words(self) -> int | None:
        """The image header as its loader reads it (its release's layout); None: unknown."""
        rel = next((r for r in RELEASES.values() if r.atonn[:3] == self.version), None)
        return rel.header_words if rel else None

    @property
    def expected_struct_sizes(self) -> int | None:
        if self.struct_sizes is not None:
            return self.struct_sizes
        return struct_sizes_word(self.dbg_info) if self.dbg_info is not None else None

    @classmethod
    def matching(cls, img: Image, secure: bool = True) -> Self:
        """A firmware built from the same release and options as `img` (its intended host)."""
        flags = img.flags
        return cls(release=None, secure=secure, dbg_info=flags.dbg_info, async_mode=flags.async_mode,
                   ll_aton=img.rt_ctx.ll_aton_version[:3] if img.rt_ctx else (1, 1, 1))
