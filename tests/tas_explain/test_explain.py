"""`tas explain`'s explanation, as data: what a user reads to answer "why is my pod here?" and
"why was it (or would it be) moved?".

Covered:
- a node's verdict per strategy comes from the rule engine: dontschedule and deschedule say
  which rule is true with its value, or that each is false with its value, or that a metric
  without a fresh value fails open; scheduleonmetric gives the extender's score and the rank;
- the placement is the extender's own decision log (a real `ExtenderService` recording into a
  `DecisionLog`, read back as `/debug/decisions` serves it): every candidate with its verdict,
  the rule that removed it, its score and the values read; found by the pod's UID, so a
  replacement pod with the same name does not borrow its predecessor's placement, and a later
  attempt's filter is not shown with an earlier attempt's scores;
- "would the descheduler move it now" is the descheduler's own cycle run dry over the live
  descheduler's parts: on a violating node it names the plugin and the reason, while the
  cluster sees no eviction, label, taint or Event, even with the live descheduler in Automatic
  mode, and the live descheduler's memory is unchanged; on a healthy node it says the node does
  not violate, and a protected pod says what protects it;
- the descheduler's eviction Events become the node's recent evictions and explain a pod that
  is gone;
- an unknown name lists the names most like it;
- the JSON the dashboard serves turns back into the same explanation (what `tas explain --url`
  prints), and the text names the facts above.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

import pytest

from descheduler.assemble import assemble_descheduler, dry_run
from descheduler.config import load_config_file
from descheduler.cycle import Mode
from descheduler.evictor import Cooldown
from extender.decide import decide_prioritize
from extender.decisions import DecisionLog
from extender.service import DecisionReporter, ExtenderService
from extender.settings import ExtenderSettings
from extender.wire import PodInfo
from tas.cluster.model import ObjectReference, Pod, Taint, TaintEffect, workload_of
from tas.metrics.static import StaticMetricView
from tas.policies.files import load_policy_path
from tas.policies.store import PolicyStore
from tas.rules import ScoreMode
from tas.types import MetricName, Namespace, NodeName
from tas.vocabulary import POLICY_LABEL
from tas_explain.explain import (
    explain_node,
    find_pod,
    near_matches,
    parse_decisions,
    policy_verdicts,
)
from tas_explain.explanation import (
    GONE,
    EventFact,
    PolicyVerdict,
    UnknownObjectError,
    node_from_json,
    pod_from_json,
    to_json,
)
from tas_explain.facts import Explainer, recorded_events
from tas_explain.render import render_node, render_pod
from tests.builders import ManualClock, cluster_of, make_node, make_pod, metrics

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "deploy" / "health-metric-demo" / "health-policy.yaml"
TAS_VIOLATIONS = REPO / "deploy" / "descheduler" / "tas-violations.yaml"
LOAD_AWARE = REPO / "deploy" / "descheduler" / "load-aware.yaml"
NS = "health-metric-demo"
HEALTH = {"node-a": 0, "node-b": 1, "node-c": 2}


def demo_policy() -> PolicyStore:
    store = PolicyStore()
    store.replace(load_policy_path(POLICY).policies)
    return store


class World:
    """The demo's three nodes and policy, the real extender service and a real descheduler."""

    def __init__(self, *, mode: Mode = Mode.AUTOMATIC, config: Path = TAS_VIOLATIONS) -> None:
        self.clock = ManualClock(datetime(2026, 1, 1, tzinfo=UTC))
        self.store = demo_policy()
        self.view = StaticMetricView({"health_metric": HEALTH})
        self.pod = make_pod(
            "demo-1", node="node-c", namespace=NS, policy="demo-policy", owner="demo-app-rs"
        )
        self.cluster = cluster_of(
            *(make_node(n) for n in HEALTH), pods=[self.pod, make_pod("other", node="node-a")]
        )
        self.decisions = DecisionLog()
        self.service = ExtenderService(
            store=self.store,
            metrics=self.view,
            settings=ExtenderSettings(),
            clock=self.clock,
            record=DecisionReporter(self.decisions).record,
        )
        self.descheduler = assemble_descheduler(
            config=load_config_file(config),
            cluster=self.cluster,
            metric_view=self.view,
            policies=lambda: self.store.snapshot().policies,
            mode=mode,
            clock=self.clock,
        )
        self.explainer = Explainer(
            cluster=self.cluster,
            view=self.view,
            policies=lambda: self.store.snapshot().policies,
            decisions=lambda: parse_decisions([d.to_json() for d in self.decisions.recent()]),
            events=recorded_events(lambda: self.cluster.events),
            descheduler=self.descheduler,
            clock=self.clock,
        )

    def place(self, name: str, uid: str) -> None:
        """What kube-scheduler asks the extender for a pod: filter, then prioritize."""
        info = PodInfo(
            name=name, namespace=Namespace(NS), uid=uid, labels={POLICY_LABEL: "demo-policy"}
        )
        candidates = [NodeName(n) for n in HEALTH]
        self.service.filter(info, candidates)
        self.service.prioritize(info, [NodeName("node-a")])


