"""ST's client waits at most 100 ms (a fixed read timeout in its host code) for each tensor message
that follows an operator's message in a per-layer run. This measures, on the DK twin running ST's
validation firmware, every silence of the board while it sends unasked (no host byte in between):
host seconds, the twin thread's CPU seconds in it (emulation work; the rest is time the host did
not run the twin) and emulated cycles, with N busy host loops beside it.

    ./n6 scons flash MODEL=digits_mlp        (or N6_SIM_BOARD=<folder> for another board state)
    .venv/bin/python bench/st_client_window.py --firmware <ST's validation ELF> --st-client <st_ai_runner.sh>
                                               [--invokes 100] [--busy 0,2] [--json F]

The twin runs in a thread of this process behind a raw pty as the simulated board's; ST's client
(per layer, alternately with data) is the other end."""
import argparse
from collections import Counter
import contextlib
import json
import multiprocessing
import os
import subprocess
import sys
import threading
import time
import tty

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "site_scons"), os.path.join(ROOT, "sim", "board"),
                os.path.join(ROOT, "sim", "programmer"), os.path.join(ROOT, "sim", "npu")]

from tabulate import tabulate  # noqa: E402

from n6.aivalidation.framing import SYNC_BYTE, Framing  # noqa: E402
from n6.aivalidation.n6_aivalidation_pb2 import respMsg  # noqa: E402
from n6.build_layout import DEFAULT_BUILD_DIR, sim_board_state  # noqa: E402
from n6board.dk.host_link import PtyLink  # noqa: E402
from n6board.dk.twin import DkTwin  # noqa: E402
from n6board.server import BoardReset  # noqa: E402
from soak import ST_MIXED, ST_PER_LAYER  # noqa: E402

STATE = sim_board_state(os.path.join(ROOT, DEFAULT_BUILD_DIR))
ST_WINDOW_S = 0.1


class TimedLink(PtyLink):
    """The pty link, timing each silence between two sends with no host byte received between,
    and cutting what the board sends (from the host's first byte) into its messages, so that each
    silence is known by the kind of message it delays."""

    def __init__(self, fd):
        super().__init__(fd)
        self.clock, self.last = None, None     # clock: the twin's (emulated cycles)
        self.gaps = []           # (host s, CPU s, emulated cycles, index of the message it delays)
        self.kinds, self.framing, self.stream, self.message = [], Framing("2byte"), None, bytearray()

    def receive(self):
        return self._heard(super().receive())

    def wait_for_bytes(self):
        return self._heard(super().wait_for_bytes())

    def _heard(self, data):
        """Host bytes end the board's silence; the first ones start its messages (after the banner)."""
        if data:
            self.last = None
            if self.stream is None:
                self.stream = bytearray()
        return data

    def send(self, data):
        now = (time.monotonic(), time.thread_time(), self.clock.now())
        if self.last:
            self.gaps.append(tuple(b - a for a, b in zip(self.last, now)) + (len(self.kinds),))
        super().send(data)
        self.last = (time.monotonic(), time.thread_time(), self.clock.now())
        if self.stream is not None:
            self._cut(data)

    def _cut(self, data):
        self.stream += data
        size = self.framing.packet_size
        while True:
            # the board's go-ahead for a host message's next packet: never a header's first byte (EOM and a length
            # under 0x80 00)
            self.stream = self.stream.lstrip(bytes((SYNC_BYTE,)))
            if len(self.stream) < size:
                return
            eom, n = self.framing.unpack_header(self.stream[:2])
            self.message += self.stream[2:2 + n]
            del self.stream[:size]
            if eom:
                resp = respMsg()
                resp.ParseFromString(bytes(self.message))
                self.kinds.append(resp.WhichOneof("payload"))
                self.message.clear()

    def window_gaps(self):
        """The silences that delay a tensor message (what ST's client waits for within 100 ms)."""
        return [g[:3] for g in self.gaps if g[3] < len(self.kinds) and self.kinds[g[3]] == "tensor"]


def _busy():
    while True:
        pass


