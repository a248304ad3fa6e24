"""The wiring every command shares, written once.

The extender, the policy controller and the descheduler are different loops around the same
parts, so their command lines agree by construction:

- **options**: `--kubeconfig/--context`, `--metrics/--metrics-config/--metric-max-age`,
  `--policies`, `--sync-period`, `--log-level` mean the same everywhere, with one duration
  grammar (`tas.durations`: Go's, plus bare seconds) and case-insensitive log levels;
- **Kubernetes**: one `ApiClient` per process, loaded in one order (`tas.cluster.kubeconfig`),
  and caches of only the resources the component reads (its RBAC grants nothing more);
- **policies**: always a `PolicyStore`, fed by a file watcher (`--policies`) or by the
  cluster's TASPolicy objects once the caches have synced (an empty first read would look like
  "every policy was deleted");
- **metrics**: the view fetches what the policies (and the descheduler's own configuration)
  name, told one way (`tas.policies.wanted`);
- **the process** (`Lifetime`): SIGTERM/SIGINT set one stop event; background threads and
  cleanups are stopped within one shutdown budget, so a pod exits long before Kubernetes'
  30 s SIGKILL and a leader's Lease is released on the way out.

Startup problems are `SetupError`s: the command prints one line and exits 2, never a traceback.

Each command reads its `argparse.Namespace` once, in its own module, into a frozen settings
object built from the shared pieces here (`KubeSettings`, `MetricsSettings`; `read_settings`
fills every other field from the argument of its name), and passes that on; the helpers below
take those pieces, never the Namespace (kopf's `OperatorSettings`,
kopf/_cogs/configs/configuration.py, is the model: one typed object instead of loose options).
"""

from __future__ import annotations

import argparse
import dataclasses
import errno
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from prometheus_client import CollectorRegistry

from tas.cron import CronError, CronSchedule
from tas.durations import DurationError, parse_duration
from tas.policies.files import PolicyFileWatcher, into_store
from tas.policies.store import PolicyStore
from tas_cli.tas_compat import Component, TasFlagError, translate_tas_flags

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from tas.cluster.interface import ObservableCluster, ResourceKind
    from tas.cluster.kubernetes import KubernetesCluster
    from tas.metrics.pod_usage import PrometheusPodUsage
    from tas.metrics.refreshing import RefreshingMetricView
    from tas.metrics.resource_metrics import ResourceMetricsPodUsage

log = logging.getLogger("tas")

S = TypeVar("S")
D = TypeVar("D", bound="DataclassInstance")

LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
METRICS_HELP = (
    "metric source: prometheus:URL, custom-metrics, node-exporter:NODE=URL,..., textfile:DIR"
)
#: How long startup waits between checks of the stop event while caches fill.
_POLL_SECONDS = 0.2
CACHE_SYNC_WARN_SECONDS = 60
FILE_POLL_SECONDS = 1.0


class SetupError(Exception):
    """A startup problem the user can fix: printed as one line, exit code 2."""


def print_problems(headline: str, problems: Iterable[str]) -> None:
    """`headline`, then each problem indented under it, on stderr: every problem the user has
    to fix, at once, not only the first."""
    print(headline, file=sys.stderr)
    for problem in problems:
        print(f"  {problem}", file=sys.stderr)


# ------------------------------------------------------------------ argument types


def duration(text: str) -> float:
    """A positive duration (`2s`, `500ms`, `1m30s`, or bare seconds)."""
    try:
        seconds = parse_duration(text)
    except DurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be positive")
    return seconds


def duration_or_zero(text: str) -> float:
    """A duration where 0 means "not at all" (e.g. run once)."""
    try:
        return parse_duration(text)
    except DurationError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def cron_schedule(text: str) -> CronSchedule | None:
    """A five-field cron expression; empty means none."""
    if not text.strip():
        return None
    try:
        return CronSchedule.parse(text.strip())
    except CronError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


def listen_address(text: str) -> tuple[str, int]:
    """`HOST:PORT`, `[IPv6]:PORT`, or `:PORT` for every interface."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT, e.g. 127.0.0.1:8081")
    return host.strip("[]") or "0.0.0.0", int(port)


def count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0")
    return int(text)


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def share(text: str) -> float:
    """A fraction in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a share between 0 (excluded) and 1")
    return value


def log_level(text: str) -> str:
    lowered = text.lower()
    if lowered not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"{text!r} is not one of {', '.join(LOG_LEVELS)}")
    return lowered


# ------------------------------------------------------------------ a running `make run`