# ------------------------------------------------------------------ verdicts per node


def test_a_nodes_verdicts_name_the_true_rule_or_each_false_one_with_its_value() -> None:
    (policy,) = demo_policy().snapshot().policies.values()
    columns = metrics({"health_metric": HEALTH})
    names = [NodeName(n) for n in HEALTH]
    on_b = {v.strategy: v for v in policy_verdicts(policy, NodeName("node-b"), columns, names)}
    assert on_b["dontschedule"].verdict == "violates"
    assert on_b["dontschedule"].detail == "demo-policy: health_metric Equals 1 (value 1)"
    assert on_b["deschedule"].verdict == "passes"
    assert on_b["deschedule"].detail == "demo-policy: health_metric Equals 2 is false (value 1)"
    # LessThan: the lowest value scores highest, as the extender scores it.
    assert (on_b["scheduleonmetric"].score, on_b["scheduleonmetric"].rank) == (5, 2)
    on_a = {v.strategy: v for v in policy_verdicts(policy, NodeName("node-a"), columns, names)}
    assert (on_a["scheduleonmetric"].score, on_a["scheduleonmetric"].rank) == (10, 1)
    assert "lower value scores higher" in on_a["scheduleonmetric"].detail


def test_a_metric_without_a_fresh_value_is_said_to_fail_open() -> None:
    (policy,) = demo_policy().snapshot().policies.values()
    found = policy_verdicts(policy, NodeName("node-z"), metrics({"health_metric": HEALTH}), [])
    by = {v.strategy: v for v in found}
    assert by["deschedule"].verdict == "no value"
    assert "no fresh value: fails open" in by["deschedule"].detail
    assert by["scheduleonmetric"].verdict == "no value"


def test_a_joined_node_without_a_value_is_scored_as_the_extender_scores_it() -> None:
    # The extender scores a node without a value that runs nothing but its recent placements
    # (herd control's newcomers) as a typical node: the valued nodes' median, not 0.
    store = demo_policy()
    (policy,) = store.snapshot().policies.values()
    columns = metrics({"health_metric": HEALTH})
    nodes = [make_node(n) for n in (*HEALTH, "node-new")]
    extender = decide_prioritize(
        pod=PodInfo(name="p", namespace=Namespace(NS), labels={POLICY_LABEL: "demo-policy"}),
        candidates=[n.name for n in nodes],
        snapshot=store.snapshot(),
        metrics=columns,
        mode=ScoreMode.PROPORTIONAL,
        now=0.0,
        newcomers=frozenset({NodeName("node-new")}),
    ).scores

    def scored(*pods: Pod) -> PolicyVerdict:
        found = explain_node(
            nodes[-1],
            nodes=nodes,
            pods=pods,
            policies={policy.key: policy},
            metrics=columns,
            sample_times={},
            now=0.0,
        )
        (verdict,) = (v for v in found.policies if v.strategy == "scheduleonmetric")
        return verdict

    joined = scored(make_pod("done", node="node-new", phase="Succeeded"))
    assert (joined.verdict, joined.score) == ("no value", extender[NodeName("node-new")])
    assert joined.score == 5  # node-a 10, node-b 5, node-c 0
    assert "runs no pod" in joined.detail
    # A node running a pod: only the extender knows whether it placed it recently; both said.
    busy = scored(make_pod("web", node="node-new"))
    assert busy.score is None
    assert "scores it 0, or 5/10" in busy.detail
    assert "runs no pod" not in busy.detail


# ------------------------------------------------------------------ placement


