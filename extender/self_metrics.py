"""The extender's own Prometheus metrics, registered on an injected registry.

Every label value comes from a fixed set or from a policy the extender has: never from a
request, which could otherwise add a new series (kept until the process ends) per request.

`ExtenderMetrics` are those of the application (one per `create_app`); `CertificateMetrics`
those of the certificate it serves (`extender.cert_reload`), for the expiry alert;
`CalibrationCollector` what herd control has learned (each node's pressure curve, the observed
metric lag and start-up, the window in force), read when scraped, under the names the
descheduler gives its own (`tas_descheduler_pressure_curve_*`, `tas_descheduler_observed_*`):
one series per node the tracker knows, so a node that leaves takes its series with it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extender.certificate import CertificateInfo
from extender.decisions import Decision, Outcome
from tas.calibration import Calibration
from tas.runtime.self_metrics import MetricFactory

_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

#: The `policy` label of a decision for a pod whose `telemetry-policy` names no existing policy.
UNKNOWN_POLICY = "unknown"


class ExtenderMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        metrics = MetricFactory(registry)
        self.request_seconds = metrics.histogram(
            "tas_extender_request_duration_seconds",
            "Time to answer a scheduler extender request, by verb.",
            ["verb"],
            buckets=_BUCKETS,
        )
        self.decisions = metrics.counter(
            "tas_extender_decisions_total",
            "Filter and prioritize decisions, by verb, policy and outcome. The policy is the "
            f'TASPolicy found, "{UNKNOWN_POLICY}" when the pod names one that does not exist '
            '(outcome policy-not-found), and "" when the pod has no telemetry-policy label.',
            ["verb", "policy", "outcome"],
        )
        self.filtered_nodes = metrics.counter(
            "tas_extender_filtered_nodes_total",
            "Nodes removed by filter because they violate a dontschedule strategy, by policy.",
            ["policy"],
        )
        self.rejected_requests = metrics.counter(
            "tas_extender_rejected_requests_total",
            "Requests answered with a client error (bad body, type, size), by verb and status.",
            ["verb", "status"],
        )
        self.internal_errors = metrics.counter(
            "tas_extender_internal_errors_total",
            "Requests that failed inside the extender (a bug; the log has the traceback), "
            "answered 500, by verb.",
            ["verb"],
        )

    def count_decision(self, decision: Decision) -> None:
        # A missing policy's name is whatever the pod's label says: one fixed value for all.
        policy = UNKNOWN_POLICY if decision.outcome is Outcome.POLICY_NOT_FOUND else decision.policy
        self.decisions.labels(decision.verb.value, policy, decision.outcome.value).inc()
        if decision.failed:
            self.filtered_nodes.labels(policy).inc(len(decision.failed))


class CertificateMetrics:
    """The served certificate's expiry, and how reloading it went."""

    def __init__(self, registry: CollectorRegistry) -> None:
        metrics = MetricFactory(registry)
        self.expiry = metrics.gauge(
            "tas_extender_certificate_expiry_timestamp_seconds",
            "When the certificate the extender serves expires (its notAfter, Unix seconds). "
            "A renewed certificate that fails to load leaves the old one, and its date, here.",
        )
        self.ca_expiry = metrics.gauge(
            "tas_extender_ca_certificate_expiry_timestamp_seconds",
            "When the CA the extender checks client certificates with (--cacert, its first "
            "certificate) expires (notAfter, Unix seconds): kube-scheduler's certificate stops "
            "verifying then, whatever its own date.",
        )
        self.reloads = metrics.counter(
            "tas_extender_certificate_reloads_total",
            "Changes of the certificate files, by result: loaded (served on new connections "
            "from then on) or failed (the certificate served before is kept).",
            ["result"],
        )
        for result in ("loaded", "failed"):
            self.reloads.labels(result)  # both series from the start, so increase() sees a 1st

    def served(self, certificate: CertificateInfo, *, reloaded: bool) -> None:
        self.expiry.set(certificate.not_after)
        if reloaded:
            self.reloads.labels("loaded").inc()

    def trusted(self, ca: CertificateInfo) -> None:
        self.ca_expiry.set(ca.not_after)

    def reload_failed(self) -> None:
        self.reloads.labels("failed").inc()


class CalibrationCollector(Collector):
    """Herd control's calibration (`tas_herd.placements.PlacementTracker.calibration`), computed
    when scraped so it is never out of date; the lag, start-up and window only once known."""

    def __init__(self, calibration: Callable[[], Calibration]) -> None:
        self._calibration = calibration

    def collect(self) -> Iterator[Metric]:
        servers, samples, fallback, lag, startup, window = self._families()
        found = self._calibration()
        for node, curve in sorted(found.curves.items()):
            servers.add_metric([node], curve.servers)
            samples.add_metric([node], curve.samples)
            fallback.add_metric([node], 1 if curve.fallback else 0)
        for family, value in ((lag, found.metric_lag), (startup, found.startup)):
            if value is not None:
                family.add_metric([], value)
        if found.window is not None:
            window.add_metric([], found.window)
        yield from (servers, samples, fallback, lag, startup, window)

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, ...]:
        return (
            GaugeMetricFamily(
                "tas_extender_pressure_curve_servers",
                "A node's learned pressure curve, as herd control reads it: its effective "
                "server count (Erlang C at its utilization; its cores on the fallback).",
                labels=["node"],
            ),
            GaugeMetricFamily(
                "tas_extender_pressure_curve_samples",
                "The informative (utilization, PSI) samples a node's curve is fitted on.",
                labels=["node"],
            ),
            GaugeMetricFamily(
                "tas_extender_pressure_curve_fallback",
                "1 while a node has too few samples and the shared model stands for it.",
                labels=["node"],
            ),
            GaugeMetricFamily(
                "tas_extender_observed_metric_lag_seconds",
                "The 90th percentile of the estimated metrics' age when read (their own "
                "sample times), one observation per refresh.",
            ),
            GaugeMetricFamily(
                "tas_extender_observed_startup_seconds",
                "The 90th percentile of recently placed pods' start-up (bind to Ready).",
            ),
            GaugeMetricFamily(
                "tas_extender_estimate_window_seconds",
                "Herd control's window in force: a placement counts until its node's sample "
                "time passes its bind time plus this (it follows the observed lag and "
                "start-up, within the operator's limits).",
            ),
        )