#: Where `tas run` (`make run`) serves its dashboard unless told otherwise (`--dashboard`).
DEMO_DASHBOARD = ("127.0.0.1", 8080)
DEMO_URL = f"http://{DEMO_DASHBOARD[0]}:{DEMO_DASHBOARD[1]}"
#: The environment variable that names the dashboard of a `make run` elsewhere.
DEMO_URL_VARIABLE = "TAS_DEMO_URL"


def demo_url(given: str | None = None) -> str:
    """The dashboard of the running `make run` that `tas demo`, `tas set-health` and
    `tas explain --demo` talk to: `given` (their --url), else $TAS_DEMO_URL, else `tas run`'s
    own default."""
    return (given or os.environ.get(DEMO_URL_VARIABLE) or DEMO_URL).rstrip("/")


# ------------------------------------------------------------------ settings


def read_settings(cls: type[D], args: argparse.Namespace, **given: Any) -> D:
    """A command's frozen settings (`cls`, a dataclass) read from `args`: each field not
    `given` is the shared piece of its name (`kube`, `metrics`, `tas_flag_notices`: `_SHARED`)
    or else the argument of its name (`--lease-name` is `lease_name`). An argument missing for
    a field is an AttributeError at once, never a silent default."""
    read = {
        f.name: _SHARED[f.name](args) if f.name in _SHARED else getattr(args, f.name)
        for f in dataclasses.fields(cls)
        if f.name not in given
    }
    return cls(**read, **given)


@dataclass(frozen=True)
class KubeSettings:
    """`--kubeconfig`, `--context`: where the process's one Kubernetes connection goes."""

    kubeconfig: Path | None = None
    context: str | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> KubeSettings:
        return read_settings(cls, args)


@dataclass(frozen=True)
class MetricsSettings:
    """`--metrics`, `--metrics-config`, `--metric-max-age` and `--sync-period`."""

    #: The `--metrics` spec; None when the command runs without one (the descheduler).
    source: str | None
    config_file: Path | None = None
    max_age: float | None = None
    sync_period: float = 2.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> MetricsSettings:
        return cls(
            source=args.metrics,
            config_file=args.metrics_config,
            max_age=args.metric_max_age,
            sync_period=args.sync_period,
        )

    @property
    def prometheus_url(self) -> str | None:
        """The URL of `--metrics prometheus:URL`; None for any other source."""
        source = self.source or ""
        return source.removeprefix("prometheus:") if source.startswith("prometheus:") else None


def tas_flag_notices(args: argparse.Namespace) -> tuple[str, ...]:
    """The deprecation notices `parse_with_tas_flags` left on `args` (none without it)."""
    return tuple(getattr(args, "tas_flag_notices", ()))


#: The pieces every command that has them reads the same way (`read_settings`), by field name.
_SHARED: dict[str, Callable[[argparse.Namespace], object]] = {
    "kube": KubeSettings.from_args,
    "metrics": MetricsSettings.from_args,
    "tas_flag_notices": tas_flag_notices,
}


# ------------------------------------------------------------------ shared options


def add_kubernetes_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        type=Path,
        metavar="FILE",
        help="kubeconfig file (default: in-cluster configuration, else ~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context")


def add_metric_arguments(
    parser: argparse.ArgumentParser, *, required: bool, absent_means: str = ""
) -> None:
    help_text = f"{METRICS_HELP} ({absent_means})" if absent_means else METRICS_HELP
    parser.add_argument("--metrics", required=required, metavar="SOURCE", help=help_text)
    parser.add_argument(
        "--metrics-config",
        type=Path,
        metavar="FILE",
        help="metric source config: PromQL overrides, node label, token and CA files",
    )
    parser.add_argument(
        "--metric-max-age",
        type=duration,
        metavar="DURATION",
        help="older metric values count as missing (default: 5 sync periods, at least 30s, "
        "or, for a source that updates more slowly, two missed updates)",
    )


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--policies",
        type=Path,
        metavar="PATH",
        help="a TASPolicy file or a directory of *.yaml/*.yml/*.json files (reloaded on "
        "change); default: the TASPolicy objects in the cluster",
    )


def add_sync_period_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sync-period",
        type=duration,
        default=2.0,
        metavar="DURATION",
        help="how often metrics are refreshed (and the controller reconciles); default 2s",
    )


def add_listen_argument(
    parser: argparse.ArgumentParser,
    *,
    default: tuple[str, int] | None,
    help: str,
    flag: str = "--listen",
) -> None:
    """A `HOST:PORT` a server of the command binds (`default` None: no server unless given)."""
    parser.add_argument(flag, type=listen_address, default=default, metavar="HOST:PORT", help=help)