def test_the_placement_is_the_extenders_own_decision_for_every_candidate() -> None:
    world = World()
    world.place("demo-1", world.pod.uid)
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.placement is not None
    by = {c.node: c for c in found.placement.candidates}
    assert set(by) == set(HEALTH)
    assert by["node-a"].verdict == "pass"
    assert by["node-a"].score == 10
    assert by["node-a"].metrics == {"health_metric": 0.0}
    assert by["node-b"].verdict == "fail"
    assert by["node-b"].reason == "demo-policy: health_metric Equals 1 (value 1)"
    assert by["node-c"].reason == "demo-policy: health_metric Equals 2 (value 2)"
    assert by["node-b"].score is None  # not a candidate of prioritize: it was filtered out
    text = render_pod(found)
    assert "node-b: filtered out; demo-policy: health_metric Equals 1 (value 1)" in text
    assert "node-c: filtered out; demo-policy: health_metric Equals 2 (value 2)  <- runs here" in (
        text
    )


def test_every_node_the_extender_never_saw_is_listed_with_why() -> None:
    world = World()
    world.cluster.add_node(
        make_node("node-d", taints=[Taint("dedicated", TaintEffect.NO_SCHEDULE, "gpu")])
    )
    world.cluster.add_node(make_node("node-e"))  # would fit: kube-scheduler did not send it
    world.place("demo-1", world.pod.uid)
    found = world.explainer.explain_pod(NS, "demo-1")
    assert [(n.node, n.reason) for n in found.not_offered] == [
        ("node-d", "taint dedicated=gpu:NoSchedule is not tolerated"),
        (
            "node-e",
            "kube-scheduler did not send it (it may have joined since, or the scheduler sent "
            "only a sample of the nodes)",
        ),
    ]
    text = render_pod(found)
    assert "  not offered to the extender by kube-scheduler:" in text
    assert "  node-d: taint dedicated=gpu:NoSchedule is not tolerated" in text
    assert pod_from_json(to_json(found)) == found  # the dashboard's answer keeps them


def test_scores_of_an_earlier_attempt_are_not_shown_with_a_later_filter() -> None:
    world = World()
    world.place("demo-1", world.pod.uid)
    world.clock.advance(5)
    # The next attempt's filter (every node at 1: the circuit breaker keeps them all), asked
    # about before its prioritize: the first attempt's scores are not this attempt's.
    world.view.set_column(MetricName("health_metric"), dict.fromkeys(HEALTH, 1.0))
    info = PodInfo(
        name="demo-1",
        namespace=Namespace(NS),
        uid=world.pod.uid,
        labels={POLICY_LABEL: "demo-policy"},
    )
    world.service.filter(info, [NodeName(n) for n in HEALTH])
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.placement is not None
    assert found.placement.outcome == "breaker-open"
    assert found.placement.prioritize_time is None
    assert {c.node: (c.verdict, c.score) for c in found.placement.candidates} == {
        "node-a": ("pass", None),
        "node-b": ("pass", None),
        "node-c": ("pass", None),
    }
    assert "every node passed and scored alike: breaker-open" in render_pod(found)


def test_a_replacement_with_the_same_name_does_not_borrow_its_predecessors_placement() -> None:
    world = World()
    world.place("demo-1", "an-earlier-uid")
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.placement is None
    assert "no decision for this pod in the extender's log" in render_pod(found)


def test_an_unreadable_extender_log_is_named_and_the_rest_still_explained() -> None:
    world = World()

    def unreachable() -> list[object]:
        from tas_explain.facts import DecisionsUnavailableError

        raise DecisionsUnavailableError("the extender's verdicts: connection refused")

    world.explainer.decisions = unreachable  # type: ignore[assignment]
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.missing == ("the extender's verdicts: connection refused",)
    assert found.move is not None
    assert found.move.would_move
    assert found.policies  # the policy's verdicts are still there


# ------------------------------------------------------------------ would it move


def test_on_a_violating_node_the_dry_cycle_says_which_plugin_would_evict_it_and_why() -> None:
    world = World(mode=Mode.AUTOMATIC)
    memory = (copy.deepcopy(world.descheduler.cooldown.__dict__), world.descheduler.halted)
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.move is not None
    assert found.move.would_move
    assert found.move.strategy == "TASViolations"
    assert found.move.summary == "TASViolations would evict it from node-c"
    assert (
        "node node-c violates policy demo-policy: health_metric Equals 2 (value 2)"
        in (found.move.reasons[0])
    )
    # Run dry: nothing happened to the cluster, though the live descheduler is Automatic.
    assert world.cluster.evictions == ()
    assert world.cluster.events == ()
    assert world.cluster.get_pod(Namespace(NS), "demo-1").node_name == "node-c"
    assert (world.descheduler.cooldown.__dict__, world.descheduler.halted) == memory


