"""Opening a metric view from the `--metrics` flag and the metrics config file.

Covers: every accepted form, the error listing accepted forms for anything else, the default
max age, and config file validation (every problem listed at once).
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tas.adapters.metrics import open_metric_view
from tas.adapters.metrics.node_exporter import NodeExporterSource
from tas.adapters.metrics.prometheus import PrometheusSource
from tas.adapters.metrics.textfile import TextfileSource
from tas.metrics import MetricSourceError
from tas.metrics.config import MetricsConfig, load_metrics_config
from tas.types import MetricName


@pytest.mark.parametrize(
    ("spec", "source_type"),
    [
        pytest.param("textfile:run/metrics", TextfileSource, id="textfile"),
        pytest.param("prometheus:http://127.0.0.1:9090", PrometheusSource, id="prometheus"),
        pytest.param(
            "node-exporter:a=http://127.0.0.1:9100, b=http://127.0.0.1:9101/metrics",
            NodeExporterSource,
            id="node-exporter",
        ),
    ],
)
def test_each_accepted_form_opens_its_source(spec: str, source_type: type) -> None:
    view = open_metric_view(spec)
    try:
        assert isinstance(view.source, source_type)
    finally:
        view.stop()


def test_node_exporter_urls_without_a_path_mean_their_metrics_page() -> None:
    view = open_metric_view("node-exporter:a=http://127.0.0.1:9100,b=http://h:1/custom")
    assert isinstance(view.source, NodeExporterSource)
    assert view.source.targets == {"a": "http://127.0.0.1:9100/metrics", "b": "http://h:1/custom"}
    view.stop()


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        pytest.param("", "unknown form", id="empty"),
        pytest.param("textfile:", "unknown form", id="textfile-without-dir"),
        pytest.param("prometheus", "unknown form", id="prometheus-without-url"),
        pytest.param("prometheus:localhost:9090", "not an http", id="url-without-scheme"),
        pytest.param("node-exporter:a", "is not <node>=<url>", id="target-without-url"),
        pytest.param("node-exporter:=http://x", "is not <node>=<url>", id="target-without-node"),
        pytest.param("node-exporter:a=http://x,a=http://y", "appears twice", id="duplicate"),
        pytest.param("custom-metrics:foo", "unknown form", id="custom-metrics-with-arg"),
        pytest.param("influx:http://x", "unknown form", id="unknown-kind"),
    ],
)
def test_a_bad_spec_is_rejected_listing_the_accepted_forms(spec: str, why: str) -> None:
    with pytest.raises(MetricSourceError, match=why) as caught:
        open_metric_view(spec)
    assert "textfile:<dir>, node-exporter:<node>=<url>,..., prometheus:<url>, custom-metrics" in (
        str(caught.value)
    )
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize(
    ("sync_period", "max_age"),
    [pytest.param(2.0, 30.0, id="at-least-30s"), pytest.param(10.0, 50.0, id="five-periods")],
)
def test_max_age_defaults_to_five_sync_periods_and_at_least_30_seconds(
    sync_period: float, max_age: float
) -> None:
    assert open_metric_view("textfile:x", sync_period=sync_period).max_age == max_age


def test_a_non_positive_sync_period_is_a_source_error() -> None:
    with pytest.raises(MetricSourceError, match="sync period"):
        open_metric_view("textfile:x", sync_period=0)


def test_a_config_file_gives_promql_overrides_and_prometheus_access(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret\n")
    path = tmp_path / "metrics.yaml"
    path.write_text(
        f"""
promql:
  gpu_busy: avg by (instance) (DCGM_FI_DEV_GPU_UTIL) / 100
prometheus:
  node_label: node
  rate_window: 30s
  bearer_token_file: {token}
  timeout_seconds: 2
"""
    )
    assert load_metrics_config(path) == MetricsConfig(
        promql={"gpu_busy": "avg by (instance) (DCGM_FI_DEV_GPU_UTIL) / 100"},  # type: ignore[dict-item]
        node_label="node",
        rate_window="30s",
        bearer_token_file=token,
        timeout_seconds=2.0,
    )
    view = open_metric_view("prometheus:https://127.0.0.1:1", config_file=path)
    assert isinstance(view.source, PrometheusSource)
    assert view.source.query_for("gpu_busy")[0].startswith("avg by (instance)")  # type: ignore[arg-type]
    view.stop()


def test_every_config_problem_is_listed_at_once(tmp_path: Path) -> None:
    path = tmp_path / "metrics.yaml"
    path.write_text(
        """
promql:
  "bad name": up
  empty: ""
prometheus:
  node_label: "1x"
  rate_window: soon
  timeout_seconds: -1
  colour: blue
extra: 1
"""
    )
    with pytest.raises(MetricSourceError) as caught:
        load_metrics_config(path)
    message = str(caught.value)
    for problem in [
        "unknown key 'extra'",
        "metric name 'bad name'",
        "promql.empty: expected a PromQL expression",
        "node_label: '1x' is not a label name",
        "rate_window: 'soon'",
        "timeout_seconds: -1",
        "unknown key 'colour'",
    ]:
        assert problem in message


def test_an_unreadable_config_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(MetricSourceError, match="cannot read metrics config"):
        load_metrics_config(tmp_path / "missing.yaml")


def test_the_prometheus_bearer_token_is_read_from_its_file_on_every_request(
    tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    path = tmp_path / "metrics.yaml"
    path.write_text(f"prometheus:\n  bearer_token_file: {token}\n")
    seen: list[str | None] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("Authorization"))
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
        )

    token.write_text("first\n")
    view = open_metric_view(
        "prometheus:https://prom.test", config_file=path, transport=httpx.MockTransport(handle)
    )
    view.set_wanted([MetricName("health_metric")])
    view.refresh_once()
    token.write_text("rotated\n")
    view.refresh_once()
    view.stop()
    assert seen == ["Bearer first", "Bearer rotated"]


def test_a_missing_ca_file_is_a_source_error(tmp_path: Path) -> None:
    path = tmp_path / "metrics.yaml"
    path.write_text(f"prometheus:\n  ca_file: {tmp_path / 'missing.crt'}\n")
    with pytest.raises(MetricSourceError, match="ca_file"):
        open_metric_view("prometheus:https://prom.test", config_file=path)
