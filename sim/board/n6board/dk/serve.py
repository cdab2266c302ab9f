"""ST's validation firmware as the simulated board's firmware (`--firmware`, N6_SIM_FIRMWARE):
which ELF, booting the twin to the firmware's protocol loop before the port is published (the
host's SYNC waits 0.5 s), then running it for the host. The programmer's reset (-rst, -hardRst on
the board's state) boots a new twin from the flash, as a real board restarts. Problems are one
line and exit status 2."""
import gc
import os
import sys
import time

from n6.errors import N6Error
from n6.flash.validation_firmware import firmware_path, variant_for
from n6.reloc.image import Image

from ..server import BoardReset
from .core import Stop
from .host_link import PtyLink
from .twin import DkTwin

INSTALL_FROM_ENVIRONMENT = "st"


def resolve_firmware(value, images, board, release, mode):
    """The ELF `value` names: an ELF file; an ST Edge AI Core install folder, or "st" for the
    install STEDGEAI_CORE_DIR names: the variant ST's flow would start for the flashed image
    (install mode, size, the board's baud rate)."""
    if value == INSTALL_FROM_ENVIRONMENT:
        value = os.environ.get("STEDGEAI_CORE_DIR", "")
        if not value:
            raise N6Error(None, "N6_SIM_FIRMWARE=st needs STEDGEAI_CORE_DIR, the ST Edge AI Core install whose "
                          "validation firmware to run", "set STEDGEAI_CORE_DIR, or name the firmware ELF")
    if os.path.isfile(value):
        return value
    if not os.path.isdir(value):
        raise N6Error(value, "no such firmware ELF or ST Edge AI Core install", "name ST's validation firmware "
                      "ELF or the install folder")
    data = next((d for d, _, _ in images if d[:4] == b"NBIN"), None)
    if data is None:
        raise N6Error(value, "no image in the simulated board's flash to choose ST's firmware variant for",
                      "flash a model first (scons flash), or name the firmware ELF")
    img = Image.parse(data)
    return firmware_path(value, variant_for(release, img, board, (mode or "COPY") == "COPY"))


def release_emulators():
    """Free the last boot's emulators before the next: reference cycles (hooks, devices) hold them
    until Python's collector runs, and unicorn's memory is not among what prompts it (each boot of
    a model with the DK's memory map held about 16 MB more, a round of 2 models ~ 33 MB)."""
    gc.collect()


def board_state(folder):
    """The simulated board's state (the programmer's flash and resets), or None without one."""
    if not folder:
        return None
    from programmer_sim.board_state import BoardState
    return BoardState(folder)


def _progress(text):
    print(text, file=sys.stderr, flush=True)      # stdout may carry the port's path


def serve(args, board, images, master, publish, say=_progress):
    """Boot ST's firmware on the twin, publish the port, serve the host; returns the exit status."""
    try:
        elf = resolve_firmware(args.firmware, images, board, args.release, args.mode)
        if args.image:
            raise N6Error(args.image, "ST's firmware boots from the simulated flash, not from an image file",
                          "flash the image (scons flash) and give --state")
        state = board_state(args.state)
        link, published = PtyLink(master), False
        while True:
            started = time.monotonic()
            done, watch = state.watch_resets() if state else (0, lambda: False)
            twin = DkTwin(elf, link, args.state or None, args.npu_model)
            twin.boot()
            cycles, hz = twin.core.clock.now(), twin.cpu_hz()
            say(f"TWIN     {twin.firmware.name}: protocol loop after {cycles:,} cycles ({cycles / hz * 1e3:.1f} ms "
                f"emulated at {hz / 1e6:.0f} MHz) in {time.monotonic() - started:.2f} s")
            if state:
                state.board_served(done)
            if not published:
                publish()
                published = True
            link.port.reset_requested = watch
            try:
                twin.serve(until=watch)
            except BoardReset:
                pass
            link.port.reset_requested = lambda: False
            link.port.drain()
            say("TWIN     reset through the programmer: the firmware starts again")
            twin = None
            release_emulators()
    except (N6Error, Stop) as e:
        print(f"n6board: {e}", file=sys.stderr, flush=True)
        return 2
    return 0