def add_log_level_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--log-level",
        type=log_level,
        default="info",
        metavar="LEVEL",
        help=f"{', '.join(LOG_LEVELS)} (default info)",
    )


def parse_with_tas_flags(
    parser: argparse.ArgumentParser,
    argv: Sequence[str],
    *,
    component: Component,
    prefix: Sequence[str] = (),
) -> argparse.Namespace:
    """Parse `argv`, first translating Intel TAS's flags (`tas_cli.tas_compat`).

    An old TAS manifest starts unchanged; each TAS flag used is logged as a deprecation
    warning naming its new spelling once logging is configured (`warn_tas_flags`).
    """
    try:
        translated, notices = translate_tas_flags(argv, component=component)
    except TasFlagError as error:
        parser.error(f"{component}: {error}")  # exits 2 with the usage, as any bad flag
    args = parser.parse_args([*prefix, *translated])
    args.tas_flag_notices = notices
    return args


def warn_tas_flags(notices: Iterable[str]) -> None:
    for notice in notices:
        log.warning("%s", notice)


class ComponentSettings(Protocol):
    """What a long-running component's settings (the extender's, the controller's) tell of
    its start: the log level, and the TAS flags translated on the way in."""

    @property
    def log_level(self) -> str: ...

    @property
    def tas_flag_notices(self) -> tuple[str, ...]: ...


C = TypeVar("C", bound=ComponentSettings)


def component_command(
    read: Callable[[argparse.Namespace], C], body: Callable[[C], int]
) -> Callable[[argparse.Namespace], int]:
    """A component's `run`: its settings read once (`read`), logging configured at their
    level and each TAS flag used warned of (`warn_tas_flags`), then `body(settings)`."""

    def run(args: argparse.Namespace) -> int:
        settings = read(args)
        configure_logging(settings.log_level)
        warn_tas_flags(settings.tas_flag_notices)
        return body(settings)

    return run


# ------------------------------------------------------------------ setup


def configure_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format=LOG_FORMAT)


@dataclass(frozen=True)
class Listener:
    """An address a command will serve on: what for, and how to pick another (`bind`'s)."""

    address: tuple[str, int]
    what: str
    if_taken: str = ""


def check_listeners(listeners: Sequence[Listener]) -> None:
    """Raise one `SetupError` naming every address of `listeners` that cannot be bound now (a
    port taken, a host not this machine's, one address given twice), so a user fixes them all
    at once instead of meeting them one run at a time. One problem reads as `bind`'s line.
    The servers still bind through `bind`: a port taken after this check is reported there."""
    problems: list[str] = []
    seen: dict[tuple[str, int], str] = {}
    for listener in listeners:
        host, port = listener.address
        purpose = f" for {listener.what}" if listener.what else ""
        if listener.address in seen:
            problems.append(f"{host}:{port}{purpose}: already given for {seen[listener.address]}")
            continue
        seen[listener.address] = listener.what
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            # As the servers bind: a port whose last connections linger in TIME_WAIT is free.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as error:
                problem = f"{host}:{port}{purpose}: {error.strerror or error}"
                if listener.if_taken and error.errno == errno.EADDRINUSE:
                    problem += f". {listener.if_taken}"
                problems.append(problem)
    if len(problems) == 1:
        raise SetupError(f"cannot listen on {problems[0]}")
    if problems:
        lines = "\n".join(f"  {problem}" for problem in problems)
        raise SetupError(f"cannot listen on {len(problems)} addresses:\n{lines}")


def bind(
    address: tuple[str, int],
    server: Callable[[str, int], S],
    *,
    what: str = "",
    if_taken: str = "",
) -> S:
    """`server(host, port)`, a server that binds its address as it is built. One that cannot
    (the port is taken, the host is not this machine's) is a `SetupError` naming the address
    (and `what` it was for, where a command serves more than one), followed by `if_taken`
    where the port is in use (how to pick another): one line and exit 2, never a traceback."""
    host, port = address
    try:
        return server(host, port)
    except OSError as error:
        purpose = f" for {what}" if what else ""
        message = f"cannot listen on {host}:{port}{purpose}: {error.strerror or error}"
        if if_taken and error.errno == errno.EADDRINUSE:
            message += f". {if_taken}"
        raise SetupError(message) from error


def add_leader_arguments(parser: argparse.ArgumentParser, *, lease: str) -> None:
    """`--leader-elect`, `--lease-name` (default `lease`) and `--lease-namespace`."""
    parser.add_argument(
        "--leader-elect", action="store_true", help="run only while holding a Lease"
    )
    parser.add_argument("--lease-name", default=lease, metavar="NAME")
    parser.add_argument(
        "--lease-namespace",
        default=os.environ.get("POD_NAMESPACE", "default"),
        metavar="NAMESPACE",
    )


