"""The Prometheus source's queries and its reading of HTTP API answers.

The real server is exercised in test_integration.py; here an httpx MockTransport answers with
the API's JSON to cover what a healthy server rarely says. Covers: the name-convention query
with sample times, derived and configured PromQL, node names from labels (port stripped, an
explicit node label before `instance`, configurable label; by address: test_node_identity.py),
sample time versus evaluation time, duplicate series, error answers (API errors, non-vector
results, unreachable server), a warning Prometheus adds to an answer logged once however often
the query runs, and a token file that vanishes failing the fetch instead of the refresh thread.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tas.adapters.metrics.prometheus import (
    PrometheusClient,
    PrometheusSource,
    open_prometheus,
    strip_port,
)
from tas.metrics.config import MetricsConfig
from tas.metrics.source import Sample
from tas.types import MetricName

HEALTH = MetricName("health_metric")


def answering(reply: Callable[[str], Any], status: int = 200) -> httpx.Client:
    def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/prom/api/v1/query"
        return httpx.Response(status, json=reply(request.url.params["query"]))

    return httpx.Client(transport=httpx.MockTransport(handle))


def vector(*series: tuple[dict[str, str], float, float]) -> dict[str, Any]:
    result = [{"metric": labels, "value": [at, str(v)]} for labels, at, v in series]
    return {"status": "success", "data": {"resultType": "vector", "result": result}}


def source(client: httpx.Client, **options: Any) -> PrometheusSource:
    return PrometheusSource(PrometheusClient("http://prom.test/prom/", client=client), **options)


def test_a_convention_query_reads_node_prefixed_series_and_their_sample_times() -> None:
    query, timed = source(answering(lambda _: vector())).query_for(HEALTH)
    assert timed
    assert query == (
        'label_replace(node_health_metric or health_metric, "tas_field", "value", "__name__", '
        '".*") or label_replace(timestamp(node_health_metric) or timestamp(health_metric), '
        '"tas_field", "timestamp", "__name__", ".*")'
    )


def test_a_metric_name_promql_cannot_write_bare_is_quoted() -> None:
    query, _ = source(answering(lambda _: vector())).query_for(MetricName("gpu-busy"))
    assert '{__name__="gpu-busy"}' in query
    assert '{__name__="node_gpu-busy"}' in query


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        pytest.param("cpu_pressure", "rate(node_pressure_cpu_waiting_seconds_total[1m])", id="cpu"),
        pytest.param("io_pressure", "rate(node_pressure_io_waiting_seconds_total[1m])", id="io"),
        pytest.param(
            "memory_pressure", "rate(node_pressure_memory_waiting_seconds_total[1m])", id="mem"
        ),
        pytest.param(
            "cpu_utilization",
            '1 - avg without (cpu, mode) (rate(node_cpu_seconds_total{mode="idle"}[1m]))',
            id="cpu-util",
        ),
        pytest.param(
            "memory_utilization",
            "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
            id="mem-util",
        ),
    ],
)
def test_derived_metrics_are_promql_over_node_exporter_series(metric: str, expected: str) -> None:
    assert source(answering(lambda _: vector())).query_for(MetricName(metric)) == (expected, False)


def test_configured_promql_overrides_the_convention_and_the_derived_query() -> None:
    promql = {MetricName("cpu_pressure"): "my_psi", HEALTH: "my_health"}
    prometheus = source(answering(lambda _: vector()), promql=promql)
    assert prometheus.query_for(MetricName("cpu_pressure")) == ("my_psi", False)
    assert prometheus.query_for(HEALTH) == ("my_health", False)


def test_values_pair_with_their_sample_times_by_node() -> None:
    answer = vector(
        ({"__name__": "node_health_metric", "instance": "a:9100", "tas_field": "value"}, 50, 0),
        ({"instance": "a:9100", "tas_field": "timestamp"}, 50, 41.5),
        ({"__name__": "health_metric", "instance": "b", "tas_field": "value"}, 50, 2),
        ({"instance": "b", "tas_field": "timestamp"}, 50, 42),
    )
    fetched = source(answering(lambda _: answer)).fetch(frozenset({HEALTH}))
    assert fetched.columns == {HEALTH: {"a": Sample(0.0, 41.5), "b": Sample(2.0, 42.0)}}
    assert fetched.errors == {}
    assert fetched.ok == {HEALTH}


def test_a_computed_metric_is_as_old_as_its_evaluation() -> None:
    answer = vector(({"instance": "a:9100", "job": "node"}, 77.25, 0.5))
    fetched = source(answering(lambda _: answer)).fetch(frozenset({MetricName("cpu_pressure")}))
    assert fetched.columns == {"cpu_pressure": {"a": Sample(0.5, 77.25)}}


@pytest.mark.parametrize(
    ("labels", "node_label", "node"),
    [
        pytest.param({"instance": "a:9100"}, "instance", "a", id="instance-port-stripped"),
        pytest.param({"instance": "[::1]:9100"}, "instance", "::1", id="ipv6"),
        pytest.param(
            {"instance": "10.0.0.1:9100", "node": "a"}, "instance", "a", id="node-label-first"
        ),
        pytest.param({"instance": "10.0.0.1:9100"}, "instance", "10.0.0.1", id="ip-as-before"),
        pytest.param({"node": "b"}, "instance", "b", id="node-fallback"),
        pytest.param({"kubernetes_node": "c"}, "instance", "c", id="kubernetes-node-fallback"),
        pytest.param({"instance": "x:1", "host": "d"}, "host", "d", id="configured-label"),
    ],
)
def test_the_node_comes_from_a_label(labels: dict[str, str], node_label: str, node: str) -> None:
    answer = vector((labels, 5, 1))
    prometheus = source(answering(lambda _: answer), node_label=node_label)
    fetched = prometheus.fetch(frozenset({MetricName("cpu_pressure")}))
    assert set(fetched.columns[MetricName("cpu_pressure")]) == {node}


def test_series_without_a_node_label_and_non_finite_values_are_dropped() -> None:
    answer = vector(({"job": "x"}, 5, 1), ({"instance": "a"}, 5, float("nan")))
    fetched = source(answering(lambda _: answer)).fetch(frozenset({MetricName("cpu_pressure")}))
    assert fetched.columns == {"cpu_pressure": {}}


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [
        pytest.param(
            400,
            {"status": "error", "errorType": "bad_data", "error": "parse error"},
            "for 'cpu_pressure_q': HTTP 400 (bad_data): parse error",
            id="api-error",
        ),
        pytest.param(
            200,
            {"status": "success", "data": {"resultType": "scalar", "result": [1, "1"]}},
            "for 'cpu_pressure_q': gives a scalar, not one value per series",
            id="scalar",
        ),
        pytest.param(
            200,
            {"status": "success", "data": {"resultType": "vector", "result": [{"metric": {}}]}},
            "malformed series",
            id="malformed",
        ),
    ],
)
def test_an_error_answer_fails_that_metric_only(
    status: int, body: dict[str, Any], message: str
) -> None:
    def reply(query: str) -> Any:
        return body if query == "cpu_pressure_q" else vector(({"instance": "a"}, 5, 1))

    promql = {MetricName("cpu_pressure"): "cpu_pressure_q", HEALTH: "health_q"}
    fetched = source(answering(reply, status), promql=promql).fetch(
        frozenset({MetricName("cpu_pressure"), HEALTH})
    )
    assert set(fetched.columns) == {HEALTH}
    assert message in fetched.errors["cpu_pressure"]


def test_an_unreachable_server_fails_every_metric() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.Client(transport=httpx.MockTransport(refuse))
    fetched = source(client).fetch(frozenset({HEALTH}))
    assert fetched.columns == {}
    assert "connection refused" in fetched.errors[HEALTH]


def test_a_non_json_answer_is_an_error_not_a_crash() -> None:
    client = httpx.Client(
        transport=httpx.MockTransport(lambda _: httpx.Response(502, text="<html>bad gateway"))
    )
    fetched = source(client).fetch(frozenset({HEALTH}))
    assert "HTTP 502" in fetched.errors[HEALTH]
    json.dumps(fetched.errors)  # errors are plain strings, safe to log and export


def test_a_prometheus_warning_is_logged_once_not_every_sync_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answer = vector(({"instance": "a"}, 5, 1))
    answer["warnings"] = ["PromQL info: metric might not be a counter"]
    prometheus = source(answering(lambda _: answer))
    for _ in range(3):
        fetched = prometheus.fetch(frozenset({MetricName("cpu_pressure")}))
        assert fetched.columns == {"cpu_pressure": {"a": Sample(1.0, 5.0)}}
    logged = [r.getMessage() for r in caplog.records if "might not be a counter" in r.getMessage()]
    assert len(logged) == 1


def test_a_token_file_that_vanishes_fails_the_fetch_not_the_caller(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("t\n")
    client = open_prometheus(
        "https://prom.test/prom/",
        config=MetricsConfig(bearer_token_file=token),
        transport=httpx.MockTransport(lambda _: httpx.Response(200, json=vector())),
    )
    prometheus = PrometheusSource(client)
    assert prometheus.fetch(frozenset({HEALTH})).errors == {}
    token.unlink()
    fetched = prometheus.fetch(frozenset({HEALTH}))
    assert "token" in fetched.errors[HEALTH]


@pytest.mark.parametrize(
    ("address", "host"),
    [
        pytest.param("node-a:9100", "node-a", id="name-port"),
        pytest.param("node-a", "node-a", id="name"),
        pytest.param("[fe80::1]:9100", "fe80::1", id="ipv6-port"),
        pytest.param("fe80::1", "fe80::1", id="ipv6-bare"),
        pytest.param("a:b", "a:b", id="non-numeric-port"),
    ],
)
def test_strip_port(address: str, host: str) -> None:
    assert strip_port(address) == host
