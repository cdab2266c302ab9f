"""ST's validation firmware on the DK twin: boot-to-READY time and one kws_mlp inference, per
firmware variant. Goals: boot to the protocol loop within 2 s, one invoke within 1 s.

    ./n6 scons flash MODEL=kws_mlp
    .venv/bin/python bench/twin.py <ST Edge AI Core install | validation firmware ELF> ...

For each firmware: the twin's boot in this process (set-up, then emulation to the banner's last
line: emulated cycles and host seconds), the simulated board process started on it until its
port is published (what `scons run` waits for), and one kws_mlp inference through our client
(host round trip, and the firmware's own time for it)."""
import glob
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "board"),
                os.path.join(ROOT, "sim", "programmer"), os.path.join(ROOT, "sim", "npu")]

from tabulate import tabulate  # noqa: E402

from n6.run.session import connect, simulated_board  # noqa: E402
from n6.stedgeai_install import VALIDATION_FIRMWARE_DIR  # noqa: E402
from n6board.dk.host_link import BufferLink  # noqa: E402
from n6board.dk.twin import DkTwin  # noqa: E402

BOARD = os.path.join(ROOT, "firmware", "boards", "stm32n6570-dk.toml")
STATE = os.environ.get("N6_SIM_BOARD") or os.path.join(ROOT, "build", "sim-board")
UART = ("copy", "xip", "copy-ext", "xip-ext", "copy-5529600", "xip-5529600")


def firmwares(args):
    """The ELFs named, or the UART variants of each install named."""
    out = []
    for arg in args:
        if os.path.isdir(arg):
            out += [f for v in UART for f in glob.glob(os.path.join(arg, VALIDATION_FIRMWARE_DIR,
                                                                    f"stm32n6570-dk-validation-reloc-{v}.elf"))]
        else:
            out.append(arg)
    return out


def boot_in_process(elf):
    """(set-up s, emulation s, emulated cycles, the firmware's CPU clock) to the protocol loop."""
    started = time.perf_counter()
    twin = DkTwin(elf, BufferLink(), STATE)
    ready = time.perf_counter()
    twin.boot()
    return ready - started, time.perf_counter() - ready, twin.core.clock.now(), twin.cpu_hz()


def board_and_invoke(elf):
    """(s until the board process publishes its port, s of one kws_mlp inference, the firmware's
    own ms for it)."""
    started = time.perf_counter()
    with simulated_board(BOARD, state=STATE, firmware=elf, mode="XIP" if "-xip" in elf else "COPY") as port:
        published = time.perf_counter() - started
        with connect(port) as (client, _):
            model = client.model("network")
            data = [bytes(t.nbytes) for t in model.inputs]
            client.run("network", data, first=True)              # the first run also sends the model's set-up
            t = time.perf_counter()
            result = client.run("network", data)
            invoke = time.perf_counter() - t
    return published, invoke, result.model_op.duration_ms


def main(argv):
    elfs = firmwares(argv)
    if not elfs:
        sys.exit(__doc__)
    rows = []
    for elf in elfs:
        setup, emulation, cycles, hz = boot_in_process(elf)
        published, invoke, firmware_ms = board_and_invoke(elf)
        rows.append([os.path.basename(elf), f"{setup:.2f}", f"{emulation:.2f}", f"{cycles / 1e6:.1f}",
                     f"{cycles / hz * 1e3:.0f}", f"{published:.2f}", f"{invoke * 1e3:.0f}",
                     f"{firmware_ms:.3f}"])
    print(tabulate(rows, headers=["firmware", "set-up s", "boot s", "Mcycles", "emulated ms", "port after s",
                                  "invoke ms", "firmware ms/inference"]))
    print("goals: port after ≤ 2 s, invoke ≤ 1000 ms")


if __name__ == "__main__":
    main(sys.argv[1:])