def elect_leader(
    api_client: Any, *, name: str, namespace: str, life: Lifetime
) -> Callable[[], bool]:
    """Take part in the election on the Lease `namespace/name` for the rest of `life`; what
    tells whether this process leads now. The identity is the pod's name (`POD_NAME`)."""
    from tas.cluster.leader import LeaderElector

    identity = os.environ.get("POD_NAME") or f"{socket.gethostname()}-{os.getpid()}"
    elector = LeaderElector(api_client, name=name, namespace=namespace, identity=identity)
    # Started (so joined) first: the elector releases the Lease as it stops, so a standby
    # takes over at its next try instead of waiting the lease duration out.
    life.in_background(elector.run, life.stop, name="leader")
    return lambda: elector.is_leader


def kube_api_client(kube: KubeSettings) -> Any:
    """The process's one Kubernetes connection (`--kubeconfig`, `--context`)."""
    from tas.cluster.kubeconfig import KubeConfigError, load_api_client

    try:
        return load_api_client(kube.kubeconfig, context=kube.context)
    except KubeConfigError as error:
        raise SetupError(str(error)) from error


def open_cluster(
    api_client: Any, *, watched: Iterable[ResourceKind], **options: Any
) -> KubernetesCluster:
    """Caches of `watched` only: a new cache must come with its RBAC grant. `options` go to
    `KubernetesCluster` (which pods, which of their fields). The caches are the process's
    heap: the collector is kept off them (`tas.cluster.heap`)."""
    from tas.cluster.kubernetes import KubernetesCluster

    return KubernetesCluster(api_client, watched=list(watched), freeze_heap=True, **options)


def open_view(
    metrics: MetricsSettings,
    *,
    kube: KubeSettings,
    registry: CollectorRegistry,
    api_client: Any = None,
    nodes: KubernetesCluster | None = None,
) -> RefreshingMetricView:
    """The metric view `--metrics` names (not started). `nodes`, a cluster that watches
    Nodes, lends their addresses: a Prometheus series whose `instance` is a node's `IP:port`
    (kube-prometheus-stack's) then counts for that node (`tas.metrics.node_identity`)."""
    from tas.metrics import MetricSourceError, open_metric_view

    spec = metrics.source or ""
    if api_client is None and spec.strip() == "custom-metrics":
        # The custom metrics API is read with the process's own connection (`--kubeconfig`,
        # `--context`), not whatever kubeconfig the environment would find.
        api_client = kube_api_client(kube)
    try:
        return open_metric_view(
            spec,
            sync_period=metrics.sync_period,
            max_age=metrics.max_age,
            config_file=metrics.config_file,
            registry=registry,
            kube_api_client=api_client,
            node_addresses=nodes,
        )
    except MetricSourceError as error:
        raise SetupError(f"--metrics {metrics.source!r}: {error}") from error


def open_pod_usage(metrics: MetricsSettings) -> PrometheusPodUsage | None:
    """Per-pod usage from the Prometheus `--metrics prometheus:URL` names, reached as the
    metric view reaches it (the metrics config's CA, timeout, token and rate window), or
    None with any other source."""
    url = metrics.prometheus_url
    if url is None:
        return None
    from tas.metrics import MetricSourceError
    from tas.metrics.config import load_metrics_config
    from tas.metrics.pod_usage import open_pod_usage as open_source
    from tas.metrics.refreshing import default_max_age

    try:
        return open_source(
            url,
            config=load_metrics_config(metrics.config_file),
            max_age=metrics.max_age or default_max_age(metrics.sync_period),
        )
    except MetricSourceError as error:
        raise SetupError(f"--metrics-config: {error}") from error


def open_resource_metrics_pod_usage(cluster: KubernetesCluster) -> ResourceMetricsPodUsage:
    """Per-pod usage from the resource metrics API (metrics.k8s.io PodMetrics, metrics-server;
    RBAC `list` of `pods` in `metrics.k8s.io`), for a process whose metrics do not come from
    Prometheus."""
    from tas.cluster.interface import ClusterError
    from tas.metrics.resource_metrics import ResourceMetricsPodUsage

    return ResourceMetricsPodUsage(cluster.list_pod_metrics, failure=ClusterError)


def resource_metrics_period(metrics: MetricsSettings) -> float:
    """How often to read metrics-server: every sync period, but never faster than it scrapes."""
    from tas.metrics.resource_metrics import MIN_PERIOD

    return max(metrics.sync_period, MIN_PERIOD)


