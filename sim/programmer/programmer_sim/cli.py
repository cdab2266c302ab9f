"""Simulated `STM32_Programmer_CLI`: the arguments, output and exit codes of the real tool for the
options n6 uses, programming the board state in N6_SIM_BOARD with the rules of the real NOR flash
(64 KB erase sectors, erase before program, the boot area writable only in development boot).
Without N6_SIM_BOARD no board is attached: --version and --help answer as always, --list finds no
probe and a connect fails.

Failures on demand: N6_SIM_PROGRAMMER_FAIL = one of FAILURES (comma list allowed).
Speed: N6_SIM_PROGRAMMER_RATE bytes/s (0: instant), so a test can interrupt a download."""
import json
import os
import sys
import time

from .board_state import BoardState, FlashError

VERSION = "2.21.0"
PROBE_FW = "V3J16M7"
FAILURES = ("no-probe", "not-dev-boot", "no-loader", "verify", "probe-lost", "hotplug", "busy")
BAR = 50
CONNECT_MODES = {"hotplug": "Hot Plug", "ur": "Under Reset", "powerdown": "Power Down"}   # the banner's names
RESET_TIMEOUT_S = 60          # a board process reboots its firmware (the twin boots ST's in about a second)
USAGE = """Usage :
STM32_Programmer_CLI [command_1] [Arguments_1][[command_2] [Arguments_2]...]

Generic commands (the ones this simulation knows):

-?, -h, --help           : Show this help
--version, -version      : Displays the tool's version
-l,     --list           : List all available communication interfaces
-c,     --connect        : Establish connection to the device (port=SWD mode= freq= ap= sn=)
-el,    --extload        : Select a custom external memory-loader
-d,     --download       : Download the content of a file into device memory
-v,     --verify         : Verify if the programming operation is achieved successfully
-u,     --upload         : Upload the device memory content to a .bin file
-e,     --erase          : Erase memory pages/sectors devices
-q,     --quietMode      : Enable quiet mode. No progress bar displayed
-rst                     : Reset system
-hardRst                 : Hardware reset
"""


class CliError(Exception):
    """Ends the call: the lines are printed as the real tool prints them, exit code 1."""

    def __init__(self, *lines):
        super().__init__(lines[0])
        self.lines = lines


def _int(text):
    try:
        return int(text, 0)
    except ValueError:
        raise CliError(f"Error: Wrong address or size: {text}") from None


def parse(argv):
    """argv → list of (command, args) in order, plus flags; unknown options fail like the real tool."""
    cmds, i = [], 0
    takes = {"-c": None, "--connect": None, "-el": 1, "--extload": 1, "-d": None, "--download": None,
             "-u": 3, "--upload": 3, "-e": None, "--erase": None}
    names = {"--connect": "-c", "--extload": "-el", "--download": "-d", "--upload": "-u", "--erase": "-e",
             "--verify": "-v", "--list": "-l", "--version": "--version", "-version": "--version",
             "--quietMode": "-q", "-hardRst": "-hardRst", "-rst": "-rst", "-v": "-v", "-l": "-l", "-q": "-q",
             "-h": "-h", "--help": "-h", "-?": "-h"}
    while i < len(argv):
        opt = argv[i]
        name = names.get(opt, opt)
        if name in ("-v", "-l", "--version", "-h", "-q", "-hardRst", "-rst"):
            if name == "-l" and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                i += 1            # `--list st-link`
            cmds.append((name, []))
            i += 1
            continue
        if name not in takes:
            raise CliError(f"Error: Unknown option: {opt}")
        n = takes[name]
        if n is None:             # variable: up to the next option
            j = i + 1
            while j < len(argv) and not (argv[j].startswith("-") and not argv[j][1:2].isdigit()):
                j += 1
            args = argv[i + 1:j]
        else:
            args = argv[i + 1:i + 1 + n]
            if len(args) < n:
                raise CliError(f"Error: Missing argument for {opt}")
            j = i + 1 + n
        cmds.append((name, args))
        i = j
    return cmds


