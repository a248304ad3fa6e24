"""The extender over a real uvicorn server, as kube-scheduler calls it.

Covered: the health-metric demo (filter and prioritize), both request forms with the example
Node objects and answers in the same form, case-insensitive keys with exact names on output,
FailedAndUnresolvableNodes versus the TAS-compatible FailedNodes, rank scores, pods without a
policy label, missing policies and policies without the strategy (HTTP 200, recorded), every
bad-input status (400, 413, 415, 405) with a JSON `Error`, large bodies through the scanner,
deep nesting and a syntax error hidden in one node of a large body (400, not 500 or a broken
answer), a failure inside the extender (a 500 with a JSON `Error`, counted, logged with the
pod), metric series bounded by the policies whatever pods say, and the side endpoints:
/healthz, /readyz, /metrics, /debug/decisions.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from extender.jsonscan import MAX_DEPTH
from extender.self_metrics import UNKNOWN_POLICY
from extender.settings import ExtenderSettings
from extender.wire import SCAN_THRESHOLD
from tas.metrics.static import StaticMetricView
from tas.policies.model import parse_policy
from tas.rules import ScoreMode
from tests.builders import policy_document, rule
from tests.extender.support import (
    DEMO_NAMESPACE,
    RunningExtender,
    args_body,
    example,
    example_node,
    health_policies,
    health_view,
    running_extender,
)
from tests.waiting import eventually

DEMO = {"A": 0.0, "B": 1.0, "C": 0.0}
EXAMPLE_DEMO = {"node-0": 0.0, "node-1": 1.0, "node-2": 0.0}
RESULT_KEYS = ["Nodes", "NodeNames", "FailedNodes", "FailedAndUnresolvableNodes", "Error"]


@pytest.fixture
def demo() -> Iterator[RunningExtender]:
    view = health_view({**DEMO, **EXAMPLE_DEMO})
    with running_extender(policies=health_policies(), view=view) as extender:
        yield extender


@pytest.fixture(scope="module")
def shared_demo() -> Iterator[RunningExtender]:
    """The demo for tests that only look at their own answers."""
    view = health_view({**DEMO, **EXAMPLE_DEMO})
    with running_extender(policies=health_policies(), view=view) as extender:
        yield extender


def test_health_demo_filter_keeps_a_and_c_and_says_why_b_fails(demo: RunningExtender) -> None:
    response = demo.post("filter", args_body(names=["A", "B", "C"]))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    result = response.json()
    assert list(result) == RESULT_KEYS
    assert result["NodeNames"] == ["A", "C"]
    assert result["Nodes"] is None
    assert result["FailedNodes"] == {}
    assert result["FailedAndUnresolvableNodes"] == {
        "B": "demo-policy: health_metric Equals 1 (value 1)"
    }
    assert result["Error"] == ""


def test_health_demo_prioritize_ranks_a_and_c_above_b(demo: RunningExtender) -> None:
    response = demo.post("prioritize", args_body(names=["A", "B", "C"]))
    assert response.status_code == 200
    scores = {entry["Host"]: entry["Score"] for entry in response.json()}
    assert [list(entry) for entry in response.json()] == [["Host", "Score"]] * 3
    assert scores["A"] == scores["C"] > scores["B"]
    assert all(0 <= s <= 10 for s in scores.values())


def test_the_nodes_example_is_answered_with_the_original_node_objects(
    demo: RunningExtender,
) -> None:
    request = example("nodes")
    result = demo.post("filter", request).json()
    assert result["NodeNames"] is None
    items = request["Nodes"]["items"]
    assert result["Nodes"]["items"] == [items[0], items[2]]
    assert result["Nodes"]["metadata"] == request["Nodes"]["metadata"]
    assert set(result["FailedAndUnresolvableNodes"]) == {"node-1"}


def test_the_nodenames_example_is_answered_with_names(demo: RunningExtender) -> None:
    result = demo.post("filter", example("nodenames")).json()
    assert result["Nodes"] is None
    assert result["NodeNames"] == ["node-0", "node-2"]


@pytest.mark.parametrize("form", ["nodes", "nodenames"])
def test_prioritize_scores_every_candidate_of_either_form_once(
    demo: RunningExtender, form: str
) -> None:
    hosts = [entry["Host"] for entry in demo.post("prioritize", example(form)).json()]
    assert hosts == ["node-0", "node-1", "node-2"]


def test_keys_are_matched_in_any_letter_case_and_answered_with_exact_names(
    demo: RunningExtender,
) -> None:
    pod = example("nodes")["Pod"]
    pod["METADATA"] = pod.pop("metadata")
    pod["METADATA"]["Labels"] = pod["METADATA"].pop("labels")
    pod["METADATA"]["NameSpace"] = pod["METADATA"].pop("namespace")
    items = [example_node(n) for n in ("A", "B", "C")]
    items[1]["Metadata"] = items[1].pop("metadata")
    items[1]["Metadata"]["NAME"] = items[1]["Metadata"].pop("name")
    body = {"pod": pod, "nodes": {"ITEMS": items}, "nodenames": None}
    result = demo.post("filter", body).json()
    assert list(result) == RESULT_KEYS
    assert [item["metadata"]["name"] for item in result["Nodes"]["ITEMS"]] == ["A", "C"]
    assert set(result["FailedAndUnresolvableNodes"]) == {"B"}
    names_result = demo.post("filter", {"POD": pod, "nodeNames": ["A", "B", "C"]}).json()
    assert names_result["NodeNames"] == ["A", "C"]


def test_tas_compatible_switch_reports_violations_in_failed_nodes() -> None:
    settings = ExtenderSettings(tas_compat_failed_nodes=True)
    with running_extender(
        policies=health_policies(), view=health_view(DEMO), settings=settings
    ) as extender:
        result = extender.post("filter", args_body(names=["A", "B", "C"])).json()
    assert result["FailedNodes"] == {"B": "demo-policy: health_metric Equals 1 (value 1)"}
    assert result["FailedAndUnresolvableNodes"] == {}


def test_rank_mode_gives_tas_scores_with_ties_equal() -> None:
    view = health_view({"A": 0.0, "B": 1.0, "C": 0.0, "D": 3.0})
    settings = ExtenderSettings(score_mode=ScoreMode.RANK)
    with running_extender(policies=health_policies(), view=view, settings=settings) as extender:
        result = extender.post("prioritize", args_body(names=["A", "B", "C", "D"])).json()
    assert result == [
        {"Host": "A", "Score": 10},
        {"Host": "B", "Score": 8},
        {"Host": "C", "Score": 10},
        {"Host": "D", "Score": 7},
    ]


def _without_policy_label(document: dict[str, Any]) -> None:
    del document["Pod"]["metadata"]["labels"]["telemetry-policy"]


def _other_policy(document: dict[str, Any]) -> None:
    document["Pod"]["metadata"]["labels"]["telemetry-policy"] = "no-such-policy"


def _other_namespace(document: dict[str, Any]) -> None:
    document["Pod"]["metadata"]["namespace"] = "default"


def _bare_policy(document: dict[str, Any]) -> None:
    document["Pod"]["metadata"]["labels"]["telemetry-policy"] = "labels-only"


BARE = parse_policy(
    policy_document(
        "labels-only",
        namespace=DEMO_NAMESPACE,
        deschedule=[rule("health_metric", "Equals", 1)],
    )
)


@pytest.mark.parametrize(
    ("apply", "outcome", "reason"),
    [
        pytest.param(
            _without_policy_label,
            "no-policy-label",
            "pod has no telemetry-policy label",
            id="no-label",
        ),
        pytest.param(
            _other_policy,
            "policy-not-found",
            "policy 'no-such-policy' not found in namespace 'health-metric-demo'",
            id="missing-policy",
        ),
        pytest.param(
            _other_namespace,
            "policy-not-found",
            "policy 'demo-policy' not found in namespace 'default'",
            id="policy-in-another-namespace",
        ),
        pytest.param(
            _bare_policy,
            "no-strategy",
            "policy 'labels-only' has no dontschedule strategy",
            id="policy-without-the-strategy",
        ),
    ],
)
def test_pods_without_a_usable_policy_pass_every_node_and_the_log_says_why(
    apply: Any, outcome: str, reason: str
) -> None:
    with running_extender(policies=(*health_policies(), BARE), view=health_view(DEMO)) as extender:
        body = args_body(names=["A", "B", "C"], apply=apply)
        filtered = extender.post("filter", body)
        prioritized = extender.post("prioritize", body)
        log = extender.client.get("/debug/decisions").json()
    assert filtered.status_code == 200
    assert filtered.json()["NodeNames"] == ["A", "B", "C"]
    assert filtered.json()["FailedAndUnresolvableNodes"] == {}
    assert prioritized.status_code == 200
    assert len({entry["Score"] for entry in prioritized.json()}) == 1
    assert [entry["Host"] for entry in prioritized.json()] == ["A", "B", "C"]
    assert log[1]["verb"] == "filter"
    assert log[1]["outcome"] == outcome
    assert log[1]["reason"] == reason
    assert log[0]["verb"] == "prioritize"
    assert log[0]["outcome"] == outcome


def _bad(status: int, body: bytes, content_type: str | None = "application/json") -> Any:
    return (status, body, content_type)


BAD_REQUESTS = [
    pytest.param(*_bad(400, b"{not json"), "not valid JSON", id="invalid-json"),
    pytest.param(*_bad(400, b""), "not valid JSON", id="empty-body"),
    pytest.param(*_bad(400, b"[1, 2]"), "must be a JSON object", id="array-body"),
    pytest.param(*_bad(400, b'"Pod"'), "must be a JSON object", id="string-body"),
    pytest.param(
        *_bad(400, json.dumps({"Pod": example("nodes")["Pod"]}).encode()),
        "one of Nodes or NodeNames is required",
        id="no-candidates",
    ),
    pytest.param(
        *_bad(400, json.dumps({"Pod": {}, "NodeNames": ["a"], "Nodes": {"items": []}}).encode()),
        "not both",
        id="both-forms",
    ),
    pytest.param(*_bad(400, b'{"NodeNames": ["a"]}'), "Pod is required", id="no-pod"),
    pytest.param(
        *_bad(400, b'{"Pod": {}, "NodeNames": "a"}'), "NodeNames must be a list", id="names-str"
    ),
    pytest.param(
        *_bad(400, b'{"Pod": {}, "NodeNames": [1]}'), "NodeNames must be a list", id="names-int"
    ),
    pytest.param(
        *_bad(400, b'{"Pod": {}, "Nodes": {"items": {}}}'), "items must be a list", id="items"
    ),
    pytest.param(
        *_bad(400, b'{"Pod": {}, "Nodes": {"items": [{"metadata": {}}]}}'),
        "metadata.name",
        id="node-without-name",
    ),
    pytest.param(
        *_bad(400, b'{"Pod": {"metadata": {"labels": {"a": 1}}}, "NodeNames": []}'),
        "labels",
        id="label-not-a-string",
    ),
    pytest.param(*_bad(415, b"{}", "text/plain"), "Content-Type", id="text-plain"),
    pytest.param(*_bad(415, b"{}", None), "Content-Type", id="no-content-type"),
]


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
@pytest.mark.parametrize(("status", "body", "content_type", "message"), BAD_REQUESTS)
def test_bad_requests_get_a_client_error_with_a_json_reason(
    demo: RunningExtender,
    verb: str,
    status: int,
    body: bytes,
    content_type: str | None,
    message: str,
) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    response = demo.post(verb, body, headers=headers)
    assert response.status_code == status
    assert message in response.json()["Error"]


def _compact(document: Any) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _request(form: str, size: str) -> dict[str, Any]:
    """ExtenderArgs in either form, under or over the size the scanner takes over at."""
    count = {"small": 3, "large": 80}[size]
    if form == "nodes":
        return args_body(nodes=[example_node(f"node-{i}", template=i % 3) for i in range(count)])
    return args_body(names=[f"node-{i:04d}-{'x' * 40}" for i in range(count * 80)])


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
@pytest.mark.parametrize("size", ["small", "large"])
@pytest.mark.parametrize("form", ["nodes", "nodenames"])
@pytest.mark.parametrize("depth", [MAX_DEPTH, 300, 2000])
def test_deep_nesting_gets_400_with_a_reason(
    shared_demo: RunningExtender, verb: str, size: str, form: str, depth: int
) -> None:
    document = _request(form, size)
    if form == "nodes":  # where it used to crash the answer: inside a Node that is kept
        document["Nodes"]["items"][0]["status"]["deep"] = "DEEP"
    else:
        document["Pod"]["spec"]["deep"] = "DEEP"
    body = _compact(document).replace(b'"DEEP"', b'{"d":' * depth + b"1" + b"}" * depth)
    assert (len(body) >= SCAN_THRESHOLD) == (size == "large")
    response = shared_demo.post(verb, body)
    assert response.status_code == 400
    assert response.json()["Error"] == f"the body nests deeper than {MAX_DEPTH} levels"


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_a_syntax_error_inside_one_node_of_a_large_body_gets_400(
    shared_demo: RunningExtender, verb: str
) -> None:
    body = _compact(_request("nodes", "large"))
    assert 280_000 < len(body) < 400_000
    arch = b'"kubernetes.io/arch":"amd64"'
    at = body.index(arch, len(body) // 2)  # a Node in the middle, kept by filter
    damaged = body[:at] + b'"a"::"b",' + body[at:]
    response = shared_demo.post(verb, damaged)
    assert response.status_code == 400
    assert response.json()["Error"].startswith("the body is not valid JSON: ")
    assert shared_demo.post(verb, body).status_code == 200


def test_pods_naming_missing_policies_add_no_metric_series(demo: RunningExtender) -> None:
    for index in range(2000):
        body = args_body(
            names=["A", "B"],
            apply=lambda d, i=index: d["Pod"]["metadata"]["labels"].update(
                {"telemetry-policy": f"no-such-policy-{i}"}
            ),
        )
        assert demo.post("filter" if index % 2 else "prioritize", body).status_code == 200
    demo.post("filter", args_body(names=["A", "B", "C"]))  # the demo policy, which exists
    series = {
        (sample.labels["verb"], sample.labels["policy"], sample.labels["outcome"]): sample.value
        for metric in demo.registry.collect()
        if metric.name == "tas_extender_decisions"
        for sample in metric.samples
        if sample.name == "tas_extender_decisions_total"
    }
    assert series == {
        ("filter", UNKNOWN_POLICY, "policy-not-found"): 1000,
        ("prioritize", UNKNOWN_POLICY, "policy-not-found"): 1000,
        ("filter", "demo-policy", "applied"): 1,
    }
    assert demo.client.get("/debug/decisions", params={"limit": 2}).json()[1]["policy"] == (
        "no-such-policy-1999"  # the decision log still says which policy the pod named
    )


def test_a_body_over_the_limit_gets_413() -> None:
    settings = ExtenderSettings(max_body_bytes=2000)
    with running_extender(policies=health_policies(), settings=settings) as extender:
        small = extender.post("filter", args_body(names=["A"]))
        large = extender.post("filter", args_body(names=[f"node-{i}" for i in range(500)]))
    assert small.status_code == 200
    assert large.status_code == 413
    assert "2000 bytes" in large.json()["Error"]


@pytest.mark.parametrize(
    ("method", "path"),
    [
        pytest.param("GET", "/scheduler/filter", id="get-filter"),
        pytest.param("PUT", "/scheduler/prioritize", id="put-prioritize"),
        pytest.param("POST", "/healthz", id="post-healthz"),
    ],
)
def test_a_wrong_method_gets_405(demo: RunningExtender, method: str, path: str) -> None:
    response = demo.client.request(method, path)
    assert response.status_code == 405
    assert response.json()["Error"] == "Method Not Allowed"


def test_an_unknown_path_gets_404_with_a_json_reason(demo: RunningExtender) -> None:
    response = demo.client.post("/scheduler/bind", content=b"{}", headers={"Content-Type": "x"})
    assert response.status_code == 404
    assert response.json()["Error"] == "Not Found"


def test_the_extenders_address_opened_in_a_browser_lists_what_it_serves(
    demo: RunningExtender,
) -> None:
    """The dashboard and `tas run` show the extender's address: opening it is not a 404."""
    response = demo.client.get("/")
    assert response.status_code == 200
    endpoints = response.json()["endpoints"]
    assert {"POST /scheduler/filter", "POST /scheduler/prioritize"} <= set(endpoints)
    listed = [key.split()[1].split("?")[0] for key in endpoints if key.startswith("GET ")]
    for path in listed:  # every GET it lists answers
        assert demo.client.get(path).status_code == 200, path