@runtime_checkable
class Syncing(Protocol):
    """A cluster whose caches fill after start (the Kubernetes one; the in-memory one is full)."""

    def wait_synced(self, timeout: float) -> bool: ...


def wait_synced(cluster: Syncing, stop: threading.Event, *, limit: float = 0) -> bool:
    """Wait until every cache has listed once; False when `stop` came first.

    In short waits, so a SIGTERM while the caches fill is a prompt, clean stop. With a
    `limit` (seconds), giving up is a `SetupError`; without, it warns every minute.
    """
    started, warnings = time.monotonic(), 0
    while not cluster.wait_synced(_POLL_SECONDS):
        if stop.is_set():
            return False
        waited = time.monotonic() - started
        if limit and waited > limit:
            raise SetupError(f"the cluster caches did not fill within {limit:.0f}s")
        if waited >= (warnings + 1) * CACHE_SYNC_WARN_SECONDS:
            warnings += 1
            log.warning("Cluster caches not synced after %d s; still waiting", waited)
    return not stop.is_set()


def follow_policies(
    policies: Path | None,
    store: PolicyStore,
    life: Lifetime,
    *,
    cluster: ObservableCluster | None,
    poll_seconds: float,
) -> str:
    """Keep `store` equal to `--policies` or to the cluster's TASPolicy objects.

    Files are read once now, then checked every second (a stat, cheap); the cluster's
    objects are loaded once its caches have synced, then followed through change
    notifications, with polling every `poll_seconds` as a safety net for a missed one.
    Returns where the policies come from, for the startup log line.
    """
    if policies is not None:
        watcher = PolicyFileWatcher(policies, into_store(store))
        watcher.poll()
        life.in_background(watcher.run, life.stop, FILE_POLL_SECONDS, name="policy-files")
        return str(policies)
    if cluster is None:
        raise SetupError("no --policies and no cluster to read TASPolicy objects from")
    from tas.policies.cluster import ClusterPolicyLoader

    def follow() -> None:
        if isinstance(cluster, Syncing) and not wait_synced(cluster, life.stop):
            return
        loader = ClusterPolicyLoader(cluster, store)
        loader.attach(cluster)
        loader.run(life.stop, poll_seconds)

    life.in_background(follow, name="policy-cluster")
    return "the cluster's TASPolicy objects"


# ------------------------------------------------------------------ the process


Cleanup = Callable[[float], object]


class Lifetime:
    """One process's life: a stop event, the signals that set it, and an orderly end.

    Background threads are joined first, in the order they were started (the leader
    elector's thread first: it releases the Lease as it ends), then cleanups run, last
    registered first, each given what is left of `shutdown_seconds`. Threads are daemons, so
    one still blocked on the network when the budget runs out is left to the process exit,
    no worse than the SIGKILL that would follow.
    """

    def __init__(self, name: str, *, shutdown_seconds: float) -> None:
        self.name = name
        self.stop = threading.Event()
        self._shutdown_seconds = shutdown_seconds
        self._threads: list[threading.Thread] = []
        self._cleanups: list[Cleanup] = []
        self._previous_handlers: dict[int, Any] = {}

    def catch_signals(self, *, also: Callable[[], None] | None = None) -> None:
        """SIGTERM and SIGINT set the stop event (and call `also`); restored on close."""
        if threading.current_thread() is not threading.main_thread():
            return  # embedded in a test or another program: the caller owns the signals

        def request_stop(signum: int, frame: FrameType | None) -> None:
            self.stop.set()
            if also is not None:
                also()

        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous_handlers[signum] = signal.signal(signum, request_stop)

    def in_background(
        self, target: Callable[..., object], *args: object, name: str
    ) -> threading.Thread:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)
        return thread

    def on_close(self, cleanup: Cleanup) -> None:
        """Run `cleanup(seconds_left)` at the end."""
        self._cleanups.append(cleanup)

    def close(self) -> None:
        self.stop.set()
        deadline = time.monotonic() + self._shutdown_seconds

        def remaining() -> float:
            return max(0.0, deadline - time.monotonic())

        for thread in self._threads:
            thread.join(remaining())
            if thread.is_alive():
                log.warning("%s: thread %s did not finish in time", self.name, thread.name)
        for cleanup in reversed(self._cleanups):
            try:
                cleanup(remaining())
            except Exception:  # one failing cleanup must not skip the others
                log.exception("%s: a cleanup failed during shutdown", self.name)
        for signum, handler in self._previous_handlers.items():
            signal.signal(signum, handler)
        log.info("%s stopped", self.name)

    def __enter__(self) -> Lifetime:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
