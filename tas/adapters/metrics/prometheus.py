"""Prometheus over its HTTP API: the one client every Prometheus user in the project shares,
and the `prometheus:<url>` metric source built on it.

`open_prometheus(url, config=...)` is the only way a Prometheus client is made: the metric
view's source, per-pod usage (`tas.adapters.metrics.pod_usage`) and the descheduler's
`metricsUtilization` all get the metrics config's CA file, timeout and bearer token file (read
again on every query, as service-account tokens rotate on disk) from it. The client does the
I/O; `tas.metrics.promql_answer` reads what came back.

The source: one instant query per metric. Queries follow the name convention (`node_<metric>`,
else `<metric>`), the derived metrics' PromQL, or an expression configured for the metric. For
convention queries the answer carries each series' own sample time (`timestamp()`), not the
query time, so a target Prometheus can no longer scrape goes stale here too. Results map to
nodes as `tas.metrics.node_identity` says: an explicit node label (the configured one, `node`,
`kubernetes_node`) first, then `instance`, by node name or, for a component that watches
Nodes, by a node's address (kube-prometheus-stack's `IP:9100`).

No credential goes over plain HTTP, from any path: `plain_http_credential` is the one check,
made by `open_prometheus` and `metrics_http_client` (a bearer token file in the metrics config,
or a user and password in the URL, with an `http://` URL) and by the descheduler's
ServiceAccount-token client (`descheduler.usage`). Whoever sees the request on the way could
act with it, so start-up fails with `CredentialOverPlainHttpError` naming the URL.

Errors: `tas.metrics.errors.MetricSourceError` from `open_prometheus` (an unusable CA or token
file; `CredentialOverPlainHttpError`, a credential with a plain HTTP URL);
`tas.metrics.errors.MetricFetchError` (`promql_answer.AnswerError` for an answer) from a query.
"""

from __future__ import annotations

import logging
import math
import os
import ssl
from collections.abc import Callable, Collection, Generator, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import httpx

from tas.metrics.config import MetricsConfig
from tas.metrics.errors import MetricFetchError, MetricSourceError
from tas.metrics.names import derived, derived_promql, promql_selector, series_names
from tas.metrics.node_identity import INSTANCE, NodeIdentity, explicit_labels
from tas.metrics.node_identity import strip_port as strip_port  # where callers find it
from tas.metrics.promql_answer import AnswerError, Matrix, Vector, read_answer, read_vector
from tas.metrics.source import Fetched, Sample
from tas.types import MetricName, NodeName

log = logging.getLogger(__name__)

A = TypeVar("A")

#: The label a convention query adds to tell a value from its sample time.
_FIELD = "tas_field"


class PrometheusClient:
    """Instant queries against one Prometheus; `client` carries its TLS, timeout and auth."""

    def __init__(self, url: str, *, client: httpx.Client) -> None:
        self.url = url
        self.query_url = url.rstrip("/") + "/api/v1/query"
        self._client = client
        self._warned: set[str] = set()

    def vector(self, query: str) -> Vector:
        """The instant vector `query` evaluates to now.

        Raises `MetricFetchError`: unreachable, timed out, an error answer or not a vector."""
        answer, _ = self._ask(self.query_url, {"query": query}, read_vector)
        for warning in answer.warnings:
            if warning not in self._warned:  # once each: a query is asked every sync period
                self._warned.add(warning)
                log.warning("Prometheus warns about %r: %s", query, warning)
        return answer

    def matrix(self, query: str, *, start: float, end: float, step: float) -> Matrix:
        """The range vector `query` evaluates to at each step from `start` to `end` (Unix
        seconds), as `/api/v1/query_range` answers it (`tas replay` reads history this way).

        Raises `MetricFetchError` as `vector` does, and when the answer is not a matrix."""
        url = self.url.rstrip("/") + "/api/v1/query_range"
        params = {"query": query, "start": repr(start), "end": repr(end), "step": repr(step)}
        answer, status_code = self._ask(url, params, read_answer)
        if not isinstance(answer, Matrix):
            raise AnswerError(
                f"gives a {type(answer).__name__.lower()}, not a range of values",
                status_code=status_code,
                where=f"{url} for {query!r}",
            )
        return answer

    def _ask(
        self, url: str, params: Mapping[str, str], read: Callable[[int, bytes], A]
    ) -> tuple[A, int]:
        """GET `url` with `params` (the query among them) and `read` its answer; the answer
        and its status code. A request or an answer that fails is a `MetricFetchError` naming
        the URL (and the query)."""
        try:
            response = self._client.get(url, params=params)
        except (httpx.HTTPError, OSError) as error:
            # OSError: the bearer token file, read per request, went missing.
            raise MetricFetchError(f"{url}: {error}") from error
        try:
            return read(response.status_code, response.content), response.status_code
        except AnswerError as error:
            raise error.at(f"{url} for {params['query']!r}") from error

    def close(self) -> None:
        self._client.close()


class CredentialOverPlainHttpError(MetricSourceError):
    """A credential (a bearer token, a user and password) would be sent over plain HTTP."""


