"""The dashboard's recorder: what each step of the loop adds to the decision log, the state and
the history, driven with values (no server, no threads).

Covered: label and taint writes logged as they happen (a pod labelled and evicted within one
tick still shows its label); health changes; pending pods logged once per reason; evictions
with reason, strategy and the owner's replacement; circuit-breaker trips and recoveries;
extender decisions in order, a filter line naming the nodes it was not asked about and why
(the scheduler's own filters: a pod's node affinity); an eviction's predicted destination said
to be one, and where its replacement went instead and why; history points with the fleet average,
thresholds and classes (deviation thresholds with the average they move with), one per moment
of the world's clock;
metric ages on the world's clock (a scenario's: its seconds, not the wall's); an overutilized
node's streak (since when, when last above high, whether the hysteresis holds it, until when);
no entry stamped before the one logged ahead of it; the scenario the state carries (and every
key before the first tick); reading the log after an id, by kind and with a limit; each node's
pressure curve as the last LoadAware cycle had it (learned, or the shared model with its sample
count and the count it needs) and the PSI it predicts at the node's utilization now beside the
shared model's, only where a LoadAware learns curves; each node's load average per CPU
(`cpu_load`, fetched with the metrics shown), left out where the node reports none; the bar
LoadAware sets for a move off a node that serves its demand, as the descheduler's LoadAware
applies it (none where no LoadAware does: off the CPU signals, or `atRiskLoad: 0`).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from descheduler.assemble import assemble_descheduler
from descheduler.classify import ThresholdSpec, classify, hold_overutilized
from descheduler.config import DeschedulerConfig, load_config_file
from descheduler.cycle import CycleReport
from descheduler.evictor import Blocked, EvictionDecision, Rail
from extender.decisions import Decision, DecisionLog, Outcome, Verb
from tas.adapters.metrics import open_metric_view
from tas.adapters.metrics.textfile import write_node_series
from tas.calibration import Calibration
from tas.calibration.curve import CurveLearner, family_pressure
from tas.cluster.model import Taint, TaintEffect
from tas.metrics.static import StaticMetricView
from tas.policies.store import PolicyStore
from tas.pressure import erlang_c
from tas.types import MetricName, Namespace, NodeName
from tas_dashboard.recorder import SHOWN_METRICS, Recorder, ServedDemand, Tick, served_demand
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.demo import build_demo_cluster
from tas_inmemory.scheduler import ScheduleResult
from tas_simulator.contenders import resolve
from tas_simulator.scenario import load_scenario
from tests.builders import ManualClock
from tests.descheduler.builders import FakeClock, policy_config

NAMESPACE = Namespace("health-metric-demo")
REPO = Path(__file__).resolve().parents[2]
#: The descheduler `make run` runs (`tas run`'s default `--descheduler-config`).
DEMO_DESCHEDULER = REPO / "deploy" / "health-metric-demo" / "descheduler-demo.yaml"


def columns(health: dict[str, float], utilization: dict[str, float] | None = None) -> Any:
    result = {MetricName("health_metric"): {NodeName(n): v for n, v in health.items()}}
    if utilization is not None:
        result[MetricName("cpu_utilization")] = {NodeName(n): v for n, v in utilization.items()}
    return result


def make_recorder() -> tuple[Recorder, InMemoryCluster, DecisionLog]:
    cluster = build_demo_cluster(replicas=2)
    decisions = DecisionLog()
    recorder = Recorder(
        cluster=cluster,
        policies=PolicyStore(),
        decisions=decisions,
        info={},
        clock=ManualClock(1000.0),
    )
    return recorder, cluster, decisions


def summaries(recorder: Recorder, kind: str | None = None) -> list[str]:
    return [e["summary"] for e in recorder.log(kinds={kind} if kind else None)]


def test_label_and_taint_writes_are_logged_as_they_happen() -> None:
    recorder, cluster, _ = make_recorder()
    cluster.patch_node_labels(NodeName("node-c"), set_labels={"demo-policy": "violating"})
    pod = cluster.list_pods()[0]
    cluster.bind_pod(pod.namespace, pod.name, NodeName("node-c"))
    cluster.patch_pod_labels(pod.namespace, pod.name, set_labels={"violate": "demo-policy"})
    cluster.evict_pod(pod.namespace, pod.name, reason="gone")  # before any tick looked
    cluster.set_node_taints(
        NodeName("node-d"),
        [Taint("telemetry.aware.scheduling/overutilized", TaintEffect.PREFER_NO_SCHEDULE, "true")],
    )
    cluster.patch_node_labels(NodeName("node-c"), set_labels={}, remove=["demo-policy"])
    assert summaries(recorder, "label") == [
        "node node-c: set demo-policy=violating",
        f"pod {pod.namespace}/{pod.name} on node-c: set violate=demo-policy",
        "node node-c: removed demo-policy",
    ]
    assert summaries(recorder, "taint") == [
        "node node-d: tainted telemetry.aware.scheduling/overutilized=true:PreferNoSchedule"
    ]


def test_a_health_change_is_logged_once_with_both_values() -> None:
    recorder, _, _ = make_recorder()
    recorder.observe_inputs(1.0, columns({"node-c": 0}))
    recorder.observe_inputs(2.0, columns({"node-c": 2}))
    recorder.observe_inputs(3.0, columns({"node-c": 2}))
    recorder.observe_inputs(4.0, columns({}))
    assert summaries(recorder, "metric") == [
        "node node-c: health_metric 0 -> 2",
        "node node-c: health_metric 2 -> missing",
    ]


def test_a_pending_pod_is_logged_once_per_reason_and_when_placed() -> None:
    recorder, _, _ = make_recorder()
    waiting = ScheduleResult("ns/p", None, "0/5 nodes are available")
    for now in (1.0, 2.0):
        recorder.observe_placements(now, [waiting])
    recorder.observe_placements(3.0, [ScheduleResult("ns/p", None, "binding failed")])
    recorder.observe_placements(4.0, [ScheduleResult("ns/p", NodeName("node-a"), "scheduled")])
    assert summaries(recorder, "schedule") == [
        "ns/p stays pending: 0/5 nodes are available",
        "ns/p stays pending: binding failed",
        "scheduled ns/p on node-a",
    ]


def test_extender_decisions_are_logged_oldest_first_with_their_verdicts() -> None:
    recorder, _, decisions = make_recorder()
    for index, verb in enumerate((Verb.FILTER, Verb.PRIORITIZE)):
        decisions.record(
            Decision(
                time=float(index),
                verb=verb,
                pod="ns/p",
                pod_uid="u",
                policy="ns/demo-policy",
                outcome=Outcome.APPLIED,
                reason="",
                candidates=(NodeName("node-a"), NodeName("node-b")),
                failed={NodeName("node-b"): "demo-policy: health_metric Equals 1 (value 1)"},
                scores={NodeName("node-a"): 10, NodeName("node-b"): 0},
            )
        )
    recorder.observe_placements(5.0, [])
    recorder.observe_placements(6.0, [])  # nothing new: nothing logged twice
    assert summaries(recorder) == [
        "filter ns/p: kept node-a; removed node-b (demo-policy: health_metric Equals 1 (value 1))",
        "prioritize ns/p: node-a 10, node-b 0",
    ]


def test_a_filter_line_says_why_the_nodes_it_was_not_asked_about_were_left_out() -> None:
    """kube-scheduler calls the extender with the nodes its own filters left: a demo pod's
    node affinity (NotIn violating) removes a node labelled violating before the call."""
    recorder, cluster, decisions = make_recorder()
    pod = next(p for p in cluster.list_pods() if p.name.startswith("demo-app"))
    node = cluster.get_node(NodeName("node-c"))
    cluster.update_node(
        dataclasses.replace(node, labels={**node.labels, "demo-policy": "violating"})
    )
    asked = tuple(NodeName(f"node-{c}") for c in "abde")
    decisions.record(
        Decision(
            time=1.0, verb=Verb.FILTER, pod=f"{pod.namespace}/{pod.name}", pod_uid="u",
            policy="health-metric-demo/demo-policy", outcome=Outcome.APPLIED, reason="",
            candidates=asked, failed={NodeName("node-b"): "demo-policy: health_metric Equals 1"},
        )
    )  # fmt: skip
    recorder.observe_placements(2.0, [])
    (line,) = summaries(recorder, "filter")
    assert line.endswith(
        "; removed node-b (demo-policy: health_metric Equals 1); not asked, kube-scheduler's own "
        "filters removed them first: node-c (node selector or required node affinity does not "
        "match)"
    )
    (entry,) = recorder.log(kinds={"filter"})
    assert entry["details"]["notAsked"] == {
        "node-c": "node selector or required node affinity does not match"
    }


def test_evictions_name_their_reason_strategy_and_replacement() -> None:
    recorder, cluster, _ = make_recorder()
    pod = cluster.list_pods()[0]
    cluster.bind_pod(pod.namespace, pod.name, NodeName("node-c"))
    cluster.evict_pod(pod.namespace, pod.name, reason="node node-c violates policy demo-policy")
    replacement = cluster.evictions[-1].replacement
    report = CycleReport(
        decisions=[
            EvictionDecision(
                pod.namespace, pod.name, NodeName("node-c"), "TASViolations",
                "node node-c violates policy demo-policy", "evicted",
            ),
            EvictionDecision(
                NAMESPACE, "other", NodeName("node-c"), "TASViolations", "same", "refused"
            ),
        ]
    )  # fmt: skip
    recorder.observe_cycle(10.0, report)
    evicted, refused = recorder.log(kinds={"eviction"})
    assert evicted["summary"] == (
        f"evicted {pod.namespace}/{pod.name} from node-c (TASViolations): node node-c violates "
        f"policy demo-policy; its owner created {pod.namespace}/{replacement}"
    )
    assert evicted["details"]["replacement"] == replacement
    assert refused["summary"].startswith(f"eviction refused: {NAMESPACE}/other from node-c")
    recorder.observe(Tick(now=11.0, columns={}))
    assert recorder.state()["descheduler"]["evictions"] == 1
    assert recorder.history()[-1]["evictions"] == 1


def test_an_evictions_predicted_destination_is_said_to_be_one_and_where_it_went_and_why() -> None:
    """A load-aware reason names where the pod would go ("0.22 -> 0.63 on node-a"): the
    scheduler places its replacement, and when it chooses another node the log says so, with
    the extender's scores it chose by."""
    recorder, cluster, decisions = make_recorder()
    pod = next(p for p in cluster.list_pods() if p.controller is not None)
    cluster.bind_pod(pod.namespace, pod.name, NodeName("node-e"))
    reason = (
        "node node-e is overutilized: cpu_utilization 86.38 > high 85; moving 1.10 cores: "
        "pressure 0.72 -> 0.27 on node-e, 0.22 -> 0.63 on node-a; relief 1.8"
    )
    cluster.evict_pod(pod.namespace, pod.name, reason=reason)
    replacement = f"{pod.namespace}/{cluster.evictions[-1].replacement}"
    report = CycleReport(
        decisions=[
            EvictionDecision(
                pod.namespace, pod.name, NodeName("node-e"), "LoadAware", reason, "evicted"
            )
        ]
    )
    recorder.observe_cycle(10.0, report)
    (evicted,) = summaries(recorder, "eviction")
    assert "relief 1.8 (a prediction: the scheduler, not the descheduler, places its" in evicted
    decisions.record(
        Decision(
            time=11.0, verb=Verb.PRIORITIZE, pod=replacement, pod_uid="u",
            policy="health-metric-demo/demo-policy", outcome=Outcome.APPLIED, reason="",
            candidates=(NodeName("node-a"), NodeName("node-c")), failed={},
            scores={NodeName("node-a"): 3, NodeName("node-c"): 7},
        )
    )  # fmt: skip
    recorder.observe_placements(11.0, [ScheduleResult(replacement, NodeName("node-c"), "ok")])
    (placed,) = summaries(recorder, "schedule")
    assert placed == (
        f"scheduled {replacement} on node-c (its eviction predicted node-a; the scheduler chose "
        "node-c: the extender's scores node-c 7, node-a 3, with kube-scheduler's own (resources, "
        "soft taints))"
    )


