"""No credential over plain HTTP, from any path
(tas.adapters.metrics.prometheus.plain_http_credential).

Covered: with a bearer token file in the metrics config, an `http://` URL fails at start-up with
`CredentialOverPlainHttpError` naming the URL, whichever path builds the client: the metric
view's `prometheus:` and `node-exporter:` sources, per-pod usage, and `open_prometheus`
itself; a user and password in an `http://` URL fails the same way, with or without a token
(the password is not repeated in the message); no request is sent in any of these. Over
`https://`, and over plain HTTP without any credential, the client is built; the descheduler's
`--allow-token-over-http` is the one explicit way to send a token over plain HTTP.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tas.adapters.metrics.pod_usage import open_pod_usage
from tas.adapters.metrics.prometheus import CredentialOverPlainHttpError, open_prometheus
from tas.adapters.metrics.spec import open_metric_view
from tas.metrics.config import MetricsConfig
from tas.metrics.errors import MetricSourceError

Open = Callable[[str, Path | None, httpx.BaseTransport], object]


def config_file(tmp_path: Path, token: Path | None) -> Path | None:
    if token is None:
        return None
    path = tmp_path / "metrics.yaml"
    path.write_text(f"prometheus:\n  bearer_token_file: {token}\n")
    return path


def metric_view(url: str, config: Path | None, transport: httpx.BaseTransport) -> object:
    view = open_metric_view(f"prometheus:{url}", config_file=config, transport=transport)
    view.stop()
    return view


def node_exporter(url: str, config: Path | None, transport: httpx.BaseTransport) -> object:
    view = open_metric_view(f"node-exporter:node-a={url}", config_file=config, transport=transport)
    view.stop()
    return view


def pod_usage(url: str, config: Path | None, transport: httpx.BaseTransport) -> object:
    from tas.metrics.config import load_metrics_config

    return open_pod_usage(
        url, config=load_metrics_config(config), max_age=30.0, transport=transport
    )


def prometheus(url: str, config: Path | None, transport: httpx.BaseTransport) -> object:
    from tas.metrics.config import load_metrics_config

    return open_prometheus(url, config=load_metrics_config(config), transport=transport)


PATHS = [
    pytest.param(metric_view, id="prometheus source"),
    pytest.param(node_exporter, id="node-exporter source"),
    pytest.param(pod_usage, id="pod usage"),
    pytest.param(prometheus, id="open_prometheus"),
]


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("secret-token\n")
    return path


@pytest.fixture
def sent() -> list[httpx.Request]:
    return []


@pytest.fixture
def transport(sent: list[httpx.Request]) -> httpx.MockTransport:
    def handle(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(
            200, json={"status": "success", "data": {"resultType": "vector", "result": []}}
        )

    return httpx.MockTransport(handle)


@pytest.mark.parametrize("open_path", PATHS)
def test_a_bearer_token_with_an_http_url_is_refused_at_start_up(
    open_path: Open,
    token: Path,
    tmp_path: Path,
    transport: httpx.MockTransport,
    sent: list[httpx.Request],
) -> None:
    url = "http://prometheus-k8s.monitoring.svc:9090"
    with pytest.raises(CredentialOverPlainHttpError) as refused:
        open_path(url, config_file(tmp_path, token), transport)
    assert isinstance(refused.value, MetricSourceError)  # a start-up error, as a bad flag
    message = str(refused.value)
    assert f"the bearer token of {token}" in message
    assert "over plain HTTP" in message
    assert url in message
    assert "https://" in message  # says what to do
    assert sent == []


@pytest.mark.parametrize("open_path", PATHS)
@pytest.mark.parametrize("with_token", [False, True], ids=["no token", "and a token"])
def test_a_password_in_an_http_url_is_refused_at_start_up(
    open_path: Open,
    with_token: bool,
    token: Path,
    tmp_path: Path,
    transport: httpx.MockTransport,
    sent: list[httpx.Request],
) -> None:
    url = "http://admin:hunter2@prometheus.example:9090"
    with pytest.raises(CredentialOverPlainHttpError) as refused:
        open_path(url, config_file(tmp_path, token if with_token else None), transport)
    assert "user and password" in str(refused.value)
    assert "hunter2" not in str(refused.value)
    assert sent == []


@pytest.mark.parametrize("open_path", PATHS)
@pytest.mark.parametrize(
    ("url", "with_token"),
    [
        pytest.param("https://prometheus.example:9091", True, id="token over https"),
        pytest.param("https://u:p@prometheus.example:9091", False, id="password over https"),
        pytest.param("http://prometheus-k8s.monitoring.svc:9090", False, id="http, nothing sent"),
    ],
)
def test_without_a_credential_on_plain_http_the_client_is_built(
    open_path: Open,
    url: str,
    with_token: bool,
    token: Path,
    tmp_path: Path,
    transport: httpx.MockTransport,
) -> None:
    assert open_path(url, config_file(tmp_path, token if with_token else None), transport)


def test_only_an_explicit_allowance_sends_a_token_over_plain_http(
    token: Path, transport: httpx.MockTransport, sent: list[httpx.Request]
) -> None:
    client = open_prometheus(
        "http://prom.test",
        config=MetricsConfig(bearer_token_file=token),
        transport=transport,
        allow_plain_http=True,
    )
    client.vector("up")
    assert [r.headers["Authorization"] for r in sent] == ["Bearer secret-token"]
