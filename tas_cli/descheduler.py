"""`tas descheduler` (and `python -m descheduler`): the descheduler's process.

Opens a cluster (caches of nodes, pods, PodDisruptionBudgets and TASPolicies: what its
ClusterRole grants), the policy store and the metric view, gives them and the DeschedulerPolicy
file to `descheduler.assemble.assemble_descheduler`, and runs the result on its schedule. The
schedule runs in a worker thread and the main thread only waits, so a SIGTERM is answered at
once even in the middle of a cycle.
"""

from __future__ import annotations

import argparse
import functools
import logging
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from prometheus_client import CollectorRegistry

from descheduler.assemble import assemble_descheduler
from descheduler.config import ConfigError, parse_config
from descheduler.cycle import Mode
from descheduler.kubedescheduler import KubeDeschedulerError, expand
from descheduler.liveness import MISSED_CYCLES, CycleLiveness
from descheduler.schedule import run_schedule
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.usage import TokenOverPlainHttpError, service_account_prometheus
from tas import process, startup
from tas.clock import SYSTEM_CLOCK
from tas.cluster.interface import ObservableCluster, ResourceKind
from tas.cron import CronSchedule
from tas.metrics.static import StaticMetricView
from tas.metrics.view import MetricView
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.probes import ProbeServer
from tas_cli import common

if TYPE_CHECKING:
    from tas.cluster.kubernetes import KubernetesCluster

log = logging.getLogger("descheduler")

#: How often a warning names the caches still listing while startup waits for them. Startup
#: waits as long as it takes (as the extender and the controller do): a slow or busy API server
#: must not make the descheduler exit and crash-loop, which would list everything again.
CACHE_WAIT_WARN_SECONDS = 60.0
#: How long a cycle under way may go on after SIGTERM. With the rest of the shutdown (aborting
#: the watch streams) it stays well inside 2 s: a rollout or a CronJob should not wait on us,
#: and Kubernetes kills a pod 30 s after SIGTERM anyway. Each eviction is one API call, so an
#: abandoned cycle leaves nothing half done.
CYCLE_GRACE_SECONDS = 0.5
SHUTDOWN_SECONDS = 0.6
#: What `--print-policy` shows for Prometheus's URL when `--metrics` does not give it: showing a
#: policy needs no Prometheus, running it does. It reads as what to do, and is no address a
#: client could reach by mistake.
PROMETHEUS_URL_PLACEHOLDER = "<Prometheus URL: give --metrics prometheus:URL>"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    policy = parser.add_mutually_exclusive_group(required=True)
    policy.add_argument(
        "--policy-config-file",
        type=Path,
        metavar="FILE",
        help="DeschedulerPolicy (descheduler/v1alpha2) file; see deploy/descheduler/",
    )
    policy.add_argument(
        "--kubedescheduler",
        type=Path,
        metavar="FILE",
        help="an OpenShift KubeDescheduler (operator.openshift.io/v1) file: its profiles, mode "
        "and interval, expanded to the equivalent policy (see --print-policy)",
    )
    parser.add_argument(
        "--print-policy",
        action="store_true",
        help="print the DeschedulerPolicy that would run (a KubeDescheduler expanded) and exit",
    )
    common.add_metric_arguments(
        parser, required=False, absent_means="without it only label-based violations are seen"
    )
    common.add_policy_arguments(parser)
    common.add_kubernetes_arguments(parser)
    parser.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=None,
        help="Predictive (default, or the KubeDescheduler's mode): report what would be "
        "evicted; Automatic: evict",
    )
    parser.add_argument(
        "--descheduling-interval",
        type=common.duration_or_zero,
        default=None,
        metavar="DURATION",
        help="run every DURATION (e.g. 60s, 10m, 1h30m); 0 with no cron: run once and exit "
        "(default 0, or the KubeDescheduler's deschedulingIntervalSeconds)",
    )
    parser.add_argument(
        "--descheduling-interval-cron-expression",
        type=common.cron_schedule,
        default=None,
        metavar="CRON",
        help="run on a 5-field cron schedule, e.g. '*/10 * * * *' (the interval wins if both)",
    )
    common.add_leader_arguments(parser, lease="tas-descheduler")
    parser.add_argument(
        "--allow-token-over-http",
        action="store_true",
        help="send the ServiceAccount token to an http:// Prometheus of the policy's "
        "metricsProviders (refused by default: it authenticates as the descheduler)",
    )
    common.add_sync_period_argument(parser)
    common.add_listen_argument(
        parser,
        flag="--listen-metrics",
        default=None,
        help="serve /metrics here (e.g. 127.0.0.1:9103), with /healthz failing once cycles stop "
        f"({MISSED_CYCLES} scheduled cycles without one ending) and /readyz once policies are "
        "loaded; off by default",
    )
    common.add_log_level_argument(parser)


#: `tas descheduler --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Evict pods whose node violates their TASPolicy, rebalance load on real "
    "telemetry, and run the classic descheduler strategies, all through the Eviction API."
)


