"""`tas extender` (and `python -m extender`): the scheduler extender's process.

Wires the policy store (files or the cluster's TASPolicy objects), the recent placements fed by
pod and node watches (herd control, `tas.placements`: binds, and each node's allocatable as its
capacity) and by the pods' usage (Prometheus, else metrics-server's PodMetrics), the metric
view, the FastAPI application and its uvicorn server with TLS, whose certificate is reloaded
when its files change (`extender.cert_reload`). With herd control on, the view also fetches
the CPU utilization and pressure its curves learn from (`tas.placements.HERD_CONTROL_METRICS`)
whatever the policies name, and /metrics exports what it has learned
(`PlacementTracker.calibration`).
uvicorn takes SIGTERM/SIGINT while it serves and hands them back when it stops; the handlers
installed here make that second delivery a clean stop (exit 0) instead of a kill.
"""

from __future__ import annotations

import argparse
import logging
import math
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry

from extender.cert_reload import CertificateReloader
from extender.self_metrics import CertificateMetrics
from extender.settings import DEFAULT_MAX_BODY_BYTES, ExtenderSettings
from extender.tls import ClientNameGuard, TLSConfigError, tls_files
from tas import process, startup
from tas.breaker import DEFAULT_MAX_SHARE
from tas.calibration.curve import CurveLearner
from tas.clock import SYSTEM_CLOCK
from tas.cluster.interface import PodFields, ResourceKind
from tas.durations import format_duration
from tas.metrics.view import MetricView
from tas.placements import (
    DEFAULT_MAX_WINDOW,
    DEFAULT_RESOURCES,
    DEFAULT_WINDOW,
    HERD_CONTROL_METRICS,
    PlacementTracker,
    follow_cluster,
)
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.quantity import parse_quantity
from tas.rules import ScoreMode
from tas.tas_flags import TAS_DEFAULT_CACERT
from tas.types import MetricName
from tas_cli import common

if TYPE_CHECKING:
    from tas.cluster.kubernetes import KubernetesCluster
    from tas.metrics.pod_usage import PrometheusPodUsage
    from tas.metrics.resource_metrics import ResourceMetricsPodUsage

log = logging.getLogger("extender")

