"""Pack throughput for 64 MB of params, as a ratio to `cp` + zlib.crc32 of the same bytes.

    ./n6 build && .venv/bin/python bench/pack_throughput.py [MB]

Both sides are measured in this run, best of 3; the ratio (goal >= 0.5) is what to compare
across machines. The peak Python heap during pack shows that params are streamed, not held."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "site_scons"))

from n6.reloc.elf import code_image  # noqa: E402
from n6.reloc.pack import pack  # noqa: E402
from n6.reloc.params import ParamsBlob, ParamsPart  # noqa: E402

CHUNK = 1 << 20


def best(fn, n=3):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    mb = int(sys.argv[1]) if len(sys.argv) > 1 else 64
    elf = os.path.join(ROOT, "build", "tiny_prebuilt", "reloc", "network.elf")
    if not os.path.exists(elf):
        subprocess.run([sys.executable, "-m", "SCons", "-C", ROOT, "-Q", "tiny_prebuilt"], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        blob = os.path.join(tmp, "params.raw")
        with open(blob, "wb") as f:
            for i in range(mb):
                f.write(os.urandom(CHUNK) if i == 0 else bytes([i & 0xFF]) * CHUNK)

        def baseline():
            shutil.copyfile(blob, os.path.join(tmp, "copy.raw"))
            crc = 0
            with open(os.path.join(tmp, "copy.raw"), "rb") as f:
                while chunk := f.read(CHUNK):
                    crc = zlib.crc32(chunk, crc)

        code, desc = os.path.join(tmp, "network_rel_code.bin"), os.path.join(tmp, "network_reloc_params.json")
        code_image(elf).save(code)
        ParamsBlob([ParamsPart("xSPI2", blob, mb * CHUNK)]).save(desc)

        def packed():
            pack(code, desc, os.path.join(tmp, "network_rel.bin"))

        t_base, t_pack = best(baseline), best(packed)
        tracemalloc.start()
        packed()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(f"params              {mb} MB")
    print(f"cp + crc32          {t_base * 1000:8.1f} ms  ({mb / t_base:7.1f} MB/s)")
    print(f"pack                {t_pack * 1000:8.1f} ms  ({mb / t_pack:7.1f} MB/s)")
    print(f"ratio (goal >= 0.5) {t_base / t_pack:8.2f}")
    print(f"peak Python heap    {peak / (1 << 20):8.1f} MB during pack ({100 * peak / (mb << 20):.1f}% of the params)")


if __name__ == "__main__":
    main()