@dataclass(frozen=True)
class DeschedulerCommandSettings:
    """Everything `tas descheduler` was told, read once from its command line."""

    #: Exactly one of the two is set (a required mutually exclusive group).
    policy_config_file: Path | None
    kubedescheduler: Path | None
    print_policy: bool
    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    #: None: the KubeDescheduler's, else Predictive (`policy_document`).
    mode: Mode | None
    #: None: the KubeDescheduler's, else 0 (run once).
    descheduling_interval: float | None
    cron: CronSchedule | None
    listen_metrics: tuple[str, int] | None
    log_level: str
    allow_token_over_http: bool = False
    leader_elect: bool = False
    lease_name: str = "tas-descheduler"
    lease_namespace: str = "default"

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> DeschedulerCommandSettings:
        return common.read_settings(
            cls,
            args,
            mode=Mode(args.mode) if args.mode is not None else None,
            cron=args.descheduling_interval_cron_expression,
        )

    @property
    def policy_source(self) -> Path:
        source = self.kubedescheduler or self.policy_config_file
        assert source is not None, "argparse requires one of the two"
        return source


def run(args: argparse.Namespace, *, cluster: ObservableCluster | None = None) -> int:
    """Run as the arguments say; `cluster` replaces the Kubernetes one (the in-memory world,
    tests)."""
    settings = DeschedulerCommandSettings.from_args(args)
    common.configure_logging(settings.log_level)
    try:
        document, mode, interval = policy_document(settings)
        config = parse_config(document)
    except (ConfigError, KubeDeschedulerError) as error:
        source = settings.policy_source
        for problem in error.problems:
            print(problem if str(source) in problem else f"{source}: {problem}", file=sys.stderr)
        if isinstance(error, KubeDeschedulerError) and "Prometheus" in str(error):
            print("hint: give Prometheus's URL with --metrics prometheus:URL", file=sys.stderr)
        return 2
    if settings.print_policy:
        text = yaml.safe_dump(document, sort_keys=False)
        sys.stdout.write(text)
        if PROMETHEUS_URL_PLACEHOLDER in text:
            print(
                f"tas descheduler: {settings.policy_source}: the profiles read Prometheus; its "
                "URL is left as a placeholder (give --metrics prometheus:URL to fill it in)",
                file=sys.stderr,
            )
        return 0
    try:
        with process.Lifetime("Descheduler", shutdown_seconds=SHUTDOWN_SECONDS) as life:
            # First of all, so that a SIGTERM while the caches fill is a clean stop too.
            life.catch_signals()
            return _deschedule(settings, config, mode, interval, cluster, life)
    except process.SetupError:
        raise  # one line and exit 2 (`tas_cli.subcommand.run_command`)
    except Exception as error:  # a broken cluster or source at startup: one clear line
        log.error("Descheduler stopped: %s", error)
        return 1


def policy_document(settings: DeschedulerCommandSettings) -> tuple[Any, Mode, float]:
    """The DeschedulerPolicy document to run, its mode and its interval.

    A KubeDescheduler is expanded (`descheduler.kubedescheduler`): its mode and interval apply
    unless `--mode` or `--descheduling-interval` say otherwise.
    """
    mode, interval = Mode.PREDICTIVE, 0.0
    if settings.kubedescheduler is not None:
        raw = _read_yaml(settings.kubedescheduler)
        url = settings.metrics.prometheus_url
        if url is None and settings.print_policy:
            url = PROMETHEUS_URL_PLACEHOLDER
        expansion = expand(raw, prometheus_url=url)
        document: Any = expansion.policy
        mode, interval = Mode(expansion.mode), expansion.interval_seconds
    else:
        document = _read_yaml(settings.policy_source)
    if settings.mode is not None:
        mode = settings.mode
    if settings.descheduling_interval is not None:
        interval = settings.descheduling_interval
    return document, mode, interval


class _Standby:
    """Whether this replica sits a cycle out (another leads), said when that changes."""

    def __init__(self) -> None:
        self._leading: bool | None = None

    def waiting(self, *, leading: bool) -> bool:
        if leading != self._leading:
            if leading:
                log.info("Leading: cycles run here")
            else:
                log.info("Standby: another replica holds the Lease; no cycle runs here")
            self._leading = leading
        return not leading


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot read: {error}"]) from error
    except yaml.YAMLError as error:
        raise ConfigError([f"{path}: not valid YAML: {error}"]) from error