#: The cleanups after the server has stopped (its own graceful stop is bounded by
#: `ExtenderServer`): together well under 2 s from SIGTERM to exit.
CLEANUP_SECONDS = 0.5
POLICY_POLL_SECONDS = 10.0
DEFAULT_CAPACITY = {"cpu": 16.0, "memory": 64.0 * 1024**3}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common.add_policy_arguments(parser)
    common.add_kubernetes_arguments(parser)
    common.add_metric_arguments(parser, required=True)
    common.add_sync_period_argument(parser)
    common.add_listen_argument(
        parser,
        default=("0.0.0.0", 9001),
        help="/scheduler/filter, /scheduler/prioritize, the probes and /metrics (default "
        "0.0.0.0:9001)",
    )
    parser.add_argument(
        "--insecure-http", action="store_true", help="serve plain HTTP (development only)"
    )
    parser.add_argument("--cert", type=Path, metavar="FILE", help="server certificate (PEM)")
    parser.add_argument("--key", type=Path, metavar="FILE", help="server private key (PEM)")
    parser.add_argument(
        "--cacert",
        type=Path,
        metavar="FILE",
        help="CA bundle (PEM): require client certificates signed by it (mTLS)",
    )
    parser.add_argument(
        "--client-cert-names",
        type=lambda text: tuple(n.strip() for n in text.split(",") if n.strip()),
        default=(),
        metavar="NAME[,NAME...]",
        help="accept /scheduler/filter and /scheduler/prioritize only from client certificates "
        "with one of these common names (kube-scheduler's; scripts/gen-certs.sh makes "
        "tas-kube-scheduler); needs --cacert. Default: any certificate the CA signed",
    )
    parser.add_argument(
        "--score-mode",
        type=ScoreMode,
        choices=list(ScoreMode),
        default=ScoreMode.PROPORTIONAL,
        help="scheduleonmetric scores: proportional to the value, or TAS's rank (10, 9, ...)",
    )
    parser.add_argument(
        "--tas-compat-failed-nodes",
        action="store_true",
        help="report violating nodes in FailedNodes, as TAS does, instead of "
        "FailedAndUnresolvableNodes",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=common.positive_int,
        default=DEFAULT_MAX_BODY_BYTES,
        metavar="N",
    )
    parser.add_argument("--decision-log-size", type=common.positive_int, default=200, metavar="N")
    parser.add_argument(
        "--max-violating-node-share",
        type=common.share,
        default=DEFAULT_MAX_SHARE,
        metavar="SHARE",
        help="fail open (keep every node) when dontschedule would remove them all and more "
        "than this share of nodes violate: a broken metric, not broken nodes (default 0.5; "
        "1 never fails open)",
    )
    placements = parser.add_argument_group(
        "recent placements (herd control)",
        "Pods bound since a node's samples add their estimated load to its values until a "
        "sample covers them (docs/recent-placements.md).",
    )
    placements.add_argument(
        "--recent-placements",
        choices=["on", "off"],
        default=None,
        help="watch pods and add recent placements' estimates when scoring (default: on when "
        "policies come from the cluster, off with --policies)",
    )
    placements.add_argument(
        "--estimate-window",
        type=common.duration,
        default=DEFAULT_WINDOW,
        metavar="DURATION",
        help="a pod counts until its node's sample time is later than its bind time plus this "
        "window: the metrics' averaging window plus pod start-up and scrape delay. Where it "
        "starts (default 90s); it then follows the observed start-up and metric lag within "
        "--estimate-window-min and --estimate-window-max",
    )
    placements.add_argument(
        "--estimate-window-min",
        type=common.duration,
        default=None,
        metavar="DURATION",
        help="the shortest the window may follow the observed delays down to (default: "
        "--estimate-window, so it only grows); at most --estimate-window",
    )
    placements.add_argument(
        "--estimate-window-max",
        type=common.duration,
        default=None,
        metavar="DURATION",
        help="the longest the window may follow the observed delays up to (default 5m; "
        "--estimate-window's value for a fixed window); at least --estimate-window",
    )
    placements.add_argument(
        "--estimate-metric",
        type=_metric_resource,
        action="append",
        metavar="METRIC=RESOURCE",
        help="a metric that gets estimates, and the pod resource whose share of the node's "
        "capacity it rises by (repeat; default: cpu_utilization=cpu, cpu_pressure=cpu, "
        "memory_utilization=memory)",
    )
    placements.add_argument(
        "--node-capacity",
        type=_resource_quantity,
        action="append",
        metavar="RESOURCE=QUANTITY",
        help="the capacity estimates are shares of where a node's allocatable (read from its "
        "Node) does not say (repeat; default cpu=16, memory=64Gi)",
    )
    placements.add_argument(
        "--learn-pressure-curve",
        choices=["on", "off"],
        default="on",
        help="a pressure estimate follows the node's own utilization-to-PSI curve, learned "
        "from its samples (docs/recent-placements.md); off: the shared model for every node "
        "(default on)",
    )
    placements.add_argument(
        "--estimate-percentile",
        type=_percentile,
        default=None,
        metavar="P",
        help="estimate a new pod at this percentile of its workload's per-pod usage instead "
        "of their mean (e.g. 90 for workloads mixing busy and idle replicas; default: the "
        "mean); a pod's own usage replaces it once measured",
    )
    placements.add_argument(
        "--filter-on-estimates",
        action="append",
        default=[],
        metavar="POLICY",
        help="also add estimates before this policy's dontschedule rules (name or "
        "namespace/name; repeat); scheduleonmetric always sees them",
    )
    common.add_log_level_argument(parser)


def _metric_resource(text: str) -> tuple[MetricName, str]:
    metric, sep, resource = text.partition("=")
    if not sep or not metric.strip() or not resource.strip():
        raise argparse.ArgumentTypeError(f"expected METRIC=RESOURCE, not {text!r}")
    return MetricName(metric.strip()), resource.strip()