def test_the_circuit_breaker_is_logged_when_it_trips_and_when_it_closes() -> None:
    recorder, _, _ = make_recorder()
    for now, reason in ((1.0, None), (2.0, "3 of 5 nodes violate at once"), (3.0, "again"),
                        (4.0, None)):  # fmt: skip
        recorder.observe_cycle(now, CycleReport(circuit_breaker=reason))
    assert summaries(recorder, "breaker") == [
        "circuit breaker open: 3 of 5 nodes violate at once",
        "circuit breaker open: again",
        "circuit breaker closed: evictions resume",
    ]


def test_a_history_point_has_the_fleet_average_thresholds_and_classes() -> None:
    recorder, _, _ = make_recorder()
    usages = {
        NodeName("node-a"): {"cpu_utilization": 90.0},
        NodeName("node-b"): {"cpu_utilization": 10.0},
    }
    classification = classify(
        usages, ThresholdSpec({"cpu_utilization": 35.0}, {"cpu_utilization": 80.0})
    )
    recorder.observe_cycle(1.0, CycleReport(classifications={"relieve": classification}))
    recorder.observe(Tick(now=1.0, columns=columns({}, {"node-a": 0.9, "node-b": 0.1})))
    (point,) = recorder.history()
    assert point["cpu_utilization"] == {"node-a": 0.9, "node-b": 0.1, "fleet": 0.5}
    assert point["usage"] == {"node-a": 90.0, "node-b": 10.0}
    assert (point["low"], point["high"]) == (35.0, 80.0)
    assert point["classification"] == {"node-a": 1.0, "node-b": -1.0}
    state = recorder.state()
    by_name = {n["name"]: n for n in state["nodes"]}
    assert by_name["node-a"]["classification"] == "overutilized"
    assert state["descheduler"]["thresholds"] == {
        "low": {"cpu_utilization": 35.0},
        "high": {"cpu_utilization": 80.0},
        "average": None,  # fixed thresholds: they do not move
    }


