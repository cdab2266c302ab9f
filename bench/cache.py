"""A shared build cache across checkouts, as ratios measured in one run:

    .venv/bin/python bench/cache.py

Two copies of the repository in folders of different path lengths share one CACHE_DIR (as two
clones, two CI runners or two colleagues on a shared volume would). The first builds every
bundled model cold; the second then builds the same commit. Reported: the share of the cached
targets the second retrieves (goal >= 95%), the steps it still runs, its time against the cold
build's, and whether both checkouts' images are byte-identical."""
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from conftest import copy_repo  # noqa: E402
from timed import scons  # noqa: E402

STEP = re.compile(r"^  (GEN|PREPARE|CC|AR|LINK|IMAGE|PACK|INSTALL)\s", re.M)


def images(repo):
    build = os.path.join(repo, "build")
    out = {}
    for model in sorted(os.listdir(build)):
        folder = os.path.join(build, model)
        for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else ():
            if name.endswith(("_rel.bin", "_rel_params.bin")):
                with open(os.path.join(folder, name), "rb") as f:
                    out[f"{model}/{name}"] = f.read()
    return out


def main():
    with tempfile.TemporaryDirectory() as tmp:
        first = copy_repo(os.path.join(tmp, "a"))
        second = copy_repo(os.path.join(tmp, "another-checkout-of-the-same-commit"))
        cache = os.path.join(tmp, "cache")
        cold, _ = scons(first, f"CACHE_DIR={cache}")
        cached = sum(len(files) for folder, _, files in os.walk(cache) if folder != cache)
        warm, out = scons(second, f"CACHE_DIR={cache}")
        retrieved = out.count("Retrieved `")
        ran = STEP.findall(out)
        same = images(first) == images(second)
        count = len(images(first))
    print(f"cold build (first checkout)  {cold * 1000:8.0f} ms  {cached} targets stored in the cache")
    print(f"second checkout, same cache  {warm * 1000:8.0f} ms  = {warm / cold:.2f}x the cold build; retrieved "
          f"{retrieved} of {cached} ({100 * retrieved / cached:.1f}%, goal >= 95%)")
    print(f"steps the second still ran   {', '.join(sorted(set(ran))) or 'none'} "
          "(INSTALL: the simulated install, laid out when the build is read)")
    print(f"images byte-identical        {'yes' if same else 'NO'} ({count} files)")


if __name__ == "__main__":
    main()
