#!/usr/bin/env bash
# Idempotent machine setup: the GNU Arm toolchain (Debian packages) and the pinned
# Python virtual environment in .venv. Re-running it only does what is missing.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV="$ROOT/.venv"
say() { printf '  %-8s %s\n' "$1" "$2"; }
# Two commands started at once (./n6 build next to ./n6 test) set up one after the other: the lock
# is this script itself, so there is no lock file to leave behind.
if command -v flock >/dev/null 2>&1; then exec 9<"${BASH_SOURCE[0]}"; flock 9; fi

need_apt=()
command -v arm-none-eabi-gcc >/dev/null 2>&1 || need_apt+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/include/string.h ] || need_apt+=(libnewlib-arm-none-eabi)
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)                # host build of generated code in tests
[ -f /usr/include/stdio.h ] || need_apt+=(libc6-dev)
command -v git >/dev/null 2>&1 || need_apt+=(git)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)   # tests render the profile page headless
command -v qemu-system-arm >/dev/null 2>&1 || need_apt+=(qemu-system-arm)   # tests judge the Helium executor by QEMU's Cortex-M55
# With a test bed (N6_REAL_STEDGEAI), tests build ST's loader for the host as a 32-bit program.
if [ -n "${N6_REAL_STEDGEAI:-}" ] && ! { command -v gcc >/dev/null 2>&1 && \
        echo 'int main(void){return 0;}' | gcc -m32 -x c - -o /dev/null >/dev/null 2>&1; }; then
    need_apt+=(gcc-multilib)
fi
if [ ${#need_apt[@]} -gt 0 ]; then
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    say APT "${need_apt[*]}"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
"$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
    echo "error: Python 3.11 or newer is required (found $("$PY" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
    exit 1
}
if [ ! -x "$VENV/bin/python" ]; then
    say VENV "$VENV"
    "$PY" -m venv "$VENV"
fi
want=$(sha256sum "$ROOT/requirements.txt" | cut -d' ' -f1)
have=$(cat "$VENV/.requirements.sha256" 2>/dev/null || true)
if [ "$want" != "$have" ]; then
    say PIP "requirements.txt"
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check -r "$ROOT/requirements.txt"
    echo "$want" > "$VENV/.requirements.sha256"
fi