def test_deviation_thresholds_carry_the_fleet_average_they_move_with() -> None:
    recorder, _, _ = make_recorder()
    usages = {
        NodeName("node-a"): {"cpu_combined": 90.0},
        NodeName("node-b"): {"cpu_combined": 10.0},
    }
    spec = ThresholdSpec(
        {"cpu_combined": 10.0}, {"cpu_combined": 20.0}, use_deviation_thresholds=True
    )
    recorder.observe_cycle(1.0, CycleReport(classifications={"relieve": classify(usages, spec)}))
    recorder.observe(Tick(now=1.0, columns=columns({})))
    assert recorder.state()["descheduler"]["thresholds"] == {
        "low": {"cpu_combined": 40.0},
        "high": {"cpu_combined": 70.0},
        "average": {"cpu_combined": 50.0},
    }


def test_no_entry_is_stamped_before_the_one_logged_ahead_of_it() -> None:
    """A label written mid-tick is stamped when it is made; the eviction that follows it is
    logged with the tick's start: newest first must still read newest first."""
    recorder, cluster, _ = make_recorder()  # its clock reads 1000
    cluster.patch_node_labels(NodeName("node-c"), set_labels={"demo-policy": "violating"})
    pod = cluster.list_pods()[0]
    decision = EvictionDecision(
        namespace=pod.namespace, name=pod.name, node=NodeName("node-c"), strategy="TASViolations",
        reason="health_metric Equals 2", result="evicted",
    )  # fmt: skip
    recorder.observe_cycle(999.0, CycleReport(decisions=[decision]))
    times = [e["time"] for e in recorder.log()]
    assert times == sorted(times)
    assert recorder.log(kinds={"eviction"})[0]["time"] == 1000.0


