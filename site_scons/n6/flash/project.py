"""What one build run knows about deploying the project's models to the board: the models'
images, the model sets planned and their flash steps, what the command line asks each deploy
verb for, and the steps that talk to the board. Held by the n6_flash tool; no SCons import
(the images and steps are the build's nodes, kept as they are)."""
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import N6Error
from ..releases import Release

if TYPE_CHECKING:                 # the flash step is imported when a set is planned
    from .step import FlashOptions

T = TypeVar("T")
DEPLOY_VERBS = ("run", "validate", "profile")     # the steps that run a flashed model on the board


def deploy_targets(targets: list, all_models: dict, broken: dict) -> tuple[list, bool]:
    """(the flash targets of `targets`, whether they ask for any deploy step). `validate-kws_mpl`:
    one line naming the models (or the folder's own error), not SCons's "Do not know how to make"."""
    for t in targets:
        verb, dash, name = t.partition("-")
        if dash and verb in DEPLOY_VERBS + ("flash",) and name not in all_models:
            raise broken.get(name) or N6Error(None, f"{t}: no model {name}",
                                              f"choose from {', '.join(sorted(all_models))}")
    flash = [t for t in targets if t == "flash" or t.startswith("flash-")]
    return flash, bool(flash) or any(t.partition("-")[0] in DEPLOY_VERBS for t in targets)


@dataclass
class Deployment:
    model_images: dict                            # model → its image step's targets
    release: Release                              # the install's release
    plans: dict = field(default_factory=dict)     # model set → (FlashOptions, what its steps sign)
    steps: dict = field(default_factory=dict)     # model set → its flash step's targets
    flashed: dict = field(default_factory=dict)   # board → the set this run flashed there (a board holds one)
    boards: tuple = ()                            # the boards (n6.flash.boards.Attached or LabPlace), in order
    board_of: dict = field(default_factory=dict)  # model set → the index of its board in `boards`
    known: dict = field(default_factory=dict)     # the probes attached: looked up once
    template: object = None                       # the run's FlashOptions before a set and a board are given
    requests: dict = field(default_factory=dict)  # verb (run, validate, profile) → models the command line asks
    project: list = field(default_factory=list)   # the models of a bare `run` / `validate` / `profile`
    results: dict = field(default_factory=dict)   # verb → {model: its node whose reports the summary reads}
    users: list = field(default_factory=list)     # (model, nodes) of the steps that talk to the board
    broken: dict = field(default_factory=dict)    # model folders that cannot be read: name → error

    def turns(self) -> dict:
        """model → the index of its set in the order the sets go on the board."""
        return {m: i for i, models in enumerate(self.plans) for m in models}

    def plan(self, models: tuple[str, ...], index: int, template: "FlashOptions") -> tuple["FlashOptions", list[Any]]:
        """(FlashOptions of the set `models` on board `index`, the set's image nodes): `template`
        with the set's images and the board's (n6.flash.boards.flash_fields)."""
        from dataclasses import replace
        from ..reloc.names import IMAGE_SUFFIX, params_path
        from .boards import flash_fields
        from .step import attached_probes
        unit = self.boards[index]
        fields = flash_fields(unit, template.simulated,
                              lambda *key: self.once(("probes",) + key, lambda: tuple(attached_probes(*key))))
        images, files = [], []
        for m in models:
            network = next(n for n in self.model_images[m] if n.name.endswith(IMAGE_SUFFIX))
            params = next((n for n in self.model_images[m] if n.path == params_path(network.path)), None)
            files.append((m, network.path, params.path if params else None))
            images += [network] + ([params] if params else [])
        self.board_of[models] = index
        return replace(template, files=tuple(files), **fields), images

    def sets_to_plan(self, targets: list, chosen: list, build_dir: str) -> list:
        """After the flash targets' set is planned: note what the command line asks each deploy
        verb for, and return the (model set, board index) pairs the run, validate and profile
        steps it asks for need: each model alone on a 2.x board, sets of up to four on a 3.x one
        (with one board, the set it holds first), dealt out over the boards in turn."""
        from .boards import deal
        from .step import board_sets, deploy_requests, held_set
        self.requests = deploy_requests(targets, chosen, sorted(self.model_images))
        self.project = chosen or sorted(self.model_images)
        planned = {m for models in self.plans for m in models}
        todo = sorted({m for models in self.requests.values() for m in models} - planned)
        one_board = len(self.boards) == 1
        held = held_set(build_dir, todo, self.model_images) if one_board and not planned else ()
        return deal(board_sets(todo, self.release.multi_model, held, self.board_names()), len(self.boards),
                    len(self.plans))

    def board_names(self) -> dict:
        """Model → the name the board knows it by: its image's (`<name>_rel.bin`), lower case."""
        from ..reloc.names import IMAGE_SUFFIX
        return {m: next(n.name[:-len(IMAGE_SUFFIX)].lower() for n in nodes if n.name.endswith(IMAGE_SUFFIX))
                for m, nodes in self.model_images.items()}

    def models_in_order(self, verbs: Iterable[str]) -> list:
        """The models the command line asks `verbs` for, in the order their sets go on the boards."""
        turn = self.turns()
        return sorted({m for v in verbs for m in self.requests.get(v, ())}, key=lambda m: (turn.get(m, 0), m))

    def board_turns(self) -> list:
        """Per board, the nodes of the steps that talk to it, in the order their sets go there:
        each list is run one after the other, the boards side by side."""
        turn = self.turns()
        board = {m: self.board_of[models] for models in self.plans for m in models}
        ordered = sorted(self.users, key=lambda u: turn.get(u[0], 0))
        return [[nodes for m, nodes in ordered if board.get(m, 0) == index] for index in range(len(self.boards))]

    def report_broken(self, targets: list, model_var: str) -> list:
        """The bare deploy verbs of `targets` (a whole project: no MODEL=) that report the model
        folders that cannot be read, each given a row per such folder."""
        verbs = [v for v in DEPLOY_VERBS if v in targets] if self.broken and not model_var else []
        for verb in verbs:
            self.results.setdefault(verb, {}).update({name: [] for name in self.broken})
        return verbs

    def summaries(self, targets: list) -> dict:
        """verb → {model: nodes} of each deploy verb `targets` ask for several models."""
        asked = {t.partition("-")[0] for t in targets}
        return {verb: results for verb, results in sorted(self.results.items()) if verb in asked and len(results) > 1}

    def set_of(self, model: str) -> tuple:
        """The model set `model` goes on a board with (as planned, else alone); a model the
        build does not make is a one-line error."""
        if model not in self.model_images:
            raise N6Error(None, f"no model {model} to put on the board", "see `scons -h` for the models")
        return next((s for s in self.plans if model in s), (model,))

    def claim(self, board: tuple[str, str], models: tuple[str, ...]) -> None:
        """A flash of `models` on `board` (n6.flash.shared_board.board_key) in this run: a second,
        different set would overwrite the first, which a later step of the run still needs."""
        before = self.flashed.setdefault(board, models)
        if before != models:
            raise N6Error(None, f"one run would put {', '.join(before)} and then {', '.join(models)} on "
                          "the board", "flash (or run) one model set at a time")

    def once(self, key: object, make: Callable[[], T]) -> T:
        """`make()`, called once per `key` in a run."""
        if key not in self.known:
            self.known[key] = make()
        return self.known[key]