def test_large_nodes_bodies_are_answered_with_the_kept_nodes_byte_for_byte() -> None:
    names = [f"node-{i}" for i in range(200)]
    view = health_view({n: float(i % 3 == 1) for i, n in enumerate(names)})
    items = [example_node(n, template=i % 3) for i, n in enumerate(names)]
    body = json.dumps(args_body(nodes=items), separators=(",", ":")).encode()
    assert len(body) > 512 * 1024  # large enough for the scanner
    with running_extender(policies=health_policies(), view=view) as extender:
        response = extender.post("filter", body)
    assert response.status_code == 200
    kept = [
        json.dumps(i, separators=(",", ":")).encode() for k, i in enumerate(items) if k % 3 != 1
    ]
    assert b'"items":[' + b",".join(kept) + b"]" in response.content
    result = response.json()
    assert len(result["FailedAndUnresolvableNodes"]) == len(names) - len(kept)


def test_readyz_waits_for_policies_and_a_first_metric_refresh() -> None:
    class NotYet(StaticMetricView):
        @property
        def ready(self) -> bool:
            return False

    with running_extender(view=NotYet()) as extender:
        waiting = extender.client.get("/readyz")
        extender.store.replace(health_policies())
        still_waiting = extender.client.get("/readyz")
        assert extender.client.get("/healthz").status_code == 200
    assert waiting.status_code == 503
    assert waiting.json()["waiting"] == [
        "policies not loaded yet",
        "no metric refresh completed yet",
    ]
    assert still_waiting.json()["waiting"] == ["no metric refresh completed yet"]
    with running_extender(policies=health_policies()) as extender:
        assert extender.client.get("/readyz").json() == {"ready": True}