class Session:
    def __init__(self, state, failures, rate, out):
        self.state, self.failures, self.rate, self.out = state, failures, rate, out
        self.quiet = False
        self.loader = None          # parsed .stldr
        self.connected = False
        self.connect_mode = None
        self.last_download = None   # (address, data) for -v

    def say(self, text=""):
        self.out.write(text + "\n")
        self.out.flush()

    def banner(self):
        self.say("      -------------------------------------------------------------------")
        self.say(f"                        STM32CubeProgrammer v{VERSION}   (SIMULATED)")
        self.say("      -------------------------------------------------------------------")
        self.say()

    # -- commands --------------------------------------------------------------------------------
    def list_probes(self):
        if self.state is None or "no-probe" in self.failures:
            self.say("===== STLink Interface =====\nError: No ST-Link detected!")
            return
        probe = self.state.probe()
        self.say("===== STLink Interface =====\n\n-------- Connected ST-LINK Probes List --------\n")
        self.say(f"ST-Link Probe 0 :\n   ST-LINK SN  : {probe['serial']}\n   ST-LINK FW  : {PROBE_FW}\n"
                 "   Access Port Number  : 2\n   Board Name  : STM32N6570-DK (SIMULATED)")
        self.say("-----------------------------------------------")

    def connect(self, args):
        opts = {}
        for a in args:
            key, _, value = a.partition("=")
            opts[key.lower()] = value
        if opts.get("port", "").upper() != "SWD":
            raise CliError(f"Error: port {opts.get('port')!r} is not supported by this simulation (use port=SWD)")
        mode = opts.get("mode", "normal").lower()
        if mode not in ("hotplug", "ur", "powerdown", "normal", "hwrstpulse"):
            raise CliError(f"Error: Wrong connect mode: {opts.get('mode')}")
        if self.state is None:
            raise CliError("Error: No debug probe detected.", "(simulated: no board attached: N6_SIM_BOARD is not set)")
        if "no-probe" in self.failures:
            raise CliError("Error: No debug probe detected.")
        probe = self.state.probe()
        if "sn" in opts and opts["sn"] != probe["serial"]:
            raise CliError(f"Error: No ST-LINK with serial number {opts['sn']} detected.",
                           "Error: No debug probe detected.")
        if "busy" in self.failures:
            raise CliError("Error in initializing ST-LINK device. Reason: Unknown. "
                           "Please check power and cabling to target.", "Target unknown error 32")
        self.say(f"ST-LINK SN  : {probe['serial']}\nST-LINK FW  : {PROBE_FW}\nBoard       : STM32N6570-DK\n"
                 f"Voltage     : 3.29V\nSWD freq    : {opts.get('freq', '8000')} KHz\n"
                 f"Connect mode: {CONNECT_MODES.get(mode, 'Normal')}\n"
                 "Reset mode  : Hardware reset")
        if mode == "powerdown":     # the reset step of ST's flows: the core is not reachable afterwards
            raise CliError("Error: Unable to get core ID",
                           f"Error: Cannot connect to access port {opts.get('ap', '0')}! If you are trying to connect "
                           "to a device with TrustZone enabled please try to connect with HotPlug mode.")
        if "not-dev-boot" in self.failures:
            raise CliError("Error: No STM32 target found! If your product embeds Debug Authentication, please "
                           "perform a discovery using Debug Authentication")
        if mode == "hotplug" and "hotplug" in self.failures:
            raise CliError("Error: Unable to get core ID",
                           f"Error: Cannot connect to access port {opts.get('ap', '0')}! If you are trying to connect "
                           "to a device with TrustZone enabled please try to connect with HotPlug mode.")
        if opts.get("ap", "0") != "1":
            raise CliError(f"Error: Cannot connect to access port {opts.get('ap', '0')}!")
        self.say("Device ID   : 0x486\nRevision ID : Rev B\nDevice name : STM32N6xx\nDevice type : MCU\n"
                 "Device CPU  : Cortex-M55\n")
        self.connected, self.connect_mode = True, mode

    def extload(self, path):
        self.need_connection()
        if "no-loader" in self.failures or not os.path.isfile(path):
            self.loader = {"missing": path}
            return
        try:
            with open(path, encoding="utf-8") as f:
                self.loader = json.load(f)
        except (OSError, ValueError):
            self.loader = {"missing": path}
            return
        self.say(f"Successful Loading of the external loader {os.path.basename(path)}")

    def reset(self, kind):
        """-rst / -hardRst: the board (and a board process serving its state) restarts its firmware."""
        self.need_connection()
        count = self.state.request_reset(kind)
        try:
            self.state.wait_for_board(count, RESET_TIMEOUT_S)
        except TimeoutError as e:
            raise CliError(f"Error: {e}") from None
        self.say("MCU Reset\n" if kind == "software" else "Hardware reset is performed")

    def need_connection(self):
        if not self.connected:
            raise CliError("Error: Target not connected. Use -c to connect first")

    def in_flash(self, address, size):
        ldr = self.loader
        if ldr is None:
            raise CliError(f"Error: Address 0x{address:08X} is not in a known memory: use -el with the external loader")
        if "missing" in ldr:
            raise CliError("Error: flash loader cannot be loaded.", "Error: failed to download  Sector[0]",
                           "Error: failed to download the File")
        if address < ldr["base"] or address + size > ldr["base"] + ldr["size"]:
            raise CliError(f"Error: Address 0x{address:08X}-0x{address + size - 1:08X} is outside the external flash")

    def progress(self, title, n_bytes, on_chunk=None):
        """The real tool's bar (50 blocks and a percentage, redrawn with CR); `on_chunk(fraction)`
        does the work of each step."""
        if not self.quiet:
            self.out.write(f"{title}\n")
        steps = max(1, min(BAR, n_bytes // 4096))
        for k in range(1, steps + 1):
            if on_chunk:
                on_chunk(k / steps)
            if self.rate:
                time.sleep(n_bytes / steps / self.rate)
            if not self.quiet:
                self.out.write("\r" + "\u2588" * (BAR * k // steps) + f" {100 * k // steps}%")
                self.out.flush()
        if not self.quiet:
            self.out.write("\n")

    def download(self, args):
        self.need_connection()
        if not args:
            raise CliError("Error: Missing file path for download")
        path = args[0]
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            raise CliError(f"Error: Cannot open file: {path}") from None
        if not path.lower().endswith(".bin"):
            raise CliError(f"Error: {path}: only .bin files are supported by this simulation")
        if len(args) < 2:
            raise CliError("Error: Address is required for binary files")
        address = _int(args[1])
        self.say(f"\nMemory Programming ...\nOpening and parsing file: {os.path.basename(path)}\n"
                 f"  File          : {os.path.basename(path)}\n  Size          : {len(data) / 1024:.2f} KB \n"
                 f"  Address       : 0x{address:08X} \n")
        self.in_flash(address, len(data))
        sector = self.loader["sector_size"]
        first, last = address // sector, (address + max(len(data), 1) - 1) // sector
        base = self.loader["base"] // sector
        self.say(f"Erasing memory corresponding to segment 0:\nErasing external memory sectors "
                 f"[{' '.join(str(s - base) for s in range(first, last + 1))}]")
        start = time.monotonic()
        boot = self.loader.get("boot_area", [0, 0])
        sectors = list(range(first * sector, (last + 1) * sector, sector))
        if self.state.probe()["boot"] != "development" and any(boot[0] <= s < boot[1] for s in sectors):
            raise CliError("Error: Sector erase operation has failed at least for one of the existing specified "
                           "sectors.Please verify flash memory protection.")
        lost_after = len(sectors) // 2 if "probe-lost" in self.failures else None
        written = []

        def work(fraction):
            want = int(round(fraction * len(sectors)))
            while len(written) < want:
                k = len(written)
                if lost_after is not None and k == lost_after:
                    raise CliError("Error: ST-LINK error (DEV_USB_COMM_ERR)", "Error: failed to download the File")
                s = sectors[k]
                self.state.erase_sector(s)
                lo, hi = max(s, address), min(s + sector, address + len(data))
                self.state.program(lo, data[lo - address:hi - address])
                written.append(s)
        self.progress("Download in Progress:", len(data), work)
        self.say("File download complete")
        self.say(f"Time elapsed during download operation: {_elapsed(time.monotonic() - start)}")
        self.last_download = (address, data)

    def verify(self):
        if self.last_download is None:
            raise CliError("Error: Nothing to verify: -v follows a download")
        address, data = self.last_download
        if "verify" in self.failures:     # the flash holds other bytes than written
            self.state.erase_sector(self.state.sector_of(address))
        self.say("\nVerifying ...\n")
        self.progress("Read progress:", len(data))
        board = self.state.read(address, len(data))
        if board != data:
            at = next(i for i in range(len(data)) if board[i] != data[i])
            raise CliError(f"Error: Data mismatch found at address  0x{address + at:08X} (byte = 0x{board[at]:02X} "
                           f"instead of 0x{data[at]:02X})", "Error: Download verification failed")
        self.say("Download verified successfully \n")

    def upload(self, args):
        self.need_connection()
        address, size, path = _int(args[0]), _int(args[1]), args[2]
        self.in_flash(address, size)
        self.say(f"Reading data...\n  Address       : 0x{address:08X}\n  Size          : {size} Bytes\n")
        self.progress("Read progress:", size)
        data = self.state.read(address, size)
        with open(path, "wb") as f:
            f.write(data)
        self.say(f"Data read successfully\nThe Data read from the address 0x{address:08X} with size of {size} Bytes "
                 f"is uploaded to the file {path}")

    def erase(self, args):
        self.need_connection()
        if not args or args[0].lower() == "all":
            raise CliError("Error: Mass erase operation failed. Please verify flash protection")
        sector = self.loader and self.loader.get("sector_size")
        self.in_flash(self.loader and self.loader.get("base", 0) or 0, 1)
        base = self.loader["base"]
        nums = [int(a.strip("[]")) for a in args if a.strip("[]")]
        boot = self.loader.get("boot_area", [0, 0])
        for n in nums:
            s = base + n * sector
            if self.state.probe()["boot"] != "development" and boot[0] <= s < boot[1]:
                raise CliError("Error: Sector erase operation has failed at least for one of the existing specified "
                               "sectors.Please verify flash memory protection.")
            self.state.erase_sector(s)
        self.say(f"Erase external memory sectors [{' '.join(map(str, nums))}]\nSector erase finished")


def _elapsed(seconds):
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{int(h):02d}:{int(m):02d}:{s:06.3f}"


def main(argv, environ=os.environ, out=sys.stdout):
    failures = {f for f in environ.get("N6_SIM_PROGRAMMER_FAIL", "").split(",") if f}
    unknown = failures - set(FAILURES)
    if unknown:
        out.write(f"Error: N6_SIM_PROGRAMMER_FAIL: unknown failure {sorted(unknown)[0]} "
                  f"(known: {', '.join(FAILURES)})\n")
        return 1
    state = BoardState.from_env(environ)
    session = Session(state, failures, float(environ.get("N6_SIM_PROGRAMMER_RATE", "0") or 0), out)
    try:
        if state is not None:
            state.log("call", argv=argv)
        cmds = parse(argv)
        if any(c == "--version" for c, _ in cmds):
            out.write(f"STM32CubeProgrammer version: {VERSION} (SIMULATED)\n")
            return 0
        session.quiet = any(c == "-q" for c, _ in cmds)
        session.banner()
        if not cmds or any(c == "-h" for c, _ in cmds):
            out.write(USAGE)
            return 0
        for cmd, args in cmds:
            if cmd == "-l":
                session.list_probes()
            elif cmd == "-c":
                session.connect(args)
            elif cmd == "-el":
                session.extload(args[0])
            elif cmd == "-d":
                session.download(args)
            elif cmd == "-v":
                session.verify()
            elif cmd == "-u":
                session.upload(args)
            elif cmd == "-e":
                session.erase(args)
            elif cmd in ("-hardRst", "-rst"):
                session.reset("software" if cmd == "-rst" else "hardware")
        return 0
    except CliError as e:
        out.write("\n" + "\n".join(e.lines) + "\n")
        out.flush()
        return 1
    except FlashError as e:
        out.write(f"\nError: {e}\n")
        return 1
    except OSError as e:      # the state folder is read-only, or its path runs through a file
        where = f"the simulated board's state in {state.root}" if state and str(e.filename or "").startswith(
            state.root) else e.filename
        out.write(f"\nError: cannot write {where}: {e.strerror}\n")
        return 1
