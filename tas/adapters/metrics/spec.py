"""`--metrics <kind>:<where>`: from a flag to a running metric view.

The single place that knows every source kind, so the components only say `open_metric_view`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from prometheus_client import CollectorRegistry

from tas.adapters.metrics.custom_metrics import CustomMetricsSource
from tas.adapters.metrics.node_exporter import NodeExporterSource
from tas.adapters.metrics.prometheus import PrometheusSource, metrics_http_client, open_prometheus
from tas.adapters.metrics.textfile import TextfileSource
from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.config import MetricsConfig, load_metrics_config
from tas.metrics.errors import MetricSourceError
from tas.metrics.node_identity import AddressBook, NodeIdentity
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.source import MetricSource
from tas.types import NodeName

FORMS = (
    "textfile:<dir>",
    "node-exporter:<node>=<url>,...",
    "prometheus:<url>",
    "custom-metrics",
)


def open_metric_view(
    spec: str,
    *,
    sync_period: float = 2.0,
    max_age: float | None = None,
    config_file: Path | None = None,
    registry: CollectorRegistry | None = None,
    clock: Clock = SYSTEM_CLOCK,
    transport: httpx.BaseTransport | None = None,
    kube_api_client: Any = None,
    node_addresses: AddressBook | None = None,
) -> RefreshingMetricView:
    """A view over the source `spec` names; call `start()` to refresh in the background.

    `transport` replaces the HTTP transport of the HTTP sources; `kube_api_client` (a
    `kubernetes.client.ApiClient`) the cluster connection of `custom-metrics`;
    `node_addresses` the nodes' addresses (the component's Node cache), which map a
    Prometheus series whose `instance` is an address to its node (`tas.metrics.node_identity`).
    """
    config = load_metrics_config(config_file)
    identity = NodeIdentity(
        node_label=config.node_label, addresses=node_addresses, registry=registry
    )
    source = open_source(
        spec,
        config=config,
        clock=clock,
        transport=transport,
        kube_api_client=kube_api_client,
        identity=identity,
    )
    try:
        return RefreshingMetricView(
            source, sync_period=sync_period, max_age=max_age, registry=registry, clock=clock
        )
    except ValueError as error:
        source.close()
        raise MetricSourceError(str(error)) from error


def open_source(
    spec: str,
    *,
    config: MetricsConfig,
    clock: Clock = SYSTEM_CLOCK,
    transport: httpx.BaseTransport | None = None,
    kube_api_client: Any = None,
    identity: NodeIdentity | None = None,
) -> MetricSource:
    kind, _, where = spec.strip().partition(":")
    if kind == "textfile" and where:
        return TextfileSource(Path(where))
    if kind == "prometheus" and where:
        url = _http_url(where, spec)
        return PrometheusSource(
            open_prometheus(url, config=config, transport=transport),
            promql=config.promql,
            node_label=config.node_label,
            rate_window=config.rate_window,
            identity=identity,
        )
    if kind == "node-exporter" and where:
        targets = _node_targets(where, spec)
        return NodeExporterSource(
            targets,
            client=metrics_http_client(config, transport, urls=targets.values()),
            clock=clock,
        )
    if kind == "custom-metrics" and not where:
        api = kube_api_client if kube_api_client is not None else _kube_api_client()
        return CustomMetricsSource(api, timeout=config.timeout_seconds)
    raise _bad(spec, "unknown form")


def _bad(spec: str, why: str) -> MetricSourceError:
    return MetricSourceError(f"--metrics {spec!r}: {why}; expected one of: {', '.join(FORMS)}")


def _http_url(text: str, spec: str) -> str:
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as error:
        raise _bad(spec, f"bad URL {text!r} ({error})") from error
    if url.scheme not in ("http", "https") or not url.host:
        raise _bad(spec, f"{text!r} is not an http(s) URL")
    return text


def _node_targets(text: str, spec: str) -> dict[NodeName, str]:
    targets: dict[NodeName, str] = {}
    for item in text.split(","):
        node, equals, url = item.strip().partition("=")
        if not equals or not node.strip():
            raise _bad(spec, f"{item!r} is not <node>=<url>")
        if NodeName(node.strip()) in targets:
            raise _bad(spec, f"node {node.strip()!r} appears twice")
        targets[NodeName(node.strip())] = _http_url(url.strip(), spec)
    return targets


def _kube_api_client() -> Any:
    """The process's Kubernetes connection when none was given
    (`tas.adapters.cluster.kubeconfig`)."""
    from tas.adapters.cluster.kubeconfig import KubeConfigError, load_api_client

    try:
        return load_api_client()
    except KubeConfigError as error:
        raise MetricSourceError(f"custom-metrics: {error}") from error