def test_readyz_waits_for_the_pod_and_node_caches_to_list() -> None:
    """Herd control's estimates need every pod: until the caches have listed, the extender's
    Service sends kube-scheduler elsewhere (or nowhere: it is ignorable)."""
    listed = False
    with running_extender(policies=health_policies(), caches_synced=lambda: listed) as extender:
        waiting = extender.client.get("/readyz")
        listed = True
        ready = extender.client.get("/readyz")
    assert waiting.status_code == 503
    assert waiting.json()["waiting"] == ["cluster caches not listed yet"]
    assert ready.json() == {"ready": True}


def test_metrics_count_requests_decisions_and_filtered_nodes(demo: RunningExtender) -> None:
    demo.post("filter", args_body(names=["A", "B", "C"]))
    demo.post("prioritize", args_body(names=["A", "B", "C"]))
    demo.post("filter", b"nope")
    text = demo.client.get("/metrics").text
    assert 'tas_extender_request_duration_seconds_count{verb="filter"} 1.0' in text
    assert 'tas_extender_request_duration_seconds_count{verb="prioritize"} 1.0' in text
    assert (
        'tas_extender_decisions_total{outcome="applied",policy="demo-policy",verb="filter"} 1.0'
        in text
    )
    assert 'tas_extender_filtered_nodes_total{policy="demo-policy"} 1.0' in text
    assert 'tas_extender_rejected_requests_total{status="400",verb="filter"} 1.0' in text


