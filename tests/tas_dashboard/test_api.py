"""The dashboard's JSON API on a real uvicorn server (docs/dashboard.md).

Covered:
- the page and its vendored assets are served by the project itself;
- GET /api/state, /api/nodes, /api/nodes/{node}, /api/pods, /api/policies, /api/decisions,
  /api/history answer the documented shapes; an unknown node is a 404 with a reason;
- the controls do what the terminal does: set-health writes the node's textfile (and the
  next tick shows the value), scaling adds and removes pods, load adds a stress pod the model
  counts, clearing removes it; each control is logged;
- every bad control request is a 4xx with `{"error": reason}`: table cases for each status,
  and a hypothesis fuzz of bodies, content types and paths against the running server;
- /api/stream sends an `update` event at once and another after the next tick;
- a `kind=` that is no kind of log entry (on /api/decisions, or on /api/history, which has
  none) is a 400 that lists the kinds, and every kind the page filters on is one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.metrics.textformat import parse_text
from tas.types import NodeName
from tas_dashboard.app import STATIC
from tas_inmemory.demo import LOAD_NAMESPACE
from tests.tas_dashboard.harness import Harness


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    with Harness(tmp_path_factory.mktemp("dashboard")) as running:
        running.tick()
        yield running


def health_in_file(harness: Harness, node: str) -> float | None:
    text = (harness.metrics / f"{node}.prom").read_text()
    return next((s.value for s in parse_text(text) if s.name == "node_health_metric"), None)


def test_the_page_and_its_assets_are_served_locally(harness: Harness) -> None:
    page = harness.client.get("/")
    assert page.status_code == 200
    assert "/static/vendor/uplot/uPlot.iife.min.js" in page.text
    for asset in ("/static/app.js", "/static/style.css", "/static/vendor/uplot/uPlot.iife.min.js"):
        assert harness.client.get(asset).status_code == 200, asset
    assert harness.client.get("/favicon.ico").status_code == 204


def test_the_state_has_nodes_pods_policies_and_workloads(harness: Harness) -> None:
    state = harness.client.get("/api/state").json()
    assert [n["name"] for n in state["nodes"]] == [f"node-{c}" for c in "abcde"]
    node_b = next(n for n in state["nodes"] if n["name"] == "node-b")
    assert node_b["metrics"]["health_metric"] == 1.0
    assert 0.0 <= node_b["metrics"]["cpu_utilization"] <= 1.0
    assert set(node_b) >= {"labels", "violating", "taints", "pods", "classification", "model"}
    assert {p["app"] for p in state["pods"]} >= {"demo", "web", "batch", "cache", "node-agent"}
    (policy,) = state["policies"]
    assert policy["name"] == "demo-policy"
    assert [r["text"] for r in policy["strategies"]["deschedule"]["rules"]] == [
        "health_metric Equals 2"
    ]
    assert {w["name"] for w in state["workloads"]} >= {"demo-app", "web"}
    assert harness.client.get("/api/nodes").json() == state["nodes"]
    assert harness.client.get("/api/pods").json() == state["pods"]
    assert harness.client.get("/api/policies").json() == state["policies"]
    assert harness.client.get("/api/nodes/node-b").json() == node_b


def test_an_unknown_node_is_a_404_with_a_reason(harness: Harness) -> None:
    answer = harness.client.get("/api/nodes/node-z")
    assert answer.status_code == 404
    assert answer.json() == {"error": "no node named 'node-z'"}


def test_the_decision_log_and_history_answer_from_an_id_and_a_time(harness: Harness) -> None:
    entries = harness.client.get("/api/decisions", params={"limit": 1000}).json()
    assert entries, "the first ticks placed pods"
    assert [e["id"] for e in entries] == sorted(e["id"] for e in entries)
    assert {"id", "time", "kind", "source", "summary", "details"} <= set(entries[0])
    last = entries[-1]["id"]
    assert harness.client.get("/api/decisions", params={"after": last}).json() == []
    schedules = harness.client.get("/api/decisions", params={"kind": "schedule"}).json()
    assert schedules
    assert all(e["kind"] == "schedule" for e in schedules)
    points = harness.client.get("/api/history").json()
    assert len(points) >= 2
    assert set(points[-1]["cpu_utilization"]) >= {"node-a", "fleet"}
    later = harness.client.get("/api/history", params={"after": points[-2]["time"]}).json()
    assert later == points[-1:]
    assert harness.client.get("/api/decisions", params={"after": "x"}).status_code == 400
    assert harness.client.get("/api/history", params={"after": "x"}).status_code == 400


@pytest.mark.parametrize(
    ("path", "params"),
    [
        pytest.param("/api/decisions", {"kind": "bogus"}, id="decisions-unknown-kind"),
        pytest.param(
            "/api/decisions", [("kind", "eviction"), ("kind", "evictions")], id="one-of-two"
        ),
        pytest.param("/api/history", {"kind": "eviction"}, id="history-has-no-kinds"),
    ],
)
def test_a_kind_that_does_not_exist_is_a_400_listing_the_kinds(
    harness: Harness, path: str, params: Any
) -> None:
    """A typo must not read as "nothing of that kind happened" (an empty list)."""
    answer = harness.client.get(path, params=params)
    assert answer.status_code == 400
    error = answer.json()["error"]
    for kind in ("filter", "schedule", "label", "event", "eviction", "control"):
        assert kind in error


def test_every_kind_the_page_filters_on_is_accepted(harness: Harness) -> None:
    script = (STATIC / "app.js").read_text()
    kinds = re.findall(
        r"^  (\w+): \"", script.split("const KINDS = {", 1)[1].split("};", 1)[0], re.M
    )
    assert kinds
    for kind in kinds:
        assert harness.client.get("/api/decisions", params={"kind": kind}).status_code == 200


def test_set_health_writes_the_textfile_as_the_terminal_command_does(harness: Harness) -> None:
    answer = harness.client.post("/api/nodes/node-e/health", json={"value": 2})
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"ok": True, "node": "node-e", "value": 2.0}
    assert health_in_file(harness, "node-e") == 2.0
    harness.tick()
    assert harness.client.get("/api/nodes/node-e").json()["metrics"]["health_metric"] == 2.0
    summaries = [e["summary"] for e in harness.client.get("/api/decisions").json()]
    assert "set node-e health_metric to 2" in summaries
    assert "node node-e: health_metric 0 -> 2" in summaries
    harness.client.post("/api/nodes/node-e/health", json={"value": 0})
    assert health_in_file(harness, "node-e") == 0.0


def test_scaling_adds_and_removes_pods(harness: Harness) -> None:
    def demo_pods() -> int:
        return sum(1 for p in harness.cluster.list_pods() if p.labels.get("app") == "demo")

    before = demo_pods()
    answer = harness.client.post("/api/workloads/demo-app/scale", json={"replicas": before + 2})
    assert answer.json() == {
        "ok": True,
        "workload": "demo-app",
        "replicas": before + 2,
        "before": before,
    }
    assert demo_pods() == before + 2
    harness.tick()
    assert harness.client.post("/api/workloads/demo-app/scale", json={"replicas": 1}).is_success
    assert demo_pods() == 1
    harness.client.post("/api/workloads/demo-app/scale", json={"replicas": before})
    assert demo_pods() == before


def test_load_adds_a_stress_pod_the_model_counts_and_clearing_removes_it(
    harness: Harness,
) -> None:
    harness.tick()
    before = harness.telemetry.step(0.0).nodes[NodeName("node-d")].cpu_demand
    answer = harness.client.post("/api/nodes/node-d/load", json={"cores": 3})
    assert answer.status_code == 200, answer.text
    pod = answer.json()["pod"]
    assert pod.startswith(f"{LOAD_NAMESPACE}/stress-node-d-")
    after = harness.telemetry.step(0.0).nodes[NodeName("node-d")]
    assert after.cpu_demand == pytest.approx(before + 3, abs=1e-6)
    cleared = harness.client.delete("/api/nodes/node-d/load").json()
    assert cleared["removed"] == [pod.split("/", 1)[1]]
    assert not harness.world.load_pods("node-d")


HEALTH = "/api/nodes/node-a/health"
LOAD = "/api/nodes/node-a/load"
SCALE = "/api/workloads/demo-app/scale"
JSON_TYPE = "application/json"


def bad(
    method: str, path: str, body: bytes, status: int, reason: str, *, id: str, kind: str = JSON_TYPE
) -> Any:
    return pytest.param(method, path, body, kind, status, reason, id=id)


@pytest.mark.parametrize(
    ("method", "path", "body", "content_type", "status", "reason"),
    [
        bad("POST", HEALTH, b'{"value": 1}', 415, "application/json", id="not JSON",
            kind="text/plain"),
        bad("POST", HEALTH, b"{", 400, "not JSON", id="broken JSON"),
        bad("POST", HEALTH, b'{"value": NaN}', 400, "NaN is not a JSON number", id="NaN"),
        bad("POST", HEALTH, b"[1]", 400, "must be a JSON object", id="not an object"),
        bad("POST", HEALTH, b'{"value": 1, "x": 2}', 400, "unknown field 'x'", id="unknown field"),
        bad("POST", HEALTH, b"\xff", 400, "not UTF-8", id="not UTF-8"),
        bad("POST", HEALTH, b"{}", 422, "'value' is required", id="missing value"),
        bad("POST", HEALTH, b'{"value": "2"}', 422, "must be a number", id="string value"),
        bad("POST", HEALTH, b'{"value": true}', 422, "must be a number", id="boolean value"),
        bad("POST", HEALTH, b'{"value": 1e999}', 422, "finite", id="infinite value"),
        bad("POST", HEALTH, b" " * 5000, 413, "over 4096 bytes", id="too large"),
        bad("POST", "/api/nodes/node-z/health", b'{"value": 1}', 404, "no node named 'node-z'",
            id="unknown node"),
        bad("POST", LOAD, b'{"cores": 0}', 422, "more than 0", id="no cores"),
        bad("POST", LOAD, b'{"cores": 99}', 422, "at most 16", id="too many cores"),
        bad("DELETE", "/api/nodes/node-z/load", b"", 404, "no node named", id="clear unknown node"),
        bad("POST", SCALE, b'{"replicas": 2.5}', 422, "whole number", id="fractional replicas"),
        bad("POST", SCALE, b'{"replicas": -1}', 422, "0..40", id="negative replicas"),
        bad("POST", "/api/workloads/nope/scale", b'{"replicas": 1}', 404,
            "no workload named 'nope'; the workloads: ", id="unknown workload"),
        bad("POST", "/api/workloads/node-agent/scale", b'{"replicas": 1}', 409, "DaemonSet",
            id="DaemonSet"),
        bad("GET", HEALTH, b"", 405, "Method Not Allowed", id="wrong method"),
        bad("GET", "/api/nothing", b"", 404, "Not Found", id="unknown path"),
    ],
)  # fmt: skip
def test_a_bad_request_is_a_4xx_with_a_reason(
    harness: Harness,
    method: str,
    path: str,
    body: bytes,
    content_type: str,
    status: int,
    reason: str,
) -> None:
    answer = harness.client.request(
        method, path, content=body, headers={"Content-Type": content_type}
    )
    assert answer.status_code == status, answer.text
    assert reason in answer.json()["error"]


def test_too_many_stress_pods_on_one_node_is_a_conflict(harness: Harness) -> None:
    try:
        statuses = [
            harness.client.post("/api/nodes/node-a/load", json={"cores": 0.1}).status_code
            for _ in range(9)
        ]
        assert statuses == [200] * 8 + [409]
    finally:
        harness.client.delete("/api/nodes/node-a/load")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)  # fmt: skip
bodies = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.dictionaries(
        st.sampled_from(["value", "cores", "replicas", "x"]),
        st.one_of(st.integers(-10**20, 10**20), st.floats(), st.text(max_size=5), st.booleans()),
        max_size=3,
    ).map(lambda v: json.dumps(v).encode()),
)  # fmt: skip
paths = st.one_of(
    st.sampled_from(["/api/nodes/node-a/health", "/api/nodes/node-c/load",
                     "/api/workloads/demo-app/scale", "/api/workloads/web/scale"]),
    st.builds(lambda name, verb: f"/api/nodes/{name}/{verb}",
              st.text(alphabet="abcdefz-.%0123456789", min_size=1, max_size=12),
              st.sampled_from(["health", "load"])),
    st.builds(lambda name: f"/api/workloads/{name}/scale",
              st.text(alphabet="abz-.%019", min_size=1, max_size=12)),
)  # fmt: skip


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    method=st.sampled_from(["POST", "DELETE", "PUT", "GET"]),
    path=paths,
    body=bodies,
    content_type=st.sampled_from(["application/json", "application/json; charset=utf-8",
                                  "text/plain", ""]),
)  # fmt: skip
def test_control_endpoints_never_fail_with_a_5xx_whatever_is_sent(
    harness: Harness, method: str, path: str, body: bytes, content_type: str
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    answer = harness.client.request(method, path, content=body, headers=headers)
    assert answer.status_code < 500, (answer.status_code, answer.text)
    if answer.status_code >= 400:
        reason = answer.json()["error"]
        assert isinstance(reason, str)
        assert reason
    if answer.is_success and path.endswith("/load") and method == "POST":
        harness.client.delete(path)  # keep the node's stress pods under the limit


def test_the_stream_pushes_an_update_at_once_and_after_each_tick(harness: Harness) -> None:
    events: list[dict[str, Any]] = []
    with httpx.stream("GET", f"{harness.url}/api/stream", timeout=10) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        event = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line.removeprefix("event: ")
            elif line.startswith("data: ") and event == "update":
                events.append(json.loads(line.removeprefix("data: ")))
                if len(events) == 1:
                    harness.tick()
                else:
                    break
    first, second = events
    assert first["reset"] is True
    assert first["points"]
    assert first["decisions"]
    assert second["reset"] is False
    assert second["points"], "the new tick's point"
    assert second["state"]["nodes"]


def test_the_metrics_directory_holds_one_textfile_per_node(harness: Harness) -> None:
    names = sorted(p.name for p in Path(harness.metrics).iterdir() if not p.name.startswith("."))
    assert names == [f"node-{c}.prom" for c in "abcde"]