def plain_http_credential(url: str, *, credential: str | None) -> str | None:
    """Why sending to `url` would give a credential away, or None when it would not: the URL
    is `http://` and it carries a user and password, or `credential` (what a client would add
    to every request, e.g. "the bearer token of <file>") is set. The one check every client
    that sends a credential makes before it is built."""
    parts = urlsplit(url)
    if parts.scheme.lower() != "http":
        return None
    if parts.username is not None or parts.password is not None:
        return f"refusing to send the user and password in {parts.hostname} over plain HTTP"
    if credential is not None:
        return f"refusing to send {credential} over plain HTTP to {url}"
    return None


def open_prometheus(
    url: str,
    *,
    config: MetricsConfig,
    transport: httpx.BaseTransport | None = None,
    allow_plain_http: bool = False,
) -> PrometheusClient:
    """The client every Prometheus user gets: the metrics config's CA, timeout and token.
    `allow_plain_http` lets the token go over plain HTTP (the descheduler's
    `--allow-token-over-http`, asked for by name)."""
    client = metrics_http_client(config, transport, urls=(url,), allow_plain_http=allow_plain_http)
    return PrometheusClient(url, client=client)


def metrics_http_client(
    config: MetricsConfig,
    transport: httpx.BaseTransport | None = None,
    *,
    urls: Collection[str],
    allow_plain_http: bool = False,
) -> httpx.Client:
    """An HTTP client as the metrics config describes (Prometheus's, and node-exporter's),
    for `urls`.

    `transport` replaces the network (tests). Raises `MetricSourceError` for a CA file that
    does not load and a token file that cannot be read, so a bad mount fails at startup, and
    `CredentialOverPlainHttpError` when one of `urls` would get a credential over plain HTTP."""
    credential = None
    if config.bearer_token_file is not None:
        credential = f"the bearer token of {config.bearer_token_file} (metrics config)"
    for url in urls:
        refused = plain_http_credential(url, credential=credential)
        if refused is not None and not allow_plain_http:
            raise CredentialOverPlainHttpError(
                f"{refused}: anyone on the way could use it. Give an https:// URL (with ca_file "
                "for a private CA), or no credential"
            )
    verify: ssl.SSLContext | bool = True
    if config.ca_file is not None:
        try:
            verify = ssl.create_default_context(cafile=str(config.ca_file))
        except (OSError, ssl.SSLError) as error:
            raise MetricSourceError(f"ca_file {config.ca_file}: {error}") from error
    auth = None
    if config.bearer_token_file is not None:
        if not os.access(config.bearer_token_file, os.R_OK):
            raise MetricSourceError(f"bearer_token_file {config.bearer_token_file}: unreadable")
        auth = BearerTokenFile(config.bearer_token_file)
    return httpx.Client(
        transport=transport, verify=verify, auth=auth, timeout=config.timeout_seconds
    )


class BearerTokenFile(httpx.Auth):
    """Reads the token on every request: service-account tokens are rotated on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.path.read_text(encoding="utf-8").strip()
        request.headers["Authorization"] = f"Bearer {token}"
        yield request


class PrometheusSource:
    kind = "prometheus"

    def __init__(
        self,
        prometheus: PrometheusClient,
        *,
        promql: Mapping[MetricName, str] | None = None,
        node_label: str = "instance",
        rate_window: str = "1m",
        identity: NodeIdentity | None = None,
    ) -> None:
        """`identity` maps series to nodes (by default by `node_label` and names alone, without
        the nodes' addresses)."""
        self.prometheus = prometheus
        self._promql = dict(promql or {})
        self._identity = identity or NodeIdentity(node_label=node_label)
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
                columns[name] = self._column(self.prometheus.vector(query), timed=timed)
            except MetricFetchError as error:
                errors[name] = str(error)
        return Fetched(columns=columns, errors=errors, ok=frozenset(columns))

    def _column(self, answer: Vector, *, timed: bool) -> dict[NodeName, Sample]:
        values: dict[NodeName, float] = {}
        times: dict[NodeName, float] = {}
        evaluated: dict[NodeName, float] = {}
        resolver = self._identity.resolver()
        for series in answer.series:
            sample_time = timed and series.labels.get(_FIELD) == "timestamp"
            node = resolver.node_of(series.labels, quiet=sample_time)
            if node is None:
                continue
            if sample_time:
                times[node] = series.value
            elif node not in values:  # two series for one node: the first one counts
                values[node], evaluated[node] = series.value, series.timestamp
        return {
            node: Sample(value, times.get(node, evaluated[node]))
            for node, value in values.items()
            if math.isfinite(value)
        }

    def close(self) -> None:
        self.prometheus.close()


def node_labels(node_label: str = INSTANCE) -> tuple[str, ...]:
    """The labels that may name a series' node, in the order they are read: the explicit node
    labels, the configured one first, then `instance` (by name only: `node_of`)."""
    return (*explicit_labels(node_label), INSTANCE)


def node_of(labels: Mapping[str, str], candidates: tuple[str, ...]) -> NodeName | None:
    """The node a series is about: the first of `candidates` it has, any `:port` removed
    (without the nodes' addresses; `tas.metrics.node_identity.NodeIdentity` uses them)."""
    for label in candidates:
        value = labels.get(label)
        if value:
            return NodeName(strip_port(value))
    return None
