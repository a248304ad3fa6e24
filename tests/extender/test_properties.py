"""Properties of filter and prioritize over random policies, metric values and candidates,
checked through a real server, and a fuzzer that throws arbitrary requests at it.

Covered: filter answers a subset of the candidates (in their order, in the form asked), every
removed node has a reason, and kept plus removed are exactly the candidates; prioritize gives
every candidate exactly one integer score in 0..10; no method, path, header or body (arbitrary
bytes, arbitrary JSON, damaged valid requests) gets a 5xx, and every client error on a verb
carries a JSON `Error`.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.metrics.static import StaticMetricView
from tas.policies.model import Operator, parse_policy
from tas.rules import ScoreMode
from tests.builders import policy_document, rule
from tests.extender.support import (
    DEMO_NAMESPACE,
    RunningExtender,
    args_body,
    example_node,
    running_extender,
)

NODES = [f"n{i}" for i in range(8)]
METRICS = ["m1", "m2"]


@pytest.fixture(scope="module")
def view() -> StaticMetricView:
    return StaticMetricView()


@pytest.fixture(scope="module")
def extender(view: StaticMetricView) -> Iterator[RunningExtender]:
    # Ready from the start (its policies loaded, none of them yet), whichever test runs first:
    # an extender not ready yet answers /readyz with a 503 by design.
    with running_extender(view=view, policies=[]) as running:
        yield running


rules = st.builds(
    rule,
    st.sampled_from(METRICS),
    st.sampled_from([o.value for o in Operator]),
    st.integers(-2, 12),
)


@st.composite
def policies(draw: st.DrawFn) -> dict[str, Any]:
    strategies: dict[str, Any] = {}
    if draw(st.booleans()):
        operator = draw(st.sampled_from(["anyOf", "allOf", ""]))
        strategies["dontschedule"] = (operator, draw(st.lists(rules, min_size=1, max_size=3)))
    if draw(st.booleans()):
        strategies["scheduleonmetric"] = draw(st.lists(rules, min_size=1, max_size=2))
    return policy_document("demo-policy", namespace=DEMO_NAMESPACE, **strategies)


columns = st.dictionaries(
    st.sampled_from(METRICS),
    st.dictionaries(st.sampled_from(NODES), st.integers(-2, 12).map(float)),
)


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    policy=policies(),
    values=columns,
    candidates=st.lists(st.sampled_from(NODES), unique=True, max_size=8),
    full_nodes=st.booleans(),
    mode=st.sampled_from(list(ScoreMode)),
)
def test_filter_keeps_a_subset_with_reasons_and_prioritize_scores_every_candidate(
    extender: RunningExtender,
    view: StaticMetricView,
    policy: dict[str, Any],
    values: dict[str, dict[str, float]],
    candidates: list[str],
    full_nodes: bool,
    mode: ScoreMode,
) -> None:
    extender.store.replace([parse_policy(policy)])
    for metric in METRICS:
        view.set_column(metric, values.get(metric, {}))  # type: ignore[arg-type]
    if full_nodes:
        body = args_body(nodes=[example_node(n) for n in candidates])
    else:
        body = args_body(names=candidates)

    result = extender.post("filter", body).json()
    if full_nodes:
        assert result["NodeNames"] is None
        kept = [item["metadata"]["name"] for item in result["Nodes"]["items"]]
    else:
        assert result["Nodes"] is None
        kept = result["NodeNames"]
    failed = result["FailedAndUnresolvableNodes"]
    assert result["FailedNodes"] == {}
    assert kept == [n for n in candidates if n not in failed]
    assert set(failed) <= set(candidates)
    assert all(reason.startswith("demo-policy: ") for reason in failed.values())
    if "dontschedule" not in policy["spec"]["strategies"]:
        assert failed == {}

    scores = extender.post("prioritize", body).json()
    assert [entry["Host"] for entry in scores] == candidates
    assert all(type(e["Score"]) is int and 0 <= e["Score"] <= 10 for e in scores)


# -- fuzzing ----------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=15,
)
key_names = st.sampled_from(["Pod", "pod", "Nodes", "NODES", "NodeNames", "nodenames", "x"])
request_like = st.dictionaries(key_names, json_values, max_size=3).map(
    lambda d: json.dumps(d).encode()
)


@st.composite
def damaged(draw: st.DrawFn) -> bytes:
    body = json.dumps(
        args_body(names=["a", "b"]) if draw(st.booleans()) else args_body(nodes=[example_node("a")])
    ).encode()
    cut = draw(st.integers(0, len(body)))
    return body[:cut] + draw(st.binary(max_size=8)) + body[cut + draw(st.integers(0, 8)) :]


request_bodies = (
    st.binary(max_size=200)
    | json_values.map(lambda v: json.dumps(v).encode())
    | request_like
    | damaged()
)
content_types = st.sampled_from(
    [
        "application/json",
        "application/json; charset=utf-8",
        "APPLICATION/JSON",
        "application/merge-patch+json",
        "text/plain",
        "",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
    ]
)
paths = st.sampled_from(
    [
        "/scheduler/filter",
        "/scheduler/prioritize",
        "/scheduler/bind",
        "/healthz",
        "/readyz",
        "/metrics",
        "/debug/decisions",
        "/debug/decisions?limit=2",
        "/debug/decisions?limit=-1",
        "/",
    ]
)
methods = st.sampled_from(["POST", "GET", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"])


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(method=methods, path=paths, content_type=content_types, body=request_bodies)
def test_no_request_gets_a_server_error(
    extender: RunningExtender, method: str, path: str, content_type: str, body: bytes
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    response = extender.client.request(method, path, content=body, headers=headers)
    assert response.status_code < 500
    if path.startswith("/scheduler/") and 400 <= response.status_code < 500 and method != "HEAD":
        assert isinstance(response.json()["Error"], str)


@pytest.mark.parametrize(
    "declared",
    [pytest.param("5", id="shorter-than-the-body"), pytest.param("999999999999", id="huge")],
)
def test_a_wrong_content_length_gets_a_client_error(
    extender: RunningExtender, declared: str
) -> None:
    host, port = extender.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {declared}\r\n\r\n".encode()
            + b'{"Pod":{},"NodeNames":[]}'
        )
        answer = sock.recv(200)
    assert answer.startswith(b"HTTP/1.1 4"), answer