def _percentile(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentile in (0, 100], not {text!r}")
    return value


def _resource_quantity(text: str) -> tuple[str, float]:
    resource, sep, amount = text.partition("=")
    try:
        value = parse_quantity(amount.strip()) if sep else -1.0
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: {error}") from error
    if not resource.strip() or not value > 0:
        raise argparse.ArgumentTypeError(f"expected RESOURCE=QUANTITY (positive), not {text!r}")
    return resource.strip(), value


@dataclass(frozen=True)
class PlacementSettings:
    """The recent-placements group of flags, defaults applied."""

    #: `--recent-placements`; unset: on when policies come from the cluster, off with files.
    enabled: bool
    #: `--estimate-window`: where the window starts before it follows the observed delays.
    window: float
    resources: Mapping[MetricName, str]
    default_capacity: Mapping[str, float]
    #: `--estimate-percentile`; None: the workload's per-pod mean.
    usage_percentile: float | None = None
    #: `--learn-pressure-curve`: pressure estimates follow each node's learned curve.
    learn_curves: bool = True
    #: `--estimate-window-min`; None: the window never goes below `window`.
    min_window: float | None = None
    #: `--estimate-window-max`; None: `tas.placements.DEFAULT_MAX_WINDOW` (or `window` if longer).
    max_window: float | None = None

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> PlacementSettings:
        enabled = args.recent_placements
        if enabled is None:
            enabled = "off" if args.policies is not None else "on"
        capacity = dict(DEFAULT_CAPACITY)
        capacity.update(dict(args.node_capacity or []))
        return cls(
            enabled=enabled == "on",
            window=args.estimate_window,
            resources=dict(args.estimate_metric) if args.estimate_metric else DEFAULT_RESOURCES,
            default_capacity=capacity,
            usage_percentile=args.estimate_percentile,
            learn_curves=args.learn_pressure_curve == "on",
            min_window=args.estimate_window_min,
            max_window=args.estimate_window_max,
        )

    def window_problem(self) -> str | None:
        """Why the window's flags contradict each other, None when they do not. Each limit
        the operator gives must hold the starting window: the tracker would otherwise widen
        its limits to include the start and silently ignore the flag."""
        start = f"--estimate-window {format_duration(self.window)}"
        if self.max_window is None:
            highest = f"--estimate-window-max {format_duration(DEFAULT_MAX_WINDOW)} (the default)"
        else:
            highest = f"--estimate-window-max {format_duration(self.max_window)}"
        top = DEFAULT_MAX_WINDOW if self.max_window is None else self.max_window
        if self.min_window is not None:
            lowest = f"--estimate-window-min {format_duration(self.min_window)}"
            if self.min_window > top:
                return (
                    f"{lowest} is longer than {highest}: the window follows the observed "
                    "delays between the two, so the minimum must not exceed the maximum"
                )
            if self.min_window > self.window:
                return (
                    f"{lowest} is longer than {start}, where the window starts: give "
                    f"--estimate-window {format_duration(self.min_window)} or longer too"
                )
        if self.max_window is not None and self.max_window < self.window:
            return (
                f"{highest} is shorter than {start}, where the window starts: give "
                f"--estimate-window {format_duration(self.max_window)} or shorter too"
            )
        return None


@dataclass(frozen=True)
class ExtenderCommandSettings:
    """Everything `tas extender` was told, read once from its command line."""

    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    listen: tuple[str, int]
    insecure_http: bool
    cert: Path | None
    key: Path | None
    cacert: Path | None
    client_cert_names: tuple[str, ...]
    #: What the application is built with (`extender.settings`).
    app: ExtenderSettings
    placements: PlacementSettings
    log_level: str
    tas_flag_notices: tuple[str, ...] = ()

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExtenderCommandSettings:
        return common.read_settings(
            cls,
            args,
            app=ExtenderSettings(
                score_mode=args.score_mode,
                tas_compat_failed_nodes=args.tas_compat_failed_nodes,
                max_body_bytes=args.max_body_bytes,
                decision_log_size=args.decision_log_size,
                filter_estimate_policies=frozenset(args.filter_on_estimates),
                max_violating_node_share=args.max_violating_node_share,
            ),
            placements=PlacementSettings.from_args(args),
        )


def check_settings(settings: ExtenderCommandSettings) -> None:
    """What the command line says that cannot work, before anything starts."""
    problem = settings.placements.window_problem()
    if problem is not None:
        raise process.SetupError(problem)


def placement_tracker(settings: PlacementSettings) -> PlacementTracker | None:
    """The tracker the flags describe, or None when recent placements are off."""
    if not settings.enabled:
        return None
    return PlacementTracker(
        window=settings.window,
        resources=settings.resources,
        default_capacity=settings.default_capacity,
        usage_percentile=settings.usage_percentile,
        curves=CurveLearner() if settings.learn_curves else None,
        min_window=settings.min_window,
        max_window=DEFAULT_MAX_WINDOW if settings.max_window is None else settings.max_window,
    )


def want_metrics(store: PolicyStore, view: MetricView, *, herd_control: bool) -> None:
    """Keep `view` fetching what the store's policies name and, with herd control on,
    `HERD_CONTROL_METRICS` too."""
    want_policy_metrics(store, view, extra=HERD_CONTROL_METRICS if herd_control else ())


#: `tas extender --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Serve POST /scheduler/filter and /scheduler/prioritize for kube-scheduler, "
    "with /healthz, /readyz, /metrics and /debug/decisions."
)


