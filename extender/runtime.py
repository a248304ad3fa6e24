"""The extender's process: everything `tas extender` runs once its flags are read and checked.

Wires the policy store (files or the cluster's TASPolicy objects), the recent placements fed by
pod and node watches (herd control, `tas_herd.placements`: binds, and each node's allocatable as its
capacity) and by the pods' usage (Prometheus, else metrics-server's PodMetrics), the metric
view, the FastAPI application and its uvicorn server with TLS, whose certificate is reloaded
when its files change (`extender.cert_reload`). With herd control on, the view also fetches
the CPU utilization and pressure its curves learn from (`tas_herd.placements.HERD_CONTROL_METRICS`)
whatever the policies name, and /metrics exports what it has learned
(`PlacementTracker.calibration`).
uvicorn takes SIGTERM/SIGINT while it serves and hands them back when it stops; the handlers
installed here make that second delivery a clean stop (exit 0) instead of a kill.

The command (`tas_cli.extender`) parses the flags, checks them and calls `serve_extender`; it
reads them through a Protocol (`ExtenderProcessSettings`), so this module imports nothing of
the command line. A problem the operator can fix is a `tas.runtime.process.SetupError`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from prometheus_client import CollectorRegistry

from extender.cert_reload import CertificateReloader
from extender.self_metrics import CertificateMetrics
from extender.settings import ExtenderSettings
from extender.tls import ClientNameGuard, TLSConfigError, tls_files
from tas.calibration.curve import CurveLearner
from tas.clock import SYSTEM_CLOCK
from tas.cluster.interface import PodFields, ResourceKind
from tas.durations import format_duration
from tas.metrics.view import MetricView
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tas.runtime import process, startup
from tas.types import MetricName
from tas_herd.placements import (
    DEFAULT_MAX_WINDOW,
    HERD_CONTROL_METRICS,
    PlacementTracker,
    follow_cluster,
)
from tas_herd.readings import herd_readings

if TYPE_CHECKING:
    from tas.adapters.cluster.kubernetes import KubernetesCluster
    from tas.adapters.metrics.pod_usage import PrometheusPodUsage
    from tas.metrics.resource_metrics import ResourceMetricsPodUsage

log = logging.getLogger("extender")

#: The cleanups after the server has stopped (its own graceful stop is bounded by
#: `ExtenderServer`): together well under 2 s from SIGTERM to exit.
CLEANUP_SECONDS = 0.5
POLICY_POLL_SECONDS = 10.0


@dataclass(frozen=True)
class PlacementSettings:
    """How recent placements are estimated: `tas extender`'s recent-placements flags, defaults
    applied."""

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
    #: `--estimate-window-max`; None: `tas_herd.placements.DEFAULT_MAX_WINDOW` (or `window` if
    #: longer).
    max_window: float | None = None

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


class ExtenderProcessSettings(startup.ComponentSettings, Protocol):
    """What the process reads of `tas extender`'s settings
    (`tas_cli.extender.ExtenderCommandSettings`)."""

    @property
    def listen(self) -> tuple[str, int]: ...
    @property
    def insecure_http(self) -> bool: ...
    @property
    def cert(self) -> Path | None: ...
    @property
    def key(self) -> Path | None: ...
    @property
    def cacert(self) -> Path | None: ...
    @property
    def client_cert_names(self) -> tuple[str, ...]: ...
    @property
    def app(self) -> ExtenderSettings: ...
    @property
    def placements(self) -> PlacementSettings: ...
    @property
    def log_level(self) -> str: ...


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


def serve_extender(settings: ExtenderProcessSettings) -> int:
    """Serve until SIGTERM/SIGINT (exit status 0); a problem the operator can fix (a TLS file,
    a taken port) is a `tas.runtime.process.SetupError` before anything serves."""
    # Imported here, not at the top: FastAPI, uvicorn and the metric sources' httpx are most
    # of the start-up time, and `tas extender --help` (or a refused command line) needs none.
    from extender.app import create_app
    from extender.server import ExtenderServer, tune_allocator

    registry = CollectorRegistry()
    reloader = server_tls(settings, registry)

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
            follow_pod_usage(settings.metrics, tracker, life, cluster)
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
            herd=herd_readings(tracker, view, now=time.time) if tracker is not None else None,
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


def server_tls(
    settings: ExtenderProcessSettings, registry: CollectorRegistry
) -> CertificateReloader | None:
    """The server's TLS context and what reloads it, None for plain HTTP; says loudly what is
    not authenticated."""
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


def follow_pod_usage(
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
