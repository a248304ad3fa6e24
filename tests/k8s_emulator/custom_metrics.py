"""The custom metrics API (`custom.metrics.k8s.io`) as prometheus-adapter serves it, emulated.

On a cluster the API server authorizes the request itself (`rbac.py` does that here, before this
module answers), then the aggregator proxies it to the adapter. So what is modelled is only the
adapter's answer for node metrics, the one shape the `custom-metrics` source reads
(tas/adapters/metrics/custom_metrics.py): the APIGroup at `/apis/custom.metrics.k8s.io`, and
`/apis/custom.metrics.k8s.io/v1beta1/nodes/<name or *>/<metric>` as a v1beta1 MetricValueList,
one item per node that has the metric, stamped now (as the adapter stamps Prometheus's instant
query). An unknown metric or node is the adapter's 404. The wire format is
k8s.io/metrics pkg/apis/custom_metrics/v1beta1 types.go (MetricValue, MetricValueList).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from tests.k8s_emulator.store import ApiError

GROUP = "custom.metrics.k8s.io"
VERSION = "v1beta1"
PREFIX = f"/apis/{GROUP}"


def serves(path: str) -> bool:
    return path.rstrip("/") == PREFIX or path.startswith(f"{PREFIX}/")


def answer(path: str, values: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """The answer to a GET of `path`; `values` is metric -> node -> quantity."""
    parts = [p for p in path.removeprefix(PREFIX).split("/") if p]
    if not parts:
        group_version = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": GROUP,
            "versions": [group_version],
            "preferredVersion": group_version,
        }
    if len(parts) != 4 or parts[0] != VERSION or parts[1] != "nodes":
        raise _not_found()
    _, _, node, metric = parts
    column = values.get(metric)
    if column is None or (node != "*" and node not in column):
        raise _not_found()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "kind": "MetricValueList",
        "apiVersion": f"{GROUP}/{VERSION}",
        "metadata": {},
        "items": [
            {
                "describedObject": {"kind": "Node", "name": name, "apiVersion": "/v1"},
                "metricName": metric,
                "timestamp": stamp,
                "value": value,
            }
            for name, value in sorted(column.items())
            if node in ("*", name)
        ],
    }


def _not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")