def test_the_state_carries_the_scenario_it_is_told() -> None:
    cluster = build_demo_cluster(replicas=1)
    running = {"name": "health-demo", "elapsed": 60.0, "finished": False}
    recorder = Recorder(
        cluster=cluster,
        policies=PolicyStore(),
        decisions=DecisionLog(),
        info={},
        scenario=lambda: dict(running),
        clock=ManualClock(1000.0),
    )
    recorder.observe(Tick(now=1000.0, columns=columns({})))
    assert recorder.state()["scenario"] == running
    recorder_without, _, _ = make_recorder()
    recorder_without.observe(Tick(now=1000.0, columns=columns({})))
    assert recorder_without.state()["scenario"] is None


def test_the_state_before_the_first_tick_has_every_key_a_ticked_one_has() -> None:
    recorder, _, _ = make_recorder()
    before = recorder.state()
    recorder.observe(Tick(now=1000.0, columns=columns({})))
    after = recorder.state()
    assert set(before) == set(after)
    assert set(before["descheduler"]) == set(after["descheduler"])


def test_the_log_is_read_after_an_id_by_kind_and_newest_last() -> None:
    recorder, _, _ = make_recorder()
    for index in range(5):
        recorder.note("control", f"c{index}", source="dashboard", time=float(index))
    recorder.note("other", "o", source="x", time=9.0)
    first = recorder.log()[0]["id"]
    assert [e["summary"] for e in recorder.log(after=first + 1)] == ["c2", "c3", "c4", "o"]
    assert [e["summary"] for e in recorder.log(limit=2)] == ["c4", "o"]
    assert [e["summary"] for e in recorder.log(kinds={"other"})] == ["o"]


