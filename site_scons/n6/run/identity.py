"""The board runs the image the build flashed: what the validation firmware reports of an
installed relocatable model (its c-name, activations and params sizes and the LL_ATON version
the image carries: ST's firmware takes them from the image's runtime context) is checked against
the image before any output is stored. Two images alike in all of these (the same network with
other weights) cannot be told apart this way; the board lock and its record keep n6's own
builds from that case."""
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from ..aivalidation.messages import ModelInfo
from ..errors import N6Error
from ..jsonfile import JsonObject
from ..reloc.image import Image


@dataclass(frozen=True)
class ImageIdentity:
    c_name: str
    activations: int          # bytes
    params: int               # bytes
    version: tuple[int, ...]   # LL_ATON (major, minor, micro), reported as the model's tool version

    @classmethod
    def of(cls, path: str) -> Self:
        try:
            img = Image.load(path)
        except OSError as e:
            raise N6Error(path, f"cannot read the flashed image: {e.strerror}", "build and flash it again") from None
        rt = img.rt_ctx
        if rt is None:
            raise N6Error(path, "no runtime context: not a relocatable network image", "rebuild the image")
        return cls(img.string_at(rt.c_name), rt.acts_sz, rt.params_sz, rt.ll_aton_version[:3])

    def differences(self, model: ModelInfo) -> list[str]:
        """What the board's ModelInfo `model` says otherwise, as short phrases."""
        pairs = (("activations", f"{self.activations} B", f"{model.activations_size} B"),
                 ("params", f"{self.params} B", f"{model.params_size} B"),
                 ("LL_ATON", ".".join(map(str, self.version)), ".".join(map(str, model.tool_version))))
        return [f"{what} {theirs} (the image: {ours})" for what, ours, theirs in pairs if ours != theirs]


FIX = "flash this board with the model (scons flash MODEL=...), or give PORT= of the board that holds it"


def check_board_model(on_board: JsonObject, models: Sequence[ModelInfo], board: str) -> None:
    """The deploy stamp `on_board` (on_board.json as read) against the models the board reports
    (`models`, ModelInfo list; `board`: how the board is named in the message): every network
    image of the stamp installed there as built, else a one-line error before anything runs."""
    for image in on_board["images"]:
        if image["role"] != "network":
            continue
        ours = ImageIdentity.of(image["path"])
        found = [m for m in models if m.name == ours.c_name]
        if not found:
            have = ", ".join(f"'{m.name}'" for m in models) or "no model"
            raise N6Error(board, f"the board runs {have}, not '{ours.c_name}' of {image['path']}", FIX)
        if all(ours.differences(m) for m in found):
            raise N6Error(board, f"the board's model '{ours.c_name}' is not the one in {image['path']}: "
                          f"{'; '.join(ours.differences(found[0]))}", FIX)
