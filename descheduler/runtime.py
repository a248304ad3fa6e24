"""The descheduler's process: everything `tas descheduler` runs once its policy is read.

Opens a cluster (caches of nodes, pods, PodDisruptionBudgets and TASPolicies: what its
ClusterRole grants), the policy store and the metric view, gives them and the parsed
DeschedulerPolicy to `descheduler.assemble.assemble_descheduler`, and runs the result on its
schedule (`descheduler.schedule`), with leader election when asked, the probes and /metrics,
and an orderly shutdown. The schedule runs in a worker thread and the main thread only waits,
so a SIGTERM is answered at once even in the middle of a cycle.

The command (`tas_cli.descheduler`) parses the flags, reads and checks the policy file and
calls `run_descheduler`; it reads the flags through a Protocol (`DeschedulerProcessSettings`),
so this module imports nothing of the command line.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry

from descheduler.assemble import assemble_descheduler
from descheduler.cycle import Mode
from descheduler.liveness import CycleLiveness
from descheduler.schedule import run_schedule
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.usage import TokenOverPlainHttpError, service_account_prometheus
from tas.clock import SYSTEM_CLOCK
from tas.cluster.interface import ObservableCluster, ResourceKind
from tas.cron import CronSchedule
from tas.metrics.static import StaticMetricView
from tas.metrics.view import MetricView
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.runtime import process, startup
from tas.runtime.probes import ProbeServer

if TYPE_CHECKING:
    from tas.adapters.cluster.kubernetes import KubernetesCluster

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


class DeschedulerProcessSettings(startup.ComponentSettings, startup.LeaderSettings, Protocol):
    """What the process reads of `tas descheduler`'s settings
    (`tas_cli.descheduler.DeschedulerCommandSettings`)."""

    @property
    def cron(self) -> CronSchedule | None: ...
    @property
    def listen_metrics(self) -> tuple[str, int] | None: ...
    @property
    def allow_token_over_http(self) -> bool: ...


def run_descheduler(
    settings: DeschedulerProcessSettings,
    config: Any,
    mode: Mode,
    interval: float,
    cluster: ObservableCluster | None = None,
) -> int:
    """Run `config` in `mode` every `interval` (or on `settings.cron`) until SIGTERM/SIGINT, or
    once for an interval of 0 and no cron; `cluster` replaces the Kubernetes one (the in-memory
    world, tests). The exit status: 0, or 1 when a broken cluster or source stops it (one
    log line); a problem the operator can fix is a `tas.runtime.process.SetupError`."""
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


def _deschedule(
    settings: DeschedulerProcessSettings,
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
    """`tas.runtime.startup.wait_for_caches`, as every component waits, with liveness held: listing
    is
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