def test_a_history_point_splits_its_evictions_by_strategy_and_node() -> None:
    recorder, _, _ = make_recorder()

    def evicted(name: str, node: str, strategy: str) -> EvictionDecision:
        return EvictionDecision(NAMESPACE, name, NodeName(node), strategy, "why", "evicted")

    report = CycleReport(
        decisions=[
            evicted("a", "node-c", "TASViolations"),
            evicted("b", "node-c", "TASViolations"),
            evicted("c", "node-d", "LoadAware"),
            EvictionDecision(NAMESPACE, "d", NodeName("node-d"), "LoadAware", "why", "refused"),
        ]
    )
    recorder.observe_cycle(10.0, report)
    recorder.observe(Tick(now=10.0, columns={}))
    recorder.observe(Tick(now=11.0, columns={}))
    first, second = recorder.history()
    assert first["evictions"] == 3
    assert first["evicted"] == {"TASViolations": {"node-c": 2}, "LoadAware": {"node-d": 1}}
    assert second["evictions"] == 0
    assert "evicted" not in second, "a point counts only its own period's evictions"


def test_a_tick_at_which_the_worlds_clock_stood_still_adds_no_point() -> None:
    """A scenario that ended (or a wall tick between two scenario steps) ticks on one moment:
    a reader asking for the points after the newest it has would never see a second point at
    that moment, so there is none, and its evictions are counted in the next point."""
    recorder, _, _ = make_recorder()
    recorder.observe(Tick(now=10.0, columns={}))
    report = CycleReport(
        decisions=[
            EvictionDecision(NAMESPACE, "a", NodeName("node-c"), "LoadAware", "why", "evicted")
        ]
    )
    recorder.observe_cycle(10.0, report)
    recorder.observe(Tick(now=10.0, columns={}))
    assert [p["time"] for p in recorder.history()] == [10.0]
    recorder.observe(Tick(now=12.0, columns={}))
    assert [p["time"] for p in recorder.history(after=10.0)] == [12.0]
    assert recorder.history()[-1]["evicted"] == {"LoadAware": {"node-c": 1}}
    assert sum(p["evictions"] for p in recorder.history()) == 1
    assert recorder.state()["descheduler"]["evictions"] == 1