def _deschedule(
    settings: DeschedulerCommandSettings,
    config: Any,
    mode: Mode,
    interval: float,
    cluster: ObservableCluster | None,
    life: process.Lifetime,
) -> int:
    registry = CollectorRegistry()
    store = PolicyStore()
    liveness = CycleLiveness(
        interval=interval,
        cron=settings.cron,
        clock=SYSTEM_CLOCK,
    )
    synced = threading.Event()
    if cluster is not None:
        synced.set()  # the in-memory world: full from the start
    if settings.listen_metrics:
        # From the start, so the probes answer while the caches fill (live: counted from now;
        # ready once every cache has listed and the policies are loaded).
        server = process.bind(
            settings.listen_metrics,
            lambda host, port: ProbeServer(
                host=host,
                port=port,
                registry=registry,
                healthy=liveness.live,
                ready=lambda: synced.is_set() and store.loaded,
                name="descheduler",
            ),
        )
        life.on_close(server.stop)
        server.start()
        log.info("Metrics and probes on http://%s:%d", *server.address)
    is_leader: Callable[[], bool] = lambda: True  # noqa: E731
    nodes = None
    if cluster is None:
        api_client = startup.kube_api_client(settings.kube)
        if settings.leader_elect:
            # Only the leader runs cycles (evicts, taints); a standby keeps its caches warm
            # and takes over within the lease duration (15 s) when the leader goes.
            is_leader = process.elect_leader(
                api_client, name=settings.lease_name, namespace=settings.lease_namespace, life=life
            )
        kubernetes = startup.open_cluster(
            api_client,
            # Every cache the descheduler reads, named: a new cache needs its RBAC grant.
            watched=[ResourceKind.NODE, ResourceKind.POD, ResourceKind.PDB, ResourceKind.POLICY],
        )
        kubernetes.start()
        life.on_close(kubernetes.stop)  # aborts the watch streams
        if not _wait_for_caches(kubernetes, life.stop, liveness=liveness):
            return 0
        synced.set()
        cluster = nodes = kubernetes
    view: MetricView
    refresh: Callable[[], None] = lambda: None  # noqa: E731
    if settings.metrics.source:
        # The Node cache lends the view the nodes' addresses (an `instance` of `IP:port`).
        refreshing = startup.open_view(
            settings.metrics, kube=settings.kube, registry=registry, nodes=nodes
        )
        life.on_close(refreshing.stop)
        view, refresh = refreshing, refreshing.refresh_once
    else:
        log.warning("No --metrics source: only label-based TAS violations can be seen")
        view = StaticMetricView()
    pod_usage = startup.open_pod_usage(settings.metrics)
    if pod_usage is not None:
        life.on_close(lambda _seconds: pod_usage.close())
        log.info(
            "LoadAware reads per-pod usage from %s (container series)", settings.metrics.source
        )
    try:
        descheduler = assemble_descheduler(
            config=config,
            cluster=cluster,
            metric_view=view,
            policies=lambda: store.snapshot().policies,
            mode=mode,
            clock=SYSTEM_CLOCK,
            metrics=DeschedulerMetrics(registry=registry),
            pod_usage_feed=pod_usage,
            prometheus=functools.partial(
                service_account_prometheus, allow_plain_http=settings.allow_token_over_http
            ),
        )
    except TokenOverPlainHttpError as error:
        raise process.SetupError(str(error)) from error
    want_policy_metrics(store, view, extra=descheduler.wanted_metrics())
    startup.follow_policies(
        settings.policies,
        store,
        life,
        cluster=cluster,
        poll_seconds=max(settings.metrics.sync_period * 5, 10.0),
    )

    standby = _Standby()

    def cycle() -> None:
        # A blocking refresh before each cycle: decisions use values fetched for them.
        try:
            if standby.waiting(leading=is_leader()):
                return
            refresh()
            descheduler.run_cycle()
        finally:
            liveness.cycle_ended()  # a failed or a standby's cycle: the schedule goes on

    # Decide only once the policies are known: a first cycle without them would see no
    # TAS rules at all (and a run-once descheduler would have nothing else).
    while not store.loaded and not life.stop.is_set():
        life.stop.wait(0.05)
    log.info("Descheduler starting in %s mode", mode.value)
    _run_until_stopped(
        lambda: run_schedule(
            cycle,
            interval=interval,
            cron=settings.cron,
            clock=SYSTEM_CLOCK,
            stop=life.stop,
        ),
        life.stop,
    )
    return 0


def _wait_for_caches(
    cluster: KubernetesCluster,
    stop: threading.Event,
    *,
    liveness: CycleLiveness,
    warn_seconds: float = CACHE_WAIT_WARN_SECONDS,
) -> bool:
    """`tas.startup.wait_for_caches`, as every component waits, with liveness held: listing is
    progress, and the allowance for the first cycle counts from when the caches are full.
    Meanwhile /readyz says not ready (the caller sets `synced` after)."""
    synced = startup.wait_for_caches(
        cluster, stop, progress=liveness.cycle_ended, warn_seconds=warn_seconds
    )
    liveness.cycle_ended()
    return synced


def _run_until_stopped(schedule: Callable[[], object], stop: threading.Event) -> None:
    """Run `schedule` in a worker thread until it returns or `stop` is set.

    A cycle under way when the stop comes gets `CYCLE_GRACE_SECONDS` to finish and is then
    left to the process exit, no worse than the SIGKILL that would follow.
    """
    failures: list[Exception] = []

    def work() -> None:
        try:
            schedule()
        except Exception as error:  # reported by the caller, as if raised there
            failures.append(error)
        finally:
            stop.set()  # a run-once schedule is done: shut down now

    worker = threading.Thread(target=work, name="descheduler", daemon=True)
    worker.start()
    stop.wait()
    worker.join(CYCLE_GRACE_SECONDS)
    if worker.is_alive():
        log.warning("Stopped in the middle of a descheduling cycle")
    if failures:
        raise failures[0]