def _serve(settings: ExtenderCommandSettings) -> int:
    # Imported here, not at the top: FastAPI, uvicorn and the metric sources' httpx are most
    # of the start-up time, and `tas extender --help` (or a refused command line) needs none.
    from extender.app import create_app
    from extender.server import ExtenderServer, tune_allocator

    check_settings(settings)
    registry = CollectorRegistry()
    reloader = _server_tls(settings, registry)

    cluster = None
    tracker = placement_tracker(settings.placements)
    watched = []
    if settings.policies is None:
        watched.append(ResourceKind.POLICY)
    if tracker is not None:
        # Pods for the placements, Nodes for each node's capacity (its allocatable).
        watched += [ResourceKind.POD, ResourceKind.NODE]
    if watched:
        # Only these caches: the extender needs nothing else, and its RBAC allows nothing
        # else. /readyz stays false until the first complete policy list has loaded.
        # Of each pod only what herd control reads (its node, owner, requests, bind time).
        cluster = startup.open_cluster(
            startup.kube_api_client(settings.kube),
            watched=watched,
            pod_fields=PodFields.SUMMARY,
        )
    # A Node cache lends the view the nodes' addresses (an `instance` of `IP:port`).
    view = startup.open_view(
        settings.metrics,
        kube=settings.kube,
        registry=registry,
        nodes=cluster if ResourceKind.NODE in watched else None,
    )
    store = PolicyStore()
    want_metrics(store, view, herd_control=tracker is not None)
    with process.Lifetime("Extender", shutdown_seconds=CLEANUP_SECONDS) as life:
        life.on_close(view.stop)
        if cluster is not None:
            if tracker is not None:
                cluster.subscribe(
                    follow_cluster(
                        tracker,
                        find_pod=cluster.find_pod_summary,
                        find_node=cluster.find_node,
                        clock=SYSTEM_CLOCK,
                    )
                )
            cluster.start()
            life.on_close(cluster.stop)  # aborts the watch stream
        if tracker is not None and cluster is not None:
            _follow_pod_usage(settings.metrics, tracker, life, cluster)
        source = startup.follow_policies(
            settings.policies,
            store,
            life,
            cluster=cluster if settings.policies is None else None,
            poll_seconds=POLICY_POLL_SECONDS,
        )
        app = create_app(
            store=store,
            metrics=view,
            settings=settings.app,
            registry=registry,
            estimates=(
                tracker.estimator(
                    sample_times=view.sample_times, now=time.time, columns=view.columns
                )
                if tracker is not None
                else None
            ),
            cores=tracker.cores if tracker is not None else None,
            servers=tracker.servers if tracker is not None else None,
            calibration=tracker.calibration if tracker is not None else None,
            caches_synced=(lambda: cluster.wait_synced(0)) if cluster is not None else None,
        )
        served: Any = app
        if reloader is not None:  # HTTPS: each client certificate's name and expiry
            served = ClientNameGuard(
                app,
                allowed=settings.client_cert_names,
                registry=registry,
                enforce=bool(settings.client_cert_names),
            )
        tune_allocator(largest_body=settings.app.max_body_bytes)
        server = process.bind(
            settings.listen,
            lambda host, port: ExtenderServer(
                served,
                host=host,
                port=port,
                ssl_context=reloader.context if reloader is not None else None,
                log_level=settings.log_level,
                # On the server's loop, cancelled as it stops: nothing to add to the shutdown.
                background=[reloader.watch] if reloader is not None else [],
            ),
        )
        # Also when uvicorn has not taken the signals over yet (see the module docstring).
        life.catch_signals(also=server.request_stop)
        view.start()
        log.info("Extender serving on %s (policies from %s)", server.url, source)
        server.run()
    return 0