def test_a_nodes_metric_age_keeps_growing_once_its_values_go_stale(tmp_path: Path) -> None:
    """The real textfile view: node-c's file is no longer rewritten, node-a's is. The world's
    clock is a scenario's, years behind the wall's: ages are on it (the recorder's `clock`, the
    view's too), in the world's seconds."""
    clock = ManualClock(time.time() - 60_000_000)
    directory = tmp_path / "metrics"
    directory.mkdir()

    def write(node: str) -> None:
        write_node_series(directory, node, {"health_metric": 0})
        stamp = clock.now().timestamp()
        os.utime(directory / f"{node}.prom", (stamp, stamp))

    for node in ("node-a", "node-c"):
        write(node)
    view = open_metric_view(f"textfile:{directory}", sync_period=1.0, clock=clock)
    view.set_wanted([MetricName("health_metric")])
    recorder = Recorder(
        cluster=build_demo_cluster(replicas=2),
        policies=PolicyStore(),
        decisions=DecisionLog(),
        info={},
        metric_times=view,
        clock=clock,
    )

    def tick() -> dict[str, Any]:
        view.refresh_once()
        recorder.observe(Tick(now=clock.now().timestamp(), columns=view.columns()))
        return {n["name"]: n for n in recorder.state()["nodes"]}

    clock.advance(2.0)
    nodes = tick()
    assert nodes["node-c"]["metricAge"] == {"health_metric": 2.0}
    clock.advance(100.0)
    write("node-a")
    nodes = tick()
    assert "health_metric" not in nodes["node-c"]["metrics"], "stale: the components lost it"
    assert nodes["node-c"]["metricAge"] == {"health_metric": 102.0}
    assert nodes["node-a"]["metricAge"] == {"health_metric": 0.0}
    assert "node-b" not in recorder.history()[-1]["metric_age"], "node-b never reported"
    assert recorder.history()[-1]["metric_age"]["node-c"] == 102.0
    assert recorder.state()["metricMaxAge"] == view.max_age == 30.0


def test_an_overutilized_node_says_since_when_and_how_long_the_hysteresis_holds_it() -> None:
    recorder, _, _ = make_recorder()
    spec = ThresholdSpec({"cpu_utilization": 35.0}, {"cpu_utilization": 85.0})
    memory: dict[NodeName, datetime] = {}

    def cycle(now: float, a: float) -> None:
        nonlocal memory
        usages = {
            NodeName("node-a"): {"cpu_utilization": a},
            NodeName("node-b"): {"cpu_utilization": 10.0},
        }
        held = dataclasses.replace(classify(usages, spec), hold_seconds=120.0)
        held, memory = hold_overutilized(held, memory, datetime.fromtimestamp(now, UTC))
        recorder.observe_cycle(now, CycleReport(classifications={"relieve": held}))
        recorder.observe(Tick(now=now, columns=columns({})))

    def node_a() -> Any:
        return next(n for n in recorder.state()["nodes"] if n["name"] == "node-a")

    cycle(100.0, 90.0)  # above high 85
    cycle(110.0, 92.0)
    assert node_a()["overutilized"] == {
        "since": 100.0, "lastAbove": 110.0, "held": False, "holdSeconds": 120.0, "holdUntil": 230.0,
        "keptBy": None,
    }  # fmt: skip
    cycle(120.0, 76.0)  # under high, above low: held, as the 76% against 85
    assert node_a()["classification"] == "overutilized"
    assert node_a()["overutilized"] == {
        "since": 100.0, "lastAbove": 110.0, "held": True, "holdSeconds": 120.0, "holdUntil": 230.0,
        "keptBy": None,
    }  # fmt: skip
    cycle(130.0, 30.0)  # at or below low: released
    assert node_a()["classification"] == "underutilized"
    assert node_a()["overutilized"] is None
    cycle(140.0, 90.0)  # a new streak
    assert node_a()["overutilized"]["since"] == 140.0


