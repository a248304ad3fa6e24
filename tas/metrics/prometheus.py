"""The `prometheus:<url>` source: one instant query per metric through the HTTP API.

Queries follow the name convention (`node_<metric>`, else `<metric>`), the derived metrics'
PromQL, or an expression configured for the metric. For convention queries the answer carries
each series' own sample time (`timestamp()`), not the query time, so a target Prometheus can no
longer scrape goes stale here too. Results map to nodes through a label (default `instance`,
with any `:port` removed; `node` and `kubernetes_node` serve when it is missing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import httpx

from tas.metrics.errors import MetricFetchError
from tas.metrics.names import derived, derived_promql, promql_selector, series_names
from tas.metrics.source import Fetched, Sample
from tas.types import MetricName, NodeName

#: The label a convention query adds to tell a value from its sample time.
_FIELD = "tas_field"
_FALLBACK_LABELS = ("node", "kubernetes_node")


class PrometheusSource:
    kind = "prometheus"

    def __init__(
        self,
        url: str,
        *,
        client: httpx.Client,
        promql: Mapping[MetricName, str] | None = None,
        node_label: str = "instance",
        rate_window: str = "1m",
    ) -> None:
        self.query_url = url.rstrip("/") + "/api/v1/query"
        self._client = client
        self._promql = dict(promql or {})
        self._labels = (node_label, *(label for label in _FALLBACK_LABELS if label != node_label))
        self._rate_window = rate_window

    def query_for(self, metric: MetricName) -> tuple[str, bool]:
        """The PromQL for a metric, and whether it also asks for the series' sample times."""
        if metric in self._promql:
            return self._promql[metric], False
        kind = derived(metric)
        if kind is not None:
            return derived_promql(kind, rate_window=self._rate_window), False
        selectors = [promql_selector(series) for series in series_names(metric)]
        value = " or ".join(selectors)
        times = " or ".join(f"timestamp({s})" for s in selectors)
        return (
            f'label_replace({value}, "{_FIELD}", "value", "__name__", ".*") or '
            f'label_replace({times}, "{_FIELD}", "timestamp", "__name__", ".*")'
        ), True

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        columns: dict[MetricName, dict[NodeName, Sample]] = {}
        errors: dict[str, str] = {}
        for name in sorted(names):
            query, timed = self.query_for(name)
            try:
                columns[name] = self._column(self._query(query), timed=timed)
            except MetricFetchError as error:
                errors[name] = str(error)
        return Fetched(columns=columns, errors=errors, ok=frozenset(columns))

    def _query(self, query: str) -> list[Any]:
        try:
            response = self._client.get(self.query_url, params={"query": query})
        except httpx.HTTPError as error:
            raise MetricFetchError(f"{self.query_url}: {error}") from error
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("status") != "success":
            detail = body.get("error") if isinstance(body, dict) else response.text[:200]
            raise MetricFetchError(
                f"{self.query_url}: HTTP {response.status_code} for {query!r}: {detail}"
            )
        data = body.get("data")
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            kind = data.get("resultType") if isinstance(data, dict) else None
            raise MetricFetchError(f"{query!r} gives a {kind}, not one value per node")
        result = data.get("result")
        if not isinstance(result, list):
            raise MetricFetchError(f"{self.query_url}: malformed answer for {query!r}")
        return result

    def _column(self, result: list[Any], *, timed: bool) -> dict[NodeName, Sample]:
        values: dict[NodeName, float] = {}
        times: dict[NodeName, float] = {}
        evaluated: dict[NodeName, float] = {}
        for series in result:
            try:
                labels: dict[str, str] = series["metric"]
                at, text = series["value"]
                number, at = float(text), float(at)
            except (KeyError, TypeError, ValueError) as error:
                raise MetricFetchError(f"malformed series {series!r}") from error
            node = self._node_of(labels)
            if node is None:
                continue
            if timed and labels.get(_FIELD) == "timestamp":
                times[node] = number
            elif node not in values:  # two series for one node: the first one counts
                values[node], evaluated[node] = number, at
        return {
            node: Sample(value, times.get(node, evaluated[node]))
            for node, value in values.items()
            if math.isfinite(value)
        }

    def _node_of(self, labels: Mapping[str, str]) -> NodeName | None:
        for label in self._labels:
            value = labels.get(label)
            if value:
                return NodeName(strip_port(value))
        return None

    def close(self) -> None:
        self._client.close()


def strip_port(address: str) -> str:
    """`node-a:9100` -> `node-a`, `[::1]:9100` -> `::1`; anything else as it is."""
    if address.startswith("["):
        host, bracket, _ = address[1:].partition("]")
        return host if bracket else address
    host, colon, port = address.rpartition(":")
    return host if colon and port.isdigit() and ":" not in host else address
