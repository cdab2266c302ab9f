"""STM32_Programmer_CLI run on the machine its ST-LINK is plugged into (a labgrid exporter's host),
the way labgrid's own drivers run a tool for a remote USB resource: the argv behind the
resource's SSH command prefix (labgrid's sshmanager, one control connection per host), each file
the programmer reads put there with labgrid's ManagedFile (copied under
/var/cache/labgrid/<user>/, or used in place when that host sees the same file, over NFS), and
each read-back file it writes fetched back once it has run; ST-LINK_gdbserver started there, gdb
reaching it through a forwarded port. As for labgrid: key-based SSH to the host, and rsync on both
ends when the files are copied."""
import contextlib
import os
import shlex
import subprocess
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from ..errors import N6Error
from ..tool_runner import ToolResult, ToolRunner
from .cubeprogrammer import CubeProgrammer

if TYPE_CHECKING:                 # labgrid is imported when a step flashes on an exporter's host
    from labgrid.util.ssh import SSHConnection

T = TypeVar("T")

SIMULATED_BANNER = "(SIMULATED)"      # the simulated programmer says so in its banner, as on this machine
SSH_FIX = "set up key-based SSH from this machine to {host} (labgrid runs the exporter's tools over SSH)"


class ExporterProgrammer(CubeProgrammer):
    """What the programmer on the exporter says about itself decides the simulated label."""

    @property
    def simulated(self) -> bool:   # type: ignore[override]  # read-only here: the exporter's programmer says
        assert isinstance(self.runner, RemoteRunner)
        return self.runner.simulated


class RemoteRunner:
    """Runs programmer calls on `host` through `local` (n6.tool_runner.ToolRunner: log, timeout,
    dry run): the files after -d go there, those after -u come back."""

    def __init__(self, host: str, local: ToolRunner) -> None:
        self.host, self.local = host, local
        self.simulated = False

    @property
    def timeout(self) -> float:
        return self.local.timeout

    def run(self, argv: Sequence[str], on_output: Callable[[str], object] | None = None,
            timeout: float | None = None) -> ToolResult:
        if self.local.dry_run:
            return self.local.run(["ssh", self.host, "--"] + list(argv), on_output, timeout)
        from labgrid.resource.common import NetworkResource
        from labgrid.util.managedfile import ManagedFile
        resource = NetworkResource(target=None, name=None, host=self.host)
        conn = self._ssh(_connection, self.host)
        fetch: list[tuple[str, str]]      # (there, here) of each file the programmer writes
        remote, fetch = list(argv), []
        folder = None
        for i, arg in enumerate(argv):
            if i >= 1 and argv[i - 1] == "-d":           # -d <file> <address>: a file the programmer reads
                managed = ManagedFile(arg, resource)
                self._ssh(managed.sync_to_resource)
                remote[i] = managed.get_remote_path()
            elif i >= 3 and argv[i - 3] == "-u":         # -u <address> <size> <file>: a file it writes
                folder = folder or self._ssh(conn.run_check, "mktemp -d")[0].strip()
                remote[i] = f"{folder}/{len(fetch)}-{os.path.basename(arg)}"
                fetch.append((remote[i], arg))
        try:
            result = self.local.run(resource.wrap_command(remote), on_output, timeout)
            self.simulated |= SIMULATED_BANNER in result.output
            if result.returncode == 0:
                for there, here in fetch:
                    self._ssh(conn.get_file, there, here)
            return result
        finally:
            if folder:
                conn.run(f"rm -rf {shlex.quote(folder)}")

    def _ssh(self, call: Callable[..., T], *args: object) -> T:
        return over_ssh(self.host, call, *args)


@contextlib.contextmanager
def on_exporter(host: str, argv: Sequence[str], port: int) -> Iterator[tuple[list[str], int]]:
    """(`argv` behind labgrid's SSH prefix for `host`, a port here forwarded over that connection
    to `port` there): a server started on the exporter's host, as labgrid's drivers start their
    tools, and reached from here (ST-LINK_gdbserver there, gdb here)."""
    from labgrid.resource.common import NetworkResource
    conn = over_ssh(host, _connection, host)
    local = over_ssh(host, conn.add_port_forward, "localhost", port)
    try:
        yield NetworkResource(target=None, name=None, host=host).wrap_command(list(argv)), local
    finally:
        over_ssh(host, conn.remove_port_forward, "localhost", port)


def over_ssh(host: str, call: Callable[..., T], *args: object) -> T:
    """`call(*args)`, which reaches `host` over labgrid's SSH; its failures as one line."""
    from labgrid.driver.exception import ExecutionError
    from labgrid.util.managedfile import ManagedFileError
    try:
        return call(*args)
    except (ExecutionError, ManagedFileError, subprocess.CalledProcessError, OSError) as e:
        problem = " ".join(str(getattr(e, "msg", None) or e).split())
        raise N6Error(None, f"the programmer's host {host}: {problem}", SSH_FIX.format(host=host)) from None


def _connection(host: str) -> "SSHConnection":
    from labgrid.util.ssh import sshmanager
    return sshmanager.get(host)
