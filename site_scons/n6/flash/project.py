"""What one build run knows about deploying the project's models to the board: the models'
images, the model sets planned and their flash steps, what the command line asks each deploy
verb for, and the steps that talk to the board. Held by the n6_flash tool; no SCons import
(the images and steps are the build's nodes, kept as they are)."""
from dataclasses import dataclass, field


@dataclass
class Deployment:
    model_images: dict                            # model → its image step's targets
    release: object                               # the install's release (n6.releases.Release)
    plans: dict = field(default_factory=dict)     # model set → (FlashOptions, what its steps sign)
    steps: dict = field(default_factory=dict)     # model set → its flash step's targets
    flashed: list = None                          # the set this run flashed so far (the board holds one)
    known: dict = field(default_factory=dict)     # board files, programmers, probes: looked up once
    requests: dict = field(default_factory=dict)  # verb (run, validate, profile) → models the command line asks
    project: list = field(default_factory=list)   # the models of a bare `run` / `validate` / `profile`
    results: dict = field(default_factory=dict)   # verb → {model: its node whose reports the summary reads}
    users: list = field(default_factory=list)     # (model, nodes) of the steps that talk to the board
    broken: dict = field(default_factory=dict)    # model folders that cannot be read: name → error

    def turns(self) -> dict:
        """model → the index of its set in the order the sets go on the board."""
        return {m: i for i, models in enumerate(self.plans) for m in models}

    def once(self, key, make):
        """`make()`, called once per `key` in a run."""
        if key not in self.known:
            self.known[key] = make()
        return self.known[key]
