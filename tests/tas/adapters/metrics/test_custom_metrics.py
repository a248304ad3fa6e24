"""The custom-metrics source against an HTTP server that speaks the custom metrics API.

The kubernetes client is real (`Configuration(host=...)` + `ApiClient`); only the API server is
a small one started here on 127.0.0.1. Covers: discovery of the preferred version (v1beta1 and
v1beta2), MetricValueList items to node samples (quantities, timestamps, non-node objects),
the bearer token, a metric the adapter does not serve, and an API group that is not there.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from tas.adapters.metrics.custom_metrics import CustomMetricsSource
from tas.metrics.source import Sample
from tas.types import MetricName

HEALTH = MetricName("health_metric")
STAMP = "2026-01-02T03:04:05Z"
STAMP_SECONDS = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).timestamp()


class FakeApiServer(ThreadingHTTPServer):
    preferred: str | None = "v1beta1"
    metrics: dict[str, list[tuple[str, str, str]]]  # metric -> (kind, name, value)
    authorizations: list[str | None]


class Handler(BaseHTTPRequestHandler):
    server: FakeApiServer

    def do_GET(self) -> None:
        self.server.authorizations.append(self.headers.get("Authorization"))
        group = "/apis/custom.metrics.k8s.io"
        if self.path == group and self.server.preferred:
            versions = [
                {"groupVersion": f"custom.metrics.k8s.io/{v}", "version": v}
                for v in ("v1beta1", "v1beta2")
            ]
            self.reply(
                200,
                {
                    "kind": "APIGroup",
                    "apiVersion": "v1",
                    "name": "custom.metrics.k8s.io",
                    "versions": versions,
                    "preferredVersion": {"version": self.server.preferred},
                },
            )
            return
        prefix = f"{group}/{self.server.preferred}/nodes/*/"
        metric = self.path[len(prefix) :] if self.path.startswith(prefix) else None
        if metric not in self.server.metrics:
            self.reply(
                404,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": "the server could not find the requested resource",
                    "reason": "NotFound",
                    "code": 404,
                },
            )
            return
        self.reply(
            200, metric_value_list(self.server.preferred or "", metric, self.server.metrics[metric])
        )

    def reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def metric_value_list(version: str, metric: str, items: list[tuple[str, str, str]]) -> Any:
    def item(kind: str, name: str, value: str) -> dict[str, Any]:
        described = {"kind": kind, "name": name, "apiVersion": "/v1"}
        if version == "v1beta1":
            return {
                "describedObject": described,
                "metricName": metric,
                "timestamp": STAMP,
                "value": value,
            }
        return {
            "describedObject": described,
            "metric": {"name": metric},
            "timestamp": STAMP,
            "value": value,
        }

    return {
        "kind": "MetricValueList",
        "apiVersion": f"custom.metrics.k8s.io/{version}",
        "metadata": {},
        "items": [item(*i) for i in items],
    }


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    httpd = FakeApiServer(("127.0.0.1", 0), Handler)
    httpd.metrics = {}
    httpd.authorizations = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def api_client(server: FakeApiServer, token: str | None = None) -> client.ApiClient:
    configuration = client.Configuration(host=f"http://127.0.0.1:{server.server_address[1]}")
    if token:
        configuration.api_key = {"authorization": token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(configuration)


@pytest.mark.parametrize("version", [pytest.param(v, id=v) for v in ("v1beta1", "v1beta2")])
def test_node_values_are_read_from_the_preferred_version(
    server: FakeApiServer, version: str
) -> None:
    server.preferred = version
    server.metrics = {
        "health_metric": [
            ("Node", "a", "0"),
            ("Node", "b", "2"),
            ("Node", "c", "1500m"),
            ("Pod", "p", "9"),
        ]
    }
    source = CustomMetricsSource(api_client(server))
    fetched = source.fetch(frozenset({HEALTH}))
    source.close()
    assert fetched.errors == {}
    assert fetched.columns == {
        HEALTH: {
            "a": Sample(0.0, STAMP_SECONDS),
            "b": Sample(2.0, STAMP_SECONDS),
            "c": Sample(1.5, STAMP_SECONDS),
        }
    }


def test_the_clusters_bearer_token_is_sent(server: FakeApiServer) -> None:
    server.metrics = {"health_metric": [("Node", "a", "1")]}
    source = CustomMetricsSource(api_client(server, token="s3cret"))
    source.fetch(frozenset({HEALTH}))
    source.close()
    assert set(server.authorizations) == {"Bearer s3cret"}


def test_a_metric_the_adapter_does_not_serve_fails_alone(server: FakeApiServer) -> None:
    server.metrics = {"health_metric": [("Node", "a", "1")]}
    source = CustomMetricsSource(api_client(server))
    fetched = source.fetch(frozenset({HEALTH, MetricName("missing")}))
    source.close()
    assert fetched.columns == {HEALTH: {"a": Sample(1.0, STAMP_SECONDS)}}
    assert "HTTP 404" in fetched.errors["missing"]


def test_a_missing_api_group_is_a_failure_retried_next_time(server: FakeApiServer) -> None:
    server.preferred = None
    source = CustomMetricsSource(api_client(server))
    fetched = source.fetch(frozenset({HEALTH}))
    assert fetched.columns == {}
    assert "HTTP 404" in fetched.errors["custom.metrics.k8s.io"]
    server.preferred = "v1beta2"
    server.metrics = {"health_metric": [("Node", "a", "1")]}
    assert source.fetch(frozenset({HEALTH})).columns == {HEALTH: {"a": Sample(1.0, STAMP_SECONDS)}}
    source.close()