def test_a_hot_node_nothing_left_says_which_rule_kept_its_pods() -> None:
    recorder, _, _ = make_recorder()
    spec = ThresholdSpec({"cpu_utilization": 35.0}, {"cpu_utilization": 85.0})
    usages = {
        NodeName("node-a"): {"cpu_utilization": 95.0},
        NodeName("node-b"): {"cpu_utilization": 10.0},
    }
    does_not_pay = (
        "the move does not pay: moving 1.39 cores: pressure 1.00 -> 0.52 on node-a, 0.94 -> 1.00 "
        "on node-b; relief 4.590 - burden 1.847 stalled cores vs cost 0.139 (gain x0.0); it "
        "would make node-b the next hot node"
    )
    hot_next = "the move does not pay: it would make its destination the next hot node"
    blocked = [
        Blocked(Namespace("ns"), f"p{i}", NodeName("node-a"), "LoadAware", Rail.PLUGIN, why, rule)
        for i, (why, rule) in enumerate(
            [
                (does_not_pay, hot_next),
                (does_not_pay, hot_next),
                ("owner ReplicaSet/rs is cooling down", ""),
            ]
        )
    ]
    report = CycleReport(classifications={"relieve": classify(usages, spec)}, blocked=blocked)
    recorder.observe_cycle(100.0, report)
    recorder.observe(Tick(now=100.0, columns=columns({})))
    node = next(n for n in recorder.state()["nodes"] if n["name"] == "node-a")
    assert node["overutilized"]["keptBy"] == (
        "LoadAware: the move does not pay: it would make its destination the next hot node "
        "(2 pod(s); 1 held for other reasons)"
    )


def test_a_nodes_pressure_curve_and_what_it_predicts_now_are_in_the_state() -> None:
    cluster = build_demo_cluster(replicas=2)
    learner = CurveLearner(min_samples=8)
    recorder = Recorder(
        cluster=cluster,
        policies=PolicyStore(),
        decisions=DecisionLog(),
        info={},
        clock=ManualClock(1000.0),
        curves=learner,
    )
    cores = {n.name: n.allocatable["cpu"] for n in cluster.list_nodes()}
    assert cores[NodeName("node-a")] == 4.0
    # node-a stalls as 2 servers would on its 4 cores (bursty); node-b has 5 samples, node-c none.
    for i in range(10):
        u = 0.3 + 0.04 * i
        learner.observe(
            NodeName("node-a"), cores=4.0, utilization=u, psi=family_pressure(2, u), time=i
        )
    for i in range(5):
        learner.observe(NodeName("node-b"), cores=4.0, utilization=0.5, psi=0.2, time=i)
    recorder.observe(Tick(now=9.0, columns={}))
    assert all(n["curve"] is None for n in recorder.state()["nodes"])  # no cycle learned one yet

    recorder.observe_cycle(10.0, CycleReport(calibration=Calibration(learner.curves(cores))))
    now = {
        MetricName("cpu_utilization"): {NodeName("node-a"): 0.6, NodeName("node-b"): 0.6},
        MetricName("cpu_pressure"): {NodeName("node-a"): 0.33},
    }
    recorder.observe(Tick(now=11.0, columns=now))
    curve = {n["name"]: n["curve"] for n in recorder.state()["nodes"]}
    assert curve["node-a"] == {
        "learned": True, "servers": 2, "sharedServers": 4, "fitted": 2.0, "samples": 10,
        "minSamples": 8, "window": 32, "cores": 4.0, "utilization": 0.6,
        # PSI at 60% busy: Erlang C with 2 servers at 1.2 busy, against 4 at 2.4.
        "predicted": round(erlang_c(2, 1.2), 4), "shared": round(erlang_c(4, 2.4), 4),
        "measured": 0.33, "cycle": 10.0,
    }  # fmt: skip
    assert curve["node-a"]["predicted"] > curve["node-a"]["shared"]
    assert curve["node-b"]["learned"] is False
    assert (curve["node-b"]["samples"], curve["node-b"]["servers"]) == (5, 4)
    assert curve["node-b"]["predicted"] == curve["node-b"]["shared"] == round(erlang_c(4, 2.4), 4)
    assert curve["node-b"]["measured"] is None
    assert curve["node-c"]["learned"] is False
    assert curve["node-c"]["samples"] == 0
    assert curve["node-c"]["utilization"] is None
    assert curve["node-c"]["predicted"] is None


def test_no_curve_is_shown_where_no_loadaware_learns_one() -> None:
    recorder, cluster, _ = make_recorder()
    cores = {n.name: n.allocatable["cpu"] for n in cluster.list_nodes()}
    learner = CurveLearner(min_samples=1)
    learner.observe(NodeName("node-a"), cores=4.0, utilization=0.5, psi=0.2, time=1.0)
    recorder.observe_cycle(10.0, CycleReport(calibration=Calibration(learner.curves(cores))))
    recorder.observe(Tick(now=11.0, columns={}))
    assert [n["curve"] for n in recorder.state()["nodes"]] == [None] * len(cores)


