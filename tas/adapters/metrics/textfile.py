"""The `textfile:<dir>` source: one `<node>.prom` file per node, in Prometheus text format.

This is the metric source with no moving parts: the in-memory world, `tas set-health` and tests
write files (through `write_node_series`, the one writer), the view reads them. It is also the
format of node-exporter's textfile collector, so the same files can feed a real node-exporter;
`ssh_command` writes TAS demo's health series into a real node's (`tas set-health --ssh`):
nothing typed becomes shell code, the remote command is a fixed script with quoted arguments.
A sample without a timestamp was measured when its file was last written (the file's mtime).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import re
import shlex
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from tas.metrics.errors import TextFormatError
from tas.metrics.scrape import NodeCounters, read_values, wanted_series
from tas.metrics.source import Fetched, Sample
from tas.metrics.textformat import is_series_name, parse_text, series_name_of
from tas.types import MetricName, NodeName

SUFFIX = ".prom"
#: The writers' lock file; a dot file, so the source never reads it as a node.
LOCK_NAME = ".lock"


class TextfileSource:
    """Reads `<directory>/<node>.prom` for every node; a removed file removes its node."""

    kind = "textfile"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._counters: dict[NodeName, NodeCounters] = {}
        #: node -> (file identity, wanted names, values): skip re-reading unchanged files.
        self._read: dict[NodeName, tuple[tuple[int, int], frozenset[MetricName], _Values]] = {}

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        try:
            with os.scandir(self.directory) as entries:
                files = sorted(
                    (e.name, e.path)
                    for e in entries
                    if e.name.endswith(SUFFIX) and not e.name.startswith(".")
                )
        except OSError as error:
            return Fetched(errors={str(self.directory): f"cannot list: {error}"})
        errors: dict[str, str] = {}
        ok: set[str] = {str(self.directory)}
        nodes: dict[NodeName, _Values] = {}
        for file_name, file_path in files:
            node = NodeName(file_name[: -len(SUFFIX)])
            try:
                nodes[node] = self._read_node(node, Path(file_path), names)
                ok.add(f"node {node}")
            except (OSError, UnicodeDecodeError, TextFormatError) as error:
                errors[f"node {node}"] = f"{file_path}: {error}"
                # Keep the last good values; they go stale by their own timestamps.
                if node in self._read:
                    nodes[node] = self._read[node][2]
        for gone in self._read.keys() - nodes.keys():
            del self._read[gone]
            self._counters.pop(gone, None)
        columns = {
            name: {node: values[name] for node, values in nodes.items() if name in values}
            for name in names
        }
        return Fetched(columns=columns, errors=errors, ok=frozenset(ok))

    def _read_node(self, node: NodeName, path: Path, names: frozenset[MetricName]) -> _Values:
        stat = path.stat()
        identity = (stat.st_mtime_ns, stat.st_size)
        cached = self._read.get(node)
        if cached is not None and cached[0] == identity and cached[1] == names:
            return cached[2]
        samples = parse_text(path.read_text(encoding="utf-8"), names=wanted_series(names))
        counters = self._counters.setdefault(node, NodeCounters())
        values = read_values(samples, names=names, fetched_at=stat.st_mtime, counters=counters)
        self._read[node] = (identity, names, values)
        return values

    def close(self) -> None:
        pass


_Values = dict[MetricName, Sample]


def node_file(directory: Path, node: str) -> Path:
    """`<directory>/<node>.prom`; ValueError for a name that would be another path."""
    if not node or node.startswith(".") or "/" in node or "\0" in node:
        raise ValueError(f"node name {node!r} cannot be a file name")
    return directory / f"{node}{SUFFIX}"


def write_node_series(directory: Path, node: str, values: Mapping[str, float]) -> None:
    """Set some series in `<directory>/<node>.prom`, keeping the node's other series.

    The one writer of these files (`tas set-health`, the in-memory world's telemetry, tests).
    The file is replaced atomically (temp file + rename), so a reader sees the old file or the
    new one, never half of one. Writers read, change and replace the whole file, so they take
    the directory's advisory lock (`<directory>/.lock`; readers never take it): otherwise a
    health value written between another writer's read and its rename would be lost.
    """
    path = node_file(directory, node)
    for name, value in values.items():
        if not is_series_name(name):
            raise ValueError(f"metric name {name!r} is not a Prometheus series name")
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            raise ValueError(f"value {value!r} is not a finite number")
    with _locked(directory):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            lines = []
        kept = [line for line in lines if series_name_of(line) not in values]
        kept.extend(f"{name} {format_value(value)}" for name, value in values.items())
        fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{node}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write("\n".join(kept) + "\n")
            os.chmod(temp, 0o644)  # mkstemp makes 0600; a node-exporter may run as another user
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise


def format_value(value: float) -> str:
    """As the textfiles hold it: integers bare, other values in full (`repr`)."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**53 else repr(value)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


# ------------------------------------------------------------------ a real node's, over ssh

#: TAS's health-metric demo on a real node (deploy/health-metric-demo/set-health.sh): the
#: series it writes, into this file of node-exporter's textfile directory.
HEALTH_SERIES = "node_health_metric"
REMOTE_DIR = "/tmp/node-metrics"
REMOTE_FILE = "text.prom"

_USER = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\]")
_REMOTE_DIR = re.compile(r"/[A-Za-z0-9._/-]{0,255}")
#: Runs on the node; the directory and the value arrive as $1 and $2 (set-health.sh's script).
#: What writes the file: the directory and the value arrive as $1 and $2.
WRITE_SCRIPT = (
    'set -eu; umask 022; mkdir -p "$1"; tmp="$1/.text.prom.$$"; '
    f'printf "{HEALTH_SERIES} %s\\n" "$2" >"$tmp"; mv -f "$tmp" "$1/{REMOTE_FILE}"'
)
#: What sshd hands the remote shell: the write as root, through `sudo -n` for another user
#: (node-exporter's textfile directory is root's, mode 0755). `-n`: a sudo that would ask for a
#: password fails at once and says so, instead of hanging on a prompt nobody sees. The write
#: script arrives as $3, so nothing is quoted twice.
REMOTE_SCRIPT = (
    'set -eu; if [ "$(id -u)" = 0 ]; then exec sh -c "$3" set-health "$1" "$2"; fi; '
    'exec sudo -n sh -c "$3" set-health "$1" "$2"'
)


def ssh_command(
    destination: str, value: float, *, remote_dir: str = REMOTE_DIR, ssh: str = "ssh"
) -> list[str]:
    """The argv that writes `value` on `destination` ([USER@]HOST) with ssh; checks every part
    first (ValueError)."""
    user, _, host = destination.rpartition("@")
    if "@" in destination and not _USER.fullmatch(user):
        raise ValueError(f"not a user name: {user!r}")
    if not _HOST.fullmatch(host):
        raise ValueError(f"not a host name or address: {host!r}")
    if not _REMOTE_DIR.fullmatch(remote_dir) or ".." in remote_dir:
        raise ValueError(
            f"--remote-dir must be an absolute path of [A-Za-z0-9._/-] without '..', "
            f"got {remote_dir!r}"
        )
    if not math.isfinite(value):
        raise ValueError(f"VALUE must be a finite number, not {value!r}")
    remote = shlex.join(
        ["sh", "-c", REMOTE_SCRIPT, "set-health", remote_dir, format_value(value), WRITE_SCRIPT]
    )
    argv = [ssh, "-o", "BatchMode=yes", "-o", "ConnectTimeout=10"]
    if user:
        argv += ["-l", user]
    return [*argv, "--", host, remote]