def test_on_a_healthy_node_it_stays_because_the_node_does_not_violate() -> None:
    world = World()
    world.view.set_column(MetricName("health_metric"), {**HEALTH, "node-c": 0})
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.move is not None
    assert not found.move.would_move
    assert "node-c does not violate health-metric-demo/demo-policy's deschedule rules" in (
        found.move.reasons
    )


def test_a_protected_pod_on_a_violating_node_says_what_protects_it() -> None:
    world = World()
    report = dry_run(world.descheduler)
    assert [d.name for d in report.decisions] == ["demo-1"]
    bare = make_pod("bare", node="node-c", namespace=NS, policy="demo-policy")  # no owner
    world.cluster.add_pod(bare)
    found = world.explainer.explain_pod(NS, "bare")
    assert found.move is not None
    assert not found.move.would_move
    # What the evictor's filter recorded for the pod explain watched, not a judgement redone.
    assert "TASViolations: protected: pod has no owner to recreate it" in found.move.reasons
    assert "node-c violates demo-policy: health_metric Equals 2 (value 2)" in found.move.reasons


def test_a_pod_the_owner_cooldown_holds_says_so() -> None:
    world = World()
    pod = world.cluster.get_pod(Namespace(NS), "demo-1")
    world.descheduler.cooldown = Cooldown(300)
    world.descheduler.cooldown.record(workload_of(pod), world.clock.now(), evacuation=True)
    world.clock.advance(60)
    found = world.explainer.explain_pod(NS, "demo-1")
    assert found.move is not None
    assert not found.move.would_move
    assert (
        "TASViolations: held by the owner cooldown: owner ReplicaSet/demo-app-rs is cooling down"
        in found.move.reasons
    )


def test_a_replacement_of_a_moved_pod_says_how_long_load_aware_leaves_it() -> None:
    world = World(mode=Mode.PREDICTIVE, config=LOAD_AWARE)
    # node-a is hot and stalls; the others idle: LoadAware weighs node-a's pods.
    world.view.set_column(
        MetricName("cpu_utilization"), {"node-a": 1.0, "node-b": 0.1, "node-c": 0.1}
    )
    world.view.set_column(MetricName("cpu_pressure"), {"node-a": 0.9, "node-b": 0.0, "node-c": 0.0})
    now = world.clock.now()
    lost = make_pod("demo-0", namespace=NS, owner="demo-app-rs")
    # The descheduler's own cooldown: LoadAware was built reading it (`CooldownMoves`).
    world.descheduler.cooldown.seconds = 300
    world.descheduler.cooldown.record(workload_of(lost), now)  # its owner lost a pod just now
    world.clock.advance(600)
    replacement = make_pod(
        "demo-r1", node="node-a", namespace=NS, owner="demo-app-rs", created=now, cpu=2
    )
    world.cluster.add_pod(replacement)
    world.descheduler.run_cycle()  # node-a seen overutilized once: the next cycle confirms it
    settling = "LoadAware: kept: a replacement of a moved pod, left to settle"

    found = world.explainer.explain_pod(NS, "demo-r1")
    assert found.move is not None
    assert f"{settling} 3000 s more" in found.move.reasons, found.move.reasons
    world.clock.advance(3000)  # an hour after it was placed: settled
    found = world.explainer.explain_pod(NS, "demo-r1")
    assert found.move is not None
    assert not any(reason.startswith(settling) for reason in found.move.reasons)


# ------------------------------------------------------------------ evictions


def eviction_event(pod: str, node: str, when: float) -> EventFact:
    return EventFact(
        time=when,
        kind="Pod",
        namespace=NS,
        name=pod,
        reason="TASViolations",
        message=f"pod eviction from {node} node by telemetry-aware-scheduling descheduler: "
        f"node {node} violates policy demo-policy: health_metric Equals 2 (value 2)",
    )


def test_a_nodes_recent_evictions_are_the_descheduler_events_from_it_newest_first() -> None:
    node = make_node("node-c")
    events = [
        eviction_event("demo-1", "node-c", 100.0),
        eviction_event("demo-2", "node-a", 150.0),
        eviction_event("demo-3", "node-c", 200.0),
        EventFact(200.0, "Node", "", "node-c", "DeschedulingHalted", "held back"),
    ]
    found = explain_node(
        node,
        nodes=[node],
        pods=[],
        policies={},
        metrics={},
        sample_times={},
        now=0.0,
        events=events,
    )
    assert [e.pod for e in found.evictions] == [f"{NS}/demo-3", f"{NS}/demo-1"]
    assert "Equals 2 (value 2)" in render_node(found)


