"""Speed on ST's published N6 sources (the test bed's .tflite files): the simulated `stedgeai
generate` of a 224x224 MobileNet v1, BlazeFace 128 and a 480x480 YOLOX nano, against the 10 s
budget; host time per inference of the host build of the generated C; and host time per
inference on the simulated board (the emulated Cortex-M55 running the same kernels), with the
instructions it executes and the instructions per multiply-accumulate of the model.

    N6_REAL_STEDGEAI=<test bed> .venv/bin/python bench/published_sources.py

Everything is measured in this run, on one machine: compare the ratios."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "stedgeai"),
                os.path.join(ROOT, "sim", "board"), os.path.join(ROOT, "sim", "npu")]

from stedgeai_generate import BUDGET_S, best  # noqa: E402  (bench/ is the script's folder)
from tabulate import tabulate  # noqa: E402

RELOC_MPOOL = ("2.2", "scripts", "N6_reloc", "test", "mpools", "stm32n6_reloc.mpool")
SOURCES = {"nucleo_mnv1": (("sources", "nucleo_mnv1", "model.tflite"), RELOC_MPOOL),
           "blazeface": (("sources", "blazeface", "model.tflite"), RELOC_MPOOL),
           "yolox_nano": (("ec-workspace", "model.tflite"), ("ec-workspace", "stm32n6-app2_STM32N6570-DK.mpool"))}
OPTIONS = "--native-float --mvei --cache-maintenance --Ocache-opt --Os --optimization 3 --all-buffers-info"


def model_folder(repo, name, real):
    model, mpool = SOURCES[name]
    folder = os.path.join(repo, "models", name)
    os.makedirs(folder)
    shutil.copyfile(os.path.join(real, *model), os.path.join(folder, "model.tflite"))
    shutil.copyfile(os.path.join(real, *mpool), os.path.join(folder, "st.mpool"))
    with open(os.path.join(folder, "neural_art.json"), "w") as f:
        json.dump({"Globals": {}, "Profiles": {"default": {"memory_pool": "./st.mpool", "options": OPTIONS}}}, f)
    return folder


def generate_time(folder, tmp):
    from types import SimpleNamespace

    from n6.releases import release
    from stedgeai_sim.generate import generate
    args = SimpleNamespace(profile=("default", os.path.join(folder, "neural_art.json")),
                           model=os.path.join(folder, "model.tflite"), name=None, input_data_type=None,
                           output_data_type=None, output=os.path.join(tmp, "out"), workspace=os.path.join(tmp, "ws"))
    cwd = os.getcwd()
    os.chdir(folder)                 # the profile names its .mpool relative to itself
    try:
        return best(lambda: generate(args, release("2.2"), "<install>", "stedgeai generate (bench)"))
    finally:
        os.chdir(cwd)


def host_time(repo, name):
    from n6.run import host_reference
    out = os.path.join(repo, "build", name, "st_ai_output")
    with tempfile.TemporaryDirectory() as work:
        exe = host_reference.build(out, os.path.join(repo, "build", "stedgeai-sim", "2.2"), work)
        info = json.load(open(os.path.join(out, "network_c_info.json")))
        import numpy as np
        feed = [bytes(int(np.prod(i["shape"])) * i["data_format"]["size"] // 8)
                for i in info["graphs"][0]["original_inputs"]]
        n_out = len(info["graphs"][0]["original_outputs"])
        return best(lambda: host_reference.execute(exe, work, feed, n_out), 2)


def board_time(repo, name):
    from n6board.firmware import InstalledModel
    with open(os.path.join(repo, "build", name, "network_rel.bin"), "rb") as f:
        m = InstalledModel(f.read())
    x = [bytes(b.nbytes) for b in m.inputs]
    t = time.perf_counter()
    run = m.infer(x)
    return time.perf_counter() - t, run.cycles        # one cycle per instruction


def main():
    real = os.environ.get("N6_REAL_STEDGEAI")
    if not real:
        print("set N6_REAL_STEDGEAI to ST's test bed folder")
        return 2
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "repo")
        files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
        for rel in files:
            os.makedirs(os.path.join(repo, os.path.dirname(rel)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), os.path.join(repo, rel))
        folders = {name: model_folder(repo, name, real) for name in SOURCES}
        subprocess.run([sys.executable, "-m", "SCons", "-Q", *SOURCES], cwd=repo, check=True, capture_output=True)
        for name, folder in folders.items():
            t_gen = generate_time(folder, os.path.join(tmp, name))
            t_host = host_time(repo, name)
            t_board, insns = board_time(repo, name)
            with open(os.path.join(repo, "build", name, "st_ai_output", "network_c_info.json")) as f:
                macc = sum(node.get("macc", 0) for node in json.load(f)["graphs"][0]["nodes"])
            rows.append({"source": name, "KB": round(os.path.getsize(os.path.join(folder, "model.tflite")) / 1024),
                         "generate s": round(t_gen, 2), "of 10 s budget": round(t_gen / BUDGET_S, 3),
                         "host build s/inf": round(t_host, 3), "simulated board s/inf": round(t_board, 1),
                         "instructions/inf": insns, "MACC": macc,
                         "instructions/MACC": round(insns / macc, 2) if macc else None,
                         "board / host build": round(t_board / t_host)})
    print(tabulate(rows, headers="keys", intfmt=","))
    os.makedirs(os.path.join(ROOT, "build", "bench"), exist_ok=True)
    with open(os.path.join(ROOT, "build", "bench", "published_sources.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