run = common.component_command(ExtenderCommandSettings.from_args, _serve)


def _server_tls(
    settings: ExtenderCommandSettings, registry: CollectorRegistry
) -> CertificateReloader | None:
    """The server's TLS context and what reloads it, None for plain HTTP; says loudly what is
    not authenticated."""
    if (
        settings.cacert == Path(TAS_DEFAULT_CACERT)
        and not settings.insecure_http
        and not settings.cacert.is_file()
    ):
        # Kept from a TAS command line without --cacert (tas.tas_flags): serving without
        # client authentication instead would silently drop the guarantee TAS gave.
        raise process.SetupError(
            f"--cacert {TAS_DEFAULT_CACERT} (TAS's default, kept because TAS always required "
            "client certificates) does not exist: pass --cacert FILE, the CA that signed "
            "kube-scheduler's client certificate"
        )
    try:
        files = tls_files(
            cert=settings.cert,
            key=settings.key,
            cacert=settings.cacert,
            insecure_http=settings.insecure_http,
        )
        reloader = (
            CertificateReloader(files, metrics=CertificateMetrics(registry))
            if files is not None
            else None
        )
    except TLSConfigError as error:
        raise process.SetupError(str(error)) from error
    if settings.client_cert_names and (files is None or files.cacert is None):
        raise process.SetupError(
            "--client-cert-names needs --cacert: without client certificates there is no name "
            "to check"
        )
    if files is None:
        log.warning("Serving plain HTTP (--insecure-http): for development only")
    elif files.cacert is None:
        log.warning(
            "Serving HTTPS WITHOUT client authentication (no --cacert): anyone who reaches the "
            "port can call the extender. Give --cacert FILE to require kube-scheduler's client "
            "certificate, as TAS did"
        )
    elif not settings.client_cert_names:
        log.warning(
            "Any client certificate the CA signed may call filter and prioritize: give "
            "--client-cert-names with kube-scheduler's certificate name to allow it alone"
        )
    return reloader


def _follow_pod_usage(
    metrics: startup.MetricsSettings,
    tracker: PlacementTracker,
    life: process.Lifetime,
    cluster: KubernetesCluster,
) -> None:
    """The pods' observed usage feeds the placements' estimates: from the Prometheus of
    `--metrics prometheus:URL` every sync period, else from the resource metrics API
    (metrics-server's PodMetrics, `tas.metrics.resource_metrics`) every
    `startup.resource_metrics_period`."""
    from tas.metrics.errors import MetricFetchError

    usage: PrometheusPodUsage | ResourceMetricsPodUsage | None = startup.open_pod_usage(metrics)
    period = metrics.sync_period
    if usage is None:
        usage = startup.open_resource_metrics_pod_usage(cluster)
        period = startup.resource_metrics_period(metrics)
    feed = usage
    life.on_close(lambda _seconds: feed.close())

    def follow(stop: threading.Event, period: float) -> None:
        while not stop.is_set():
            try:
                tracker.set_usage(
                    {
                        key: {r: values[r] for r in ("cpu", "memory") if r in values}
                        for key, values in feed.fetch().items()
                    }
                )
            except MetricFetchError as error:
                log.debug("No per-pod usage for recent placements: %s", error)
            stop.wait(period)

    life.in_background(follow, life.stop, period, name="pod-usage")