def test_a_nodes_explanation_shows_its_learned_pressure_curve_and_what_a_move_would_do() -> None:
    # The live LoadAware has read node-b ten times stalling as often as it is busy (a bursty
    # node: one effective server); node-a only idle readings (nothing to fit: the shared model).
    world = World(config=LOAD_AWARE)
    for cycle in range(10):
        u = 0.4 + 0.05 * cycle
        world.view.set_column(MetricName("cpu_utilization"), dict.fromkeys(HEALTH, u))
        world.view.set_column(MetricName("cpu_pressure"), {"node-a": 0.0, "node-b": u, "node-c": u})
        world.descheduler.run_cycle()
        world.clock.advance(30)
    bursty = world.explainer.explain_node("node-b")
    assert bursty.curve is not None
    assert (bursty.curve.servers, bursty.curve.samples, bursty.curve.fallback) == (1, 10, False)
    # At 85% on one server: a core off takes it to 72.5%; the shared model predicts 0.58 -> 0.26.
    assert bursty.curve.pressure_after_move == pytest.approx(0.725)
    text = render_node(bursty)
    assert "Pressure curve: learned, 1 effective servers on 8 cores (from 10 samples)" in text
    assert "moving 1 core off: pressure 0.85 -> 0.725, relief " in text
    assert "(shared model: -> " in text
    assert node_from_json(to_json(bursty)) == bursty
    calm = world.explainer.explain_node("node-a")
    assert calm.curve is not None
    assert (calm.curve.fallback, calm.curve.samples) == (True, 0)
    assert "Pressure curve: the shared model (8 servers on 8 cores): 0 samples so far" in (
        render_node(calm)
    )
    # A descheduler without LoadAware learns no curve: none is shown.
    assert World().explainer.explain_node("node-b").curve is None


def test_a_pod_that_is_gone_is_explained_by_its_eviction() -> None:
    world = World()
    world.cluster.emit_event(
        ObjectReference(kind="Pod", name="demo-0", namespace=NS),
        reason="TASViolations",
        message="pod eviction from node-c node by telemetry-aware-scheduling descheduler: "
        "node node-c violates policy demo-policy: health_metric Equals 2 (value 2)",
    )
    found = world.explainer.explain_pod(NS, "demo-0")
    assert found.phase == GONE
    assert found.evictions[0].strategy == "TASViolations"
    assert "no longer exists" in render_pod(found)


# ------------------------------------------------------------------ names, JSON, text


def test_an_unknown_pod_lists_the_names_most_like_it() -> None:
    pods = [make_pod(f"demo-app-6558d5ffbf-0000{i}", node="node-a", namespace=NS) for i in range(3)]
    with pytest.raises(UnknownObjectError) as caught:
        find_pod(pods, NS, "demo-app")
    assert caught.value.near[0] == f"{NS}/demo-app-6558d5ffbf-00000"
    assert "did you mean" in str(caught.value)
    assert sorted(near_matches("node-zz", ["node-a", "node-b", "web"])) == ["node-a", "node-b"]


def test_the_dashboards_json_turns_back_into_the_same_explanation() -> None:
    world = World()
    world.place("demo-1", world.pod.uid)
    pod = world.explainer.explain_pod(NS, "demo-1")
    assert pod_from_json(to_json(pod)) == pod
    node = world.explainer.explain_node("node-b")
    assert node_from_json(to_json(node)) == node
    assert to_json(pod)["move"]["wouldMove"] is True


def test_a_nodes_explanation_reads_its_metrics_policies_labels_and_taints() -> None:
    world = World()
    found = world.explainer.explain_node("node-b")
    (reading,) = found.metrics
    assert (reading.metric, reading.value) == ("health_metric", 1.0)
    assert [(v.strategy, v.verdict) for v in found.policies] == [
        ("deschedule", "passes"),
        ("dontschedule", "violates"),
        ("scheduleonmetric", "score"),
    ]
    text = render_node(found)
    assert "dontschedule: violates: demo-policy: health_metric Equals 1 (value 1)" in text
    assert "kubernetes.io/hostname=node-b" in text
    with pytest.raises(UnknownObjectError, match="did you mean node-a, node-b, node-c"):
        world.explainer.explain_node("node-")
