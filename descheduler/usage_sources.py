"""Where the descheduler reads real usage: the `metricsCollector` and `metricsProviders` of a
DeschedulerPolicy, as upstream spells them.

`KubernetesMetrics` is the metrics server (metrics.k8s.io); `Prometheus` names one Prometheus by
its `url`, which LowNodeUtilization's `metricsUtilization.prometheus.query` reads. A Prometheus
provider authenticates with the descheduler's own ServiceAccount token, as upstream does without
`authToken`; `authToken.secretReference` is not supported (it would need read access to
Secrets). Every problem is noted on the reader with its path, like every other field.
"""

from __future__ import annotations

from collections.abc import Sequence

from descheduler.args import FieldReader
from descheduler.plugins import low_node_utilization
from descheduler.profiles import Profile


def parse_metrics_providers(r: FieldReader) -> tuple[bool, str | None]:
    """Whether the metrics server is a source, and the Prometheus URL (None: none)."""
    collector = r.child("metricsCollector")
    metrics_server = collector.boolean("enabled", False)
    collector.finish()
    prometheus: str | None = None
    for p in r.each("metricsProviders"):
        source = p.choice("source", ("KubernetesMetrics", "Prometheus"))
        settings = p.child("prometheus")
        url = settings.string("url")
        token = settings.child("authToken")
        if token.raw:
            token.problem(
                token.path,
                "not supported: the descheduler's ServiceAccount token is used "
                "(/var/run/secrets/kubernetes.io/serviceaccount/token)",
            )
        token.get("secretReference")
        token.finish()
        settings.finish()
        p.finish()
        if not source:
            p.problem(p.at("source"), "is required: KubernetesMetrics or Prometheus")
        elif source == "KubernetesMetrics":
            if metrics_server:
                p.problem(p.path, "KubernetesMetrics is configured twice")
            metrics_server = True
        else:
            if not url:
                p.problem(settings.at("url"), "is required with source Prometheus")
            elif prometheus is not None:
                p.problem(p.path, "only one Prometheus provider is supported")
            prometheus = url or None
    return metrics_server, prometheus


def check_usage_sources(
    profiles: Sequence[Profile], prometheus: str | None, r: FieldReader
) -> None:
    """A plugin that reads Prometheus needs a Prometheus provider."""
    for index, profile in enumerate(profiles):
        if not profile.enables(low_node_utilization.PLUGIN):
            continue
        args = profile.args_of(low_node_utilization.PLUGIN)
        if args.metrics_source is low_node_utilization.MetricsSource.PROMETHEUS and not prometheus:
            r.problem(
                f"profiles[{index}]",
                "LowNodeUtilization reads Prometheus: add metricsProviders: "
                "[{source: Prometheus, prometheus: {url: ...}}]",
            )