def test_the_decision_log_explains_each_node_newest_first(demo: RunningExtender) -> None:
    demo.post("filter", args_body(names=["A", "B", "C"]))
    demo.post("prioritize", args_body(names=["A", "B"]))
    log = demo.client.get("/debug/decisions").json()
    assert [d["verb"] for d in log] == ["prioritize", "filter"]
    filtered = log[1]
    assert filtered["pod"] == f"{DEMO_NAMESPACE}/demo-app-6558d5ffbf-5lw2t"
    assert filtered["podUID"] == "8f2b5c0e-2b7a-4d0c-9a52-7d0f3e1c4a11"
    assert filtered["policy"] == "demo-policy"
    assert filtered["nodes"] == [
        {"node": "A", "verdict": "pass", "metrics": {"health_metric": 0.0}},
        {
            "node": "B",
            "verdict": "fail",
            "reason": "demo-policy: health_metric Equals 1 (value 1)",
            "metrics": {"health_metric": 1.0},
        },
        {"node": "C", "verdict": "pass", "metrics": {"health_metric": 0.0}},
    ]
    assert [n["score"] for n in log[0]["nodes"]] == [10, 0]
    assert len(demo.client.get("/debug/decisions", params={"limit": 1}).json()) == 1
    assert demo.client.get("/debug/decisions", params={"limit": "x"}).status_code == 400