def test_each_nodes_load_per_cpu_is_in_the_state_and_a_missing_one_left_out() -> None:
    assert MetricName("cpu_load") in SHOWN_METRICS  # the worlds' views are told to fetch it
    recorder, _, _ = make_recorder()
    now = {MetricName("cpu_load"): {NodeName("node-a"): 0.82, NodeName("node-b"): 1.0}}
    recorder.observe(Tick(now=1.0, columns=now))
    metrics = {n["name"]: n["metrics"] for n in recorder.state()["nodes"]}
    assert metrics["node-a"]["cpu_load"] == 0.82
    assert metrics["node-b"]["cpu_load"] == 1.0
    # Missing is absent (the page says "–"), never 0.
    assert "cpu_load" not in metrics["node-c"]


def _ours() -> DeschedulerConfig:
    """The descheduler `tas run --scenario` runs: ours, as `tas simulate` configures it."""
    scenario = load_scenario("health-demo")
    config = resolve("ours", scenario.contenders.get("ours")).config
    assert config is not None
    return config


CPU_ONLY = {"thresholds": {"cpu_utilization": 35}, "targetThresholds": {"cpu_utilization": 85}}


@pytest.mark.parametrize(
    ("config", "served"),
    [
        pytest.param(
            lambda: load_config_file(DEMO_DESCHEDULER),
            ServedDemand(at_risk_load=1.0, served_gain=16.0, at_risk_pressure=0.25),
            id="make run's descheduler: LoadAware's shipped rule",
        ),
        pytest.param(
            _ours,
            ServedDemand(at_risk_load=1.0, served_gain=16.0, at_risk_pressure=0.25),
            id="a scenario's: ours",
        ),
        pytest.param(
            lambda: policy_config(
                "LoadAware",
                args={
                    "LoadAware": {
                        **CPU_ONLY,
                        "atRiskLoad": 0.9,
                        "servedGain": 8,
                        "atRiskPressure": 0.4,
                    }
                },
            ),
            ServedDemand(at_risk_load=0.9, served_gain=8.0, at_risk_pressure=0.4),
            id="as configured",
        ),
        pytest.param(
            lambda: policy_config("LoadAware", args={"LoadAware": {**CPU_ONLY, "atRiskLoad": 0}}),
            None,
            id="atRiskLoad 0 turns the rule off",
        ),
        pytest.param(
            lambda: policy_config(
                "LoadAware",
                args={
                    "LoadAware": {
                        "thresholds": {"cpu_utilization": 35, "memory_utilization": 35},
                        "targetThresholds": {"cpu_utilization": 85, "memory_utilization": 85},
                    }
                },
            ),
            None,
            id="off the CPU signals alone LoadAware has no stall model",
        ),
        pytest.param(lambda: policy_config("TASViolations"), None, id="no LoadAware"),
    ],
)
def test_the_bar_for_a_move_off_a_node_that_serves_its_demand_is_loadawares_own(
    config: Callable[[], DeschedulerConfig], served: ServedDemand | None
) -> None:
    cluster = build_demo_cluster(replicas=1)
    descheduler = assemble_descheduler(
        config=config(),
        cluster=cluster,
        metric_view=StaticMetricView({}),
        policies=dict,
        clock=FakeClock(),
    )
    assert served_demand(descheduler) == served
    recorder = Recorder(
        cluster=cluster,
        policies=PolicyStore(),
        decisions=DecisionLog(),
        info={},
        clock=ManualClock(1000.0),
        served=served,
    )
    said = None
    if served is not None:
        said = {
            "atRiskLoad": served.at_risk_load,
            "servedGain": served.served_gain,
            "atRiskPressure": served.at_risk_pressure,
        }
    assert recorder.state()["descheduler"]["servedDemand"] == said  # before the first tick too
    recorder.observe(Tick(now=1000.0, columns={}))
    assert recorder.state()["descheduler"]["servedDemand"] == said
    assert served_demand(None) is None
