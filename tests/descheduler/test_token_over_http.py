"""The descheduler's ServiceAccount token never travels over plain HTTP unless asked.

In a cluster the descheduler reads the Prometheus its policy's `metricsProviders` names with
its ServiceAccount token (as upstream does without `authToken`). The token authenticates as the
descheduler, which may evict pods, to whoever sees it on the way. Covered:
- an http:// URL with a token present is refused at start, with a message that says why and
  what to do (`tas descheduler` turns it into exit 2);
- `--allow-token-over-http` (`allow_plain_http`) sends it anyway;
- an https:// URL, or no token (outside a cluster), is no reason to refuse.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from descheduler.usage import TokenOverPlainHttpError, service_account_prometheus


@pytest.fixture
def token(tmp_path: Path) -> Path:
    path = tmp_path / "token"
    path.write_text("eyJhbGciOi...")
    return path


def test_plain_http_with_a_token_is_refused_saying_what_to_do(token: Path) -> None:
    with pytest.raises(TokenOverPlainHttpError) as refused:
        service_account_prometheus("http://prometheus.monitoring:9090", token_file=token)
    message = str(refused.value)
    assert "over plain HTTP to http://prometheus.monitoring:9090" in message
    assert "https://" in message
    assert "--allow-token-over-http" in message


def test_plain_http_is_allowed_when_asked(token: Path) -> None:
    client = service_account_prometheus(
        "http://prometheus.monitoring:9090", token_file=token, allow_plain_http=True
    )
    client.close()


@pytest.mark.parametrize(
    ("url", "token_present"),
    [
        pytest.param("https://prometheus.monitoring:9090", True, id="https with a token"),
        pytest.param("http://127.0.0.1:9090", False, id="http without a token"),
    ],
)
def test_https_or_no_token_is_no_reason_to_refuse(
    url: str, token_present: bool, token: Path, tmp_path: Path
) -> None:
    client = service_account_prometheus(
        url, token_file=token if token_present else tmp_path / "none"
    )
    client.close()
