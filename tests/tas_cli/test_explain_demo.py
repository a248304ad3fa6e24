"""`tas explain` against `make run`: `tas run` as a real process, pods placed by its scheduler
through the real extender, and `tas explain` as a user types it in a second terminal.

Covered:
- a demo pod: where it runs, its policy's verdict on that node, every candidate node at its
  placement with the extender's verdict, score and the rule and value that removed node-b,
  and whether the descheduler would move it now (no: its node does not violate);
- `--output json` is the same data the dashboard serves at `/api/explain/pod/...`;
- a node (`--demo` with `TAS_DEMO_URL`): its metrics with their age, dontschedule violated on
  node-b with the value, its labels;
- after `tas set-health NODE 2`: the evicted pod is explained by its eviction (why it was
  moved), and the node lists it among its recent evictions;
- a typo exits 1 naming the pods it may have meant; a cluster's flag with `--url` and a
  dashboard that does not answer exit 2 saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from tests.demo_process import DemoProcess, start_demo
from tests.processes import free_port, tas_command

NS = "health-metric-demo"


def explain(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("explain", *args),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoProcess]:
    with start_demo(tmp_path_factory.mktemp("explain-demo")) as running:
        yield running


def placed_demo_pod(demo: DemoProcess) -> dict[str, Any]:
    """A running demo pod the extender has a decision for (placed since the start)."""

    def probe() -> dict[str, Any] | None:
        for pod in demo.get("/api/pods"):
            if pod["policy"] != "demo-policy" or pod["node"] in (None, "node-b"):
                continue
            found = demo.get(f"/api/explain/pod/{NS}/{pod['name']}")
            if found["placement"] is not None:
                return found
        return None

    return demo.wait_for("a placed demo pod", probe)


def test_a_pod_shows_where_it_runs_every_candidates_verdict_and_why_it_stays(
    demo: DemoProcess,
) -> None:
    found = placed_demo_pod(demo)
    name, node = f"{NS}/{found['name']}", found["node"]
    result = explain("pod", name, "--url", demo.dashboard)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert f"runs on: {node} (phase Running)" in text
    assert f"policy: {NS}/demo-policy (label telemetry-policy)" in text
    assert f"deschedule: passes on {node}: demo-policy: health_metric Equals 2 is false" in text
    assert "node-b: filtered out; demo-policy: health_metric Equals 1 (value 1)" in text
    assert f"  {node}: kept; score " in text
    assert "<- runs here" in text
    assert "Would the descheduler move it now? no: no plugin would evict it in this cycle" in text
    assert f"{node} does not violate {NS}/demo-policy's deschedule rules" in text

    as_json = explain("pod", name, "--url", demo.dashboard, "--output", "json")
    assert as_json.returncode == 0, as_json.stderr
    printed = json.loads(as_json.stdout)
    served = demo.get(f"/api/explain/pod/{name}")
    assert printed.keys() == served.keys()
    assert printed["placement"] == served["placement"]
    assert printed["move"]["wouldMove"] is served["move"]["wouldMove"] is False
    verdicts = {c["node"]: c["verdict"] for c in printed["placement"]["candidates"]}
    assert verdicts["node-b"] == "fail"


def test_a_node_shows_its_metrics_with_their_age_and_every_policys_verdict(
    demo: DemoProcess,
) -> None:
    result = explain("node", "node-b", "--demo", env={"TAS_DEMO_URL": demo.dashboard})
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "Node node-b (Ready)" in text
    assert "  health_metric: 1 (" in text
    assert "s old)" in text
    assert f"{NS}/demo-policy dontschedule: violates: demo-policy: health_metric Equals 1 " in (
        text
    )
    assert "kubernetes.io/hostname=node-b" in text


def test_a_typo_names_the_pods_it_may_mean_and_a_silent_dashboard_is_said(
    demo: DemoProcess,
) -> None:
    result = explain("pod", f"{NS}/demo-app", "--url", demo.dashboard)
    assert result.returncode == 1
    assert f"no pod named {NS}/demo-app; did you mean {NS}/demo-app-" in result.stderr
    result = explain("node", "node-a", "--url", demo.dashboard, "--metrics", "textfile:run")
    assert result.returncode == 2
    assert "--metrics: for a cluster, not with --url/--demo" in result.stderr
    nobody = f"http://127.0.0.1:{free_port()}"
    result = explain("node", "node-a", "--url", nobody)
    assert result.returncode == 2
    assert "is `make run` running there?" in result.stderr


def test_after_set_health_the_evicted_pod_and_its_node_say_why_it_moved(
    demo: DemoProcess,
) -> None:
    found = placed_demo_pod(demo)
    sick, pod = found["node"], found["name"]
    demo.set_health(sick, "2")
    try:

        def evicted() -> bool | None:
            entries = demo.get("/api/decisions?kind=eviction")
            return True if any(e["details"]["pod"] == f"{NS}/{pod}" for e in entries) else None

        demo.wait_for(f"the eviction of {pod}", evicted)
        result = explain("pod", f"{NS}/{pod}", "--url", demo.dashboard)
        assert result.returncode == 0, result.stderr
        assert "no longer exists: the descheduler evicted it" in result.stdout
        assert (
            f"TASViolations: pod eviction from {sick} node by telemetry-aware-scheduling "
            f"descheduler: node {sick} violates policy demo-policy: health_metric Equals 2 "
            "(value 2)"
        ) in result.stdout
        node = explain("node", sick, "--url", demo.dashboard)
        assert f"{NS}/{pod} (TASViolations)" in node.stdout
        assert "deschedule: violates: demo-policy: health_metric Equals 2 (value 2)" in (
            node.stdout
        )
    finally:
        demo.set_health(sick, "0")
