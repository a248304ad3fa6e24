"""`make run`: the health-metric demo closes the loop on the in-memory world, seen through /api/.

Covered (through the real `tas run` process, its real extender over HTTP, its dashboard's JSON
API, and `tas set-health` typed as a user would in a second terminal):
- at start: five nodes `node-a`..`node-e`, `demo-policy` loaded, the demo pods all placed and
  never on node-b (dontschedule: health 1), background workloads running, metrics moving;
- the extender answers the demo filter request: node-b removed with its reason;
- a node running a demo pod (node-c when it does) set to 2: the node is labelled
  `demo-policy=violating`, the policy's status says so, its demo pods are evicted and
  rescheduled on healthy nodes, and the decision log explains each step (health change,
  labels, eviction with its reason and replacement, the extender asked about the replacement
  without the node, the placement);
- the node healed (0): the label goes;
- 3 cores of load on node-d: the load-aware descheduler moves pods off it within the first
  minute, each eviction's reason carrying the predicted relief;
- SIGTERM and SIGINT each stop the whole demo within 2 s;
- `tas run --scenario health-demo --speed 30` runs the simulator's scenario in real time on
  the same page: its set-health event at 3 minutes labels node-c and a demo pod is evicted
  from it; the health demo's load control is refused there (409).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.demo_process import DemoProcess, start_demo

REPO = Path(__file__).resolve().parents[1]
REQUEST = REPO / "deploy" / "health-metric-demo" / "filter-request.json"


def demo_pods(state: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in state["pods"] if p["policy"] == "demo-policy"]


def all_placed(demo: DemoProcess) -> dict[str, Any] | None:
    state: dict[str, Any] = demo.get("/api/state")
    pods = demo_pods(state)
    return state if pods and all(p["node"] for p in pods) else None


def test_the_demo_closes_the_loop_and_explains_it_through_the_api(tmp_path: Path) -> None:
    with start_demo(tmp_path) as demo:
        state = demo.wait_for("every demo pod placed", lambda: all_placed(demo))
        assert [n["name"] for n in state["nodes"]] == [f"node-{c}" for c in "abcde"]
        assert [p["name"] for p in state["policies"]] == ["demo-policy"]
        assert len(demo_pods(state)) == 4
        assert not [p for p in demo_pods(state) if p["node"] == "node-b"]
        assert {p["app"] for p in state["pods"]} >= {"demo", "web", "batch", "cache"}
        assert all("cpu_pressure" in n["metrics"] for n in state["nodes"])

        answer = httpx.post(
            f"{demo.extender}/scheduler/filter",
            content=REQUEST.read_bytes(),
            headers={"Content-Type": "application/json"},
        ).json()
        assert answer["FailedAndUnresolvableNodes"] == {
            "node-b": "demo-policy: health_metric Equals 1 (value 1)"
        }

        # The node to make unhealthy: one running a demo pod, node-c when it does.
        used = sorted({p["node"] for p in demo_pods(state)}, key=lambda n: (n != "node-c", n))
        sick = used[0]
        healthy = {f"node-{c}" for c in "acde"} - {sick}
        on_sick = [p["name"] for p in demo_pods(state) if p["node"] == sick]
        mark = demo.get("/api/decisions?limit=1")[-1]["id"]
        demo.set_health(sick, "2")

        def moved() -> dict[str, Any] | None:
            current: dict[str, Any] = demo.get("/api/state")
            node = next(n for n in current["nodes"] if n["name"] == sick)
            pods = demo_pods(current)
            names = {p["name"] for p in pods}
            if (
                "demo-policy" in node["violating"]
                and not set(on_sick) & names
                and len(pods) == 4
                and all(p["node"] in healthy for p in pods)
            ):
                return current
            return None

        after = demo.wait_for(f"{sick} labelled and its demo pods moved to healthy nodes", moved)
        policy = after["policies"][0]
        assert policy["labelledNodes"] == [sick]
        assert policy["status"]["compliance"] == "Violating"
        assert policy["status"]["violatingNodes"]["deschedule"] == [sick]

        log = demo.get(f"/api/decisions?after={mark}&limit=2000")
        text = "\n".join(f"{e['kind']}: {e['summary']}" for e in log)
        assert f"metric: node {sick}: health_metric 0 -> 2" in text, text
        assert f"label: node {sick}: set demo-policy=violating" in text, text
        assert (
            f"label: pod health-metric-demo/{on_sick[0]} on {sick}: set violate=demo-policy" in text
        )
        for pod in on_sick:
            evicted = [e for e in log if e["kind"] == "eviction" and pod in e["summary"]]
            assert evicted, text
            details = evicted[0]["details"]
            assert details["result"] == "evicted"
            assert details["strategy"] == "TASViolations"
            assert "health_metric Equals 2 (value 2)" in details["reason"]
            replacement = f"health-metric-demo/{details['replacement']}"
            placed = [e for e in log if e["kind"] == "schedule" and replacement in e["summary"]]
            assert placed, text
            # The extender was asked about the replacement: the scheduler's own affinity check
            # (NotIn violating) already left the sick node out, node-b it removed with a reason.
            asked = [
                e["details"]
                for e in log
                if e["kind"] == "filter" and e["details"]["pod"] == replacement
            ]
            assert asked, text
            verdicts = {n["node"]: n for n in asked[-1]["nodes"]}
            assert sick not in verdicts
            assert verdicts["node-b"]["reason"] == "demo-policy: health_metric Equals 1 (value 1)"

        demo.set_health(sick, "0")
        demo.wait_for(
            f"{sick}'s label removed", lambda: True if not demo.node(sick)["violating"] else None
        )


@pytest.mark.parametrize(
    "signum", [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGINT, id="SIGINT")]
)
def test_the_demo_stops_within_two_seconds(tmp_path: Path, signum: signal.Signals) -> None:
    with start_demo(tmp_path) as demo:
        stream = httpx.stream("GET", f"{demo.dashboard}/api/stream", timeout=10)
        with stream as response:  # an open live-update stream must not hold the exit up
            assert response.status_code == 200
            started = time.monotonic()
            demo.process.send_signal(signum)
            demo.process.wait(timeout=10)
            took = time.monotonic() - started
    assert demo.process.returncode == 0, "\n".join(demo.output[-30:])
    assert took < 2.0, f"took {took:.2f}s"


def test_a_simulator_scenario_runs_in_real_time_on_the_same_page(tmp_path: Path) -> None:
    with start_demo(tmp_path, "--scenario", "health-demo", "--speed", "30") as demo:
        state = demo.get("/api/state")
        assert state["scenario"]["name"] == "health-demo"
        assert [n["name"] for n in state["nodes"]] == ["node-a", "node-b", "node-c"]

        demo.wait_for(
            "node-c labelled violating (3m into the scenario, 6s at 30x)",
            lambda: True if "demo-policy" in demo.node("node-c")["violating"] else None,
        )

        def demo_pod_evicted() -> list[dict[str, Any]] | None:
            log: list[dict[str, Any]] = demo.get("/api/decisions?kind=eviction&limit=2000")
            found = [
                e
                for e in log
                if e["details"]["strategy"] == "TASViolations"
                and e["details"]["node"] == "node-c"
                and "demo-app" in e["details"]["pod"]
            ]
            return found or None

        (first, *_) = demo.wait_for("a demo pod evicted from node-c", demo_pod_evicted)
        assert "health_metric Equals 2 (value 2)" in first["details"]["reason"]
        metrics = demo.get("/api/decisions?kind=metric&limit=2000")
        assert any(e["summary"] == "node node-c: health_metric 0 -> 2" for e in metrics)
        refused = httpx.post(f"{demo.dashboard}/api/nodes/node-a/load", json={"cores": 1})
        assert refused.status_code == 409


def test_the_page_controls_work_from_the_terminal_too(tmp_path: Path) -> None:
    """`tas demo scale|load|unload` call the page's control API; refusals exit 1 with why."""

    def tas_demo(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tas_cli", "demo", "--url", demo.dashboard, *args],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    with start_demo(tmp_path) as demo:
        scaled = tas_demo("scale", "demo-app", "6")
        assert scaled.returncode == 0, scaled.stderr
        assert json.loads(scaled.stdout)["replicas"] == 6
        demo.wait_for(
            "six demo pods",
            lambda: True if len(demo_pods(demo.get("/api/state"))) == 6 else None,
        )
        loaded = tas_demo("load", "node-d", "3")
        assert loaded.returncode == 0, loaded.stderr
        pod = json.loads(loaded.stdout)["pod"]
        assert pod.startswith("load/stress-node-d")
        demo.wait_for("the load pod on node-d", lambda: pod in demo.node("node-d")["pods"] or None)
        assert tas_demo("unload", "node-d").returncode == 0
        refused = tas_demo("scale", "demo-app", "99")
        assert refused.returncode == 1
        assert "0..40" in refused.stderr


def test_a_loaded_node_is_relieved_by_the_load_aware_descheduler_in_the_first_minute(
    tmp_path: Path,
) -> None:
    """The README's second story: 3 cores of load on node-d, and the load-aware descheduler
    moves pods off it, each eviction saying what the move is predicted to relieve. The
    pods were all placed seconds ago: only replacements of moved pods wait to settle."""
    with start_demo(tmp_path) as demo:
        demo.wait_for("every demo pod placed", lambda: all_placed(demo))
        answer = httpx.post(f"{demo.dashboard}/api/nodes/node-d/load", json={"cores": 3})
        assert answer.status_code == 200, answer.text

        def relieved() -> list[dict[str, Any]] | None:
            log = demo.get("/api/decisions?kind=eviction")
            entries = log if isinstance(log, list) else log.get("entries", [])
            found = [
                e for e in entries if "LoadAware" in json.dumps(e) and "node-d" in json.dumps(e)
            ]
            return found or None

        evictions = demo.wait_for("a LoadAware eviction from node-d", relieved, timeout=60)
        assert "relief" in json.dumps(evictions[0])
