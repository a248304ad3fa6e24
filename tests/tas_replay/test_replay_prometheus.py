"""`tas replay` as a user runs it, against a real Prometheus serving backfilled history
(tests/tas_replay/history.py tells the story and its times).

Covered:
- violating intervals match the times the series crossed the threshold, to the step;
- a scrape gap longer than --metric-max-age is missing (not the value Prometheus carries on);
- the breaker holds a fleet-wide jump: nothing newly violates, nothing is evicted;
- would-be evictions are of pods labelled with the policy only; a pod placed on a violating
  node is a filtered placement;
- --compare prints what a changed threshold changes;
- a window over Prometheus's 11,000 points per query is read in pieces, with the same answer;
- --scenario-out writes a scenario that `tas simulate` loads and runs;
- bad input (unreachable Prometheus, an empty window, a policy file with errors, too many
  steps) is one line and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.processes import tas_command
from tests.tas_replay.history import T0, backfilled_prometheus

POLICY = """\
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata: {{name: health, namespace: default}}
spec:
  strategies:
    deschedule:
      rules: [{{metricname: health_metric, operator: GreaterThan, target: {target}}}]
    dontschedule:
      rules: [{{metricname: health_metric, operator: GreaterThan, target: {target}}}]
"""


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with backfilled_prometheus(tmp_path_factory.mktemp("prometheus")) as process:
        process.start(timeout=60)
        yield process.url


def replay(
    workdir: Path,
    url: str,
    *extra: str,
    target: float = 0.5,
    step: str = "30s",
    charts: bool = False,
) -> Any:
    policy = workdir / "policy.yaml"
    policy.write_text(POLICY.format(target=target))
    return subprocess.run(
        tas_command(
            "replay",
            "--prometheus",
            url,
            "--start",
            str(T0),
            "--end",
            str(T0 + 3600),
            "--step",
            step,
            "--policies",
            str(policy),
            "--out",
            str(workdir / "out"),
            *([] if charts else ["--no-charts"]),
            *extra,
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def replayed(prometheus: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    workdir = tmp_path_factory.mktemp("replay")
    compare = workdir / "raised.yaml"
    compare.write_text(POLICY.format(target=1.5))
    done = replay(
        workdir,
        prometheus,
        "--compare",
        str(compare),
        "--scenario-out",
        str(workdir / "history.yaml"),
        charts=True,
    )
    assert done.returncode == 0, done.stderr
    return done, workdir


def report(workdir: Path) -> Any:
    return json.loads((workdir / "out" / "replay.json").read_text())["policies"]["default/health"]


def relative(spans: list[list[float]]) -> list[list[float]]:
    return [[start - T0, end - T0] for start, end in spans]


def test_violating_intervals_match_the_threshold_crossings_to_the_step(
    replayed: tuple[Any, Path],
) -> None:
    nodes = report(replayed[1])["nodes"]
    assert relative(nodes["node-a"]["intervals"]) == [[600, 1200]]
    assert nodes["node-a"]["violating_seconds"] == 600
    assert nodes["node-a"]["dontschedule_seconds"] == 600
    assert "node-d" not in nodes or nodes["node-d"]["violating_seconds"] == 0


def test_a_scrape_gap_longer_than_the_max_age_is_missing_and_never_violates(
    replayed: tuple[Any, Path],
) -> None:
    # node-b's last sample of 1 is at 1485; at 1530 it is 45 s old (> 30 s): missing. Without
    # the staleness rule Prometheus's five-minute lookback would keep it violating to 1800.
    nodes = report(replayed[1])["nodes"]
    assert relative(nodes["node-b"]["intervals"]) == [[1410, 1530]]


def test_the_breaker_holds_a_fleet_wide_jump(replayed: tuple[Any, Path]) -> None:
    result = report(replayed[1])
    assert result["breaker_open_seconds"] == 300
    assert relative(result["breaker_open_intervals"]) == [[2400, 2700]]
    for record in result["nodes"].values():
        assert all(end - T0 <= 1530 for _, end in record["intervals"])
    assert all(e["time"] - T0 < 2400 for e in result["would_evict"])


def test_would_be_evictions_are_of_labelled_pods_on_violating_nodes_only(
    replayed: tuple[Any, Path],
) -> None:
    evictions = report(replayed[1])["would_evict"]
    assert [(e["pod"], e["node"], e["time"] - T0) for e in evictions] == [
        ("default/web-1", "node-a", 600),
        ("default/web-3", "node-a", 900),
    ]
    assert evictions[0]["reason"] == "health: health_metric GreaterThan 0.5 (value 1)"


def test_a_pod_placed_on_a_node_dontschedule_removes_is_a_filtered_placement(
    replayed: tuple[Any, Path],
) -> None:
    placements = report(replayed[1])["filtered_placements"]
    assert [(p["pod"], p["node"], p["time"] - T0) for p in placements] == [
        ("default/web-3", "node-a", 870)
    ]


def test_a_png_timeline_is_drawn_per_policy(replayed: tuple[Any, Path]) -> None:
    png = replayed[1] / "out" / "timeline-default-health.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_prints_what_a_raised_threshold_changes(replayed: tuple[Any, Path]) -> None:
    done, _ = replayed
    assert "default/health: violating nodes 2 -> 0" in done.stdout
    assert "evictions 2 -> 0" in done.stdout


def test_a_window_of_more_steps_than_prometheus_answers_at_once_is_read_in_pieces(
    prometheus: str, tmp_path: Path
) -> None:
    done = replay(tmp_path, prometheus, step="0.3s")  # 12,001 steps
    assert done.returncode == 0, done.stderr
    result = report(tmp_path)
    assert relative(result["nodes"]["node-a"]["intervals"]) == [[600, 1200]]
    assert [(e["pod"], e["time"] - T0) for e in result["would_evict"]] == [
        ("default/web-1", 600),
        ("default/web-3", 900),
    ]


def test_the_scenario_written_from_the_history_loads_and_runs(replayed: tuple[Any, Path]) -> None:
    from tas_simulator.contenders import Contender, resolve
    from tas_simulator.runner import run_contender
    from tas_simulator.scenario import load_scenario

    document = yaml.safe_load((replayed[1] / "history.yaml").read_text())
    (web,) = [w for w in document["workloads"] if w["name"] == "web-abc"]
    assert web["replicas"] == 2  # web-1 and web-2 at the window's start
    assert web["labels"] == {"telemetry-policy": "health"}
    assert web["requests"] == {"cpu": 0.5, "memory": 2**28}
    assert web["usage"]["cpu"]["profile"] == "trace"
    # 0.25 cores per pod; rate() extrapolates a new pod's first minute, so a step may differ.
    cores = [round(v, 3) for _, v in web["usage"]["cpu"]["points"]]
    assert cores.count(0.25) >= len(cores) - 2
    assert {round(v) for _, v in web["usage"]["memory"]["points"]} == {100_000_000}
    assert {"at": 900.0, "scale": {"workload": "web-abc", "replicas": 3}} in document["events"]
    health = [(e["at"], e["set-health"]) for e in document["events"] if "set-health" in e]
    assert health[:2] == [
        (600.0, {"nodes": ["node-a"], "metric": "health_metric", "value": 1.0}),
        (1200.0, {"nodes": ["node-a"], "metric": "health_metric", "value": 0.0}),
    ]
    assert document["nodes"][0]["metrics"] == {"health_metric": 0.0}
    scenario = load_scenario(str(replayed[1] / "history.yaml"))
    assert [n.name for n in scenario.nodes] == ["node-a", "node-b", "node-c", "node-d"]
    contender = resolve("ours")
    assert isinstance(contender, Contender)
    result = run_contender(scenario.with_duration(600.0), contender, seed=1)
    assert result is not None


@pytest.mark.parametrize(
    ("args", "words"),
    [
        pytest.param(
            ["--prometheus", "http://127.0.0.1:9"], "cannot read the history", id="unreachable"
        ),
        pytest.param(["--start", "now", "--end", "-1h"], "the window is empty", id="empty"),
        pytest.param(["--step", "1ms"], "more than the 125,000", id="too-many-steps"),
        pytest.param(["--start", "yesterday"], "is not a time", id="bad-time"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(target=0.5))
    # `--start=-1h`: argparse reads a separate `-1h` as an option, so users write it this way.
    flags = {"--prometheus": "http://127.0.0.1:9", "--start": "-1h", "--end": "now"}
    flags.update(zip(args[::2], args[1::2], strict=True))
    command = [f"{flag}={value}" for flag, value in flags.items()] + ["--policies", str(policy)]
    done = subprocess.run(tas_command("replay", *command), capture_output=True, text=True)
    assert done.returncode == 2
    assert words in done.stderr
    assert "Traceback" not in done.stderr


def test_a_policy_file_with_errors_is_listed_and_exit_2(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.format(target="high"))
    done = subprocess.run(
        tas_command("replay", "--prometheus", "http://127.0.0.1:9", "--policies", str(policy)),
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "has errors" in done.stderr
    assert "target" in done.stderr
    assert "Traceback" not in done.stderr