def test_filter_logs_read_like_tas(demo: RunningExtender, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("INFO", logger="extender.app"):
        demo.post("filter", args_body(names=["A", "B", "C"]))
    messages = [r.getMessage() for r in caplog.records if r.name == "extender.app"]
    assert "Filtered nodes available for demo-policy: A C" in messages
    assert "B violating demo-policy: health_metric Equals 1 (value 1)" in messages


def test_a_client_that_hangs_up_mid_body_leaves_no_error_behind(
    demo: RunningExtender, caplog: pytest.LogCaptureFixture
) -> None:
    host, port = demo.url.removeprefix("http://").split(":")
    with caplog.at_level("INFO"), socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /scheduler/filter HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"Pod": {'
        )
    counted = 'tas_extender_rejected_requests_total{status="disconnected",verb="filter"} 1.0'
    eventually(lambda: counted in demo.client.get("/metrics").text, what="the hang-up noticed")
    assert demo.post("filter", args_body(names=["A"])).status_code == 200
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == []


@pytest.mark.parametrize(
    ("share", "kept"),
    [
        pytest.param(None, ["A", "B", "C"], id="default share: fail open, every node kept"),
        pytest.param(1.0, [], id="share 1: never fails open, every node removed"),
    ],
)
def test_a_metric_that_makes_every_node_violate_fails_open(
    share: float | None, kept: list[str]
) -> None:
    view = health_view({"A": 2, "B": 2, "C": 2, "D": 1})
    settings = (
        ExtenderSettings() if share is None else ExtenderSettings(max_violating_node_share=share)
    )
    with running_extender(policies=health_policies(), view=view, settings=settings) as extender:
        result = extender.post("filter", args_body(names=["A", "B", "C"])).json()
        assert result["NodeNames"] == kept
        decision = extender.client.get("/debug/decisions").json()[0]
        text = extender.client.get("/metrics").text
    if kept:
        assert result["FailedAndUnresolvableNodes"] == {}
        assert "4 of 4 nodes with values (100%) violate at once" in decision["reason"]
        assert "fail open" in decision["reason"]
        assert 'outcome="breaker-open",policy="demo-policy",verb="filter"} 1.0' in text
    else:
        assert set(result["FailedAndUnresolvableNodes"]) == {"A", "B", "C"}


def test_one_unhealthy_node_is_still_filtered_when_it_is_the_only_candidate() -> None:
    view = health_view({"A": 0, "B": 0, "C": 0, "D": 2})
    with running_extender(policies=health_policies(), view=view) as extender:
        result = extender.post("filter", args_body(names=["D"])).json()
    assert result["NodeNames"] == []
    assert set(result["FailedAndUnresolvableNodes"]) == {"D"}


class _BrokenView(StaticMetricView):
    """A metric source whose reads fail with an error nobody anticipated (a bug's stand-in)."""

    def columns(self) -> Any:
        raise RuntimeError("a bug in a metric source")


@pytest.mark.parametrize("verb", ["filter", "prioritize"])
def test_a_failure_inside_the_extender_is_a_counted_500_with_a_reason_and_a_logged_pod(
    verb: str, caplog: pytest.LogCaptureFixture
) -> None:
    with running_extender(policies=health_policies(), view=_BrokenView()) as extender:
        response = extender.post(verb, args_body(names=["A", "B"]))
        text = extender.client.get("/metrics").text
        # It keeps answering: the next request fails the same way, not the server.
        assert extender.post(verb, args_body(names=["A"])).status_code == 500
    assert response.status_code == 500
    assert response.json()["Error"] == f"the extender failed to {verb} this pod"
    assert f'tas_extender_internal_errors_total{{verb="{verb}"}} 1.0' in text
    failed = [r for r in caplog.records if "kube-scheduler goes on without" in r.getMessage()]
    assert failed
    assert f"{DEMO_NAMESPACE}/" in failed[0].getMessage()
    assert failed[0].exc_info is not None