@contextlib.contextmanager
def twin_on_pty(firmware, state=STATE):
    """ST's firmware booted on a twin serving a raw pty from a thread: (its TimedLink, the path
    the host opens). On leaving, the thread is stopped as a programmer's reset stops a board (the
    port's reset_requested(): a wait for the host ends with nothing and the run at its next slice,
    or a read between slices raises BoardReset) and joined, and only then are both ends of the pty
    closed: no thread left reading a closed descriptor, nor one reused."""
    master, slave = os.openpty()
    try:
        tty.setraw(master)
        tty.setraw(slave)
        stop = threading.Event()
        link = TimedLink(master)
        link.port.reset_requested = stop.is_set
        twin = DkTwin(firmware, link, state)
        link.clock = twin.core.clock
        twin.boot()
        thread = threading.Thread(target=_serve, args=(twin, stop.is_set))
        thread.start()
        try:
            yield link, os.ttyname(slave)
        finally:
            stop.set()
            thread.join()
    finally:
        os.close(slave)
        os.close(master)


def _serve(twin, stopped):
    with contextlib.suppress(BoardReset):
        twin.serve(until=stopped)


def measure(firmware, st_client, invokes, busy):
    """One session of ST's client on a fresh twin with `busy` host loops running."""
    loops = [multiprocessing.Process(target=_busy, daemon=True) for _ in range(busy)]
    for p in loops:
        p.start()
    try:
        with twin_on_pty(firmware) as (link, port):
            started = time.monotonic()
            proc = subprocess.run([st_client, "-c", ST_MIXED, port, str(invokes), "5", json.dumps(ST_PER_LAYER)],
                                  capture_output=True, text=True, cwd=os.path.join(ROOT, "build"))
            seconds = time.monotonic() - started
    finally:
        for p in loops:
            p.terminate()
            p.join()
    gaps = sorted(link.window_gaps())
    worst = gaps[-1] if gaps else (0, 0, 0)
    return {"busy_loops": busy, "invokes": invokes, "seconds": round(seconds, 1),
            "client_error": (proc.stderr.strip().splitlines() or [""])[-1] if proc.returncode else "",
            "messages": dict(Counter(link.kinds)), "silences": len(gaps),
            "over_window": sum(g[0] > ST_WINDOW_S for g in gaps),
            "p99_ms": round(gaps[int(len(gaps) * 0.99)][0] * 1e3, 2) if gaps else 0,
            "worst_ms": round(worst[0] * 1e3, 2), "worst_cpu_ms": round(worst[1] * 1e3, 2),
            "worst_cycles": worst[2], "most_cpu_ms": round(max((g[1] for g in gaps), default=0) * 1e3, 2),
            "most_cycles": max((g[2] for g in gaps), default=0)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="st_client_window", description=__doc__.splitlines()[0])
    ap.add_argument("--firmware", required=True, help="ST's validation firmware ELF")
    ap.add_argument("--st-client", required=True, help="ST's st_ai_runner.sh")
    ap.add_argument("--invokes", type=int, default=100)
    ap.add_argument("--busy", default="0,2", help="busy host loops per session, comma-separated")
    ap.add_argument("--json", default=os.path.join(ROOT, "build", "bench", "st_client_window.json"))
    args = ap.parse_args(argv)
    rows = [measure(args.firmware, args.st_client, args.invokes, int(n)) for n in args.busy.split(",")]
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump({"window_ms": ST_WINDOW_S * 1e3, "rows": rows}, f, indent=1)
    print(tabulate([[r["busy_loops"], r["invokes"], r["client_error"] or "none", r["silences"], r["over_window"],
                     r["p99_ms"], f'{r["worst_ms"]} ({r["worst_cpu_ms"]} CPU, {r["worst_cycles"]:,} cycles)',
                     f'{r["most_cpu_ms"]} ({r["most_cycles"]:,} cycles)', r["seconds"]] for r in rows],
                   headers=["busy loops", "invokes", "client error", "silences", "> 100 ms", "p99 ms",
                            "longest ms", "most CPU ms", "s"]))
    print(f"JSON: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
