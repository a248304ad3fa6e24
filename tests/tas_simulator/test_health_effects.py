"""A health metric that means something (issue 46): what an unhealthy node does.

Covered:
- a set-health's `effect` reads as none (also when absent: a gauge only), `degrade` or
  `fail-after`; bad effects are refused with every problem listed, an unknown key with a
  did-you-mean;
- a degraded node serves its share of its cores: its pods get proportionally less CPU, and
  the figures count the difference as work lost (stalled); a pod moved off in time loses only
  its restart; a set-health back ends the degrade;
- a failed node: its pods stop at once and count as displaced; it is marked NotReady and
  tainted unreachable after the node-monitor grace period, its pods are deleted 300s after
  that (the default `tolerationSeconds`) and a ReplicaSet's replacements run elsewhere, while
  a StatefulSet's pod stays lost; a failed node stays failed; a set-health before the failure
  calls it off;
- the fluid limit offers a degraded node's share of its cores and nothing of a failed node's;
- a contender that obeys the health policy before the node fails loses less than one that
  ignores it, and what obeying displaced is charged to the rule's plugins;
- a family draws every effect kind, none included; a family without `healthEffects` draws no
  effect; a bad `healthEffects` lists every problem.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
import yaml

from tas.types import Namespace, NodeName
from tas_simulator.family import FAMILIES, FamilyError, draw_scenario, read_family
from tas_simulator.limit import fluid_limit
from tas_simulator.pipeline import served_cpu
from tas_simulator.runner import RULE_STRATEGIES, run_scenario
from tas_simulator.scenario import (
    SCENARIOS,
    HealthEffect,
    HealthEffectKind,
    Scenario,
    ScenarioError,
    load_scenario_text,
    read_scenario,
)
from tas_simulator.world import (
    NODE_MONITOR_GRACE_PERIOD,
    UNREACHABLE_TAINTS,
    UNREACHABLE_TOLERATION_SECONDS,
)
from tests.tas_simulator.worlds import SteppedWorld, health_pair

MEMORY = {"profile": "steady", "value": "100Mi"}


def _health(at: str, value: float, effect: object = None, node: str = "a") -> dict[str, Any]:
    body: dict[str, Any] = {"nodes": [node], "value": value}
    if effect is not None:
        body["effect"] = effect
    return {"at": at, "set-health": body}


# ------------------------------------------------------------------------------ reading


def test_a_set_health_states_what_the_unhealthy_node_does() -> None:
    scenario = health_pair(
        [
            _health("1m", 2),
            _health("2m", 2, "none"),
            _health("3m", 2, {"degrade": 0.4}),
            _health("4m", 2, {"fail-after": "10m"}),
        ]
    )
    assert [e.effect for e in scenario.events] == [
        HealthEffect(),
        HealthEffect(),
        HealthEffect(HealthEffectKind.DEGRADE, share=0.4),
        HealthEffect(HealthEffectKind.FAIL_AFTER, delay=600.0),
    ]


BAD_EFFECTS = """
name: bad-effects
duration: 10m
warmup: 1m
nodes:
  - {name: a, cpu: 4, memory: 8Gi}
workloads:
  - {name: w, replicas: 1, requests: {cpu: 1}, usage: {cpu: {profile: steady, value: 1}}}
events:
  - {at: 1m, set-health: {nodes: [a], value: 2, effect: {degrad: 0.5}}}
  - {at: 2m, set-health: {nodes: [a], value: 2, effect: {degrade: 1.5}}}
  - {at: 3m, set-health: {nodes: [a], value: 2, effect: {degrade: 0.5, fail-after: 1m}}}
  - {at: 4m, set-health: {nodes: [a], value: 2, effect: degrade}}
  - {at: 5m, set-health: {nodes: [a], value: 2, effect: {fail-after: soon}}}
  - {at: 6m, set-health: {nodes: [a], value: 2, effect: {}}}
"""


def test_bad_effects_are_refused_with_every_problem_listed() -> None:
    with pytest.raises(ScenarioError) as caught:
        load_scenario_text(BAD_EFFECTS, source="bad.yaml")
    problems = caught.value.problems
    text = "\n".join(problems)
    for expected in (
        "events[0].set-health.effect: 'degrad' is not one of ['degrade', 'fail-after'] "
        "(did you mean degrade?)",
        "events[1].set-health.effect.degrade: 1.5 is greater than or equal to the maximum of 1",
        "events[2].set-health.effect: {'degrade': 0.5, 'fail-after': '1m'} has too many "
        "properties (an effect is one of {degrade: SHARE} and {fail-after: DURATION})",
        "events[3].set-health.effect: 'degrade' is not one of ['none'] (degrade and fail-after "
        "take a value: {degrade: 0.5}, {fail-after: 10m})",
        "events[4].set-health.effect.fail-after: 'soon' is not valid",
        "events[5].set-health.effect: {} should be non-empty",
    ):
        assert expected in text, text
    assert all(p.startswith("bad.yaml: ") for p in problems)
    assert len(problems) == 6, problems


# ------------------------------------------------------------------------------ degrade


def _placed(scenario: Scenario) -> SteppedWorld:
    """`app`'s two pods on node a, `db`'s pod on node b."""
    return SteppedWorld(scenario, lambda pod: "b" if pod.startswith("db-") else "a")


@pytest.mark.parametrize("share", [0.5, 0.25])
def test_a_degraded_nodes_pods_get_their_share_of_its_cores_and_lose_the_rest(
    share: float,
) -> None:
    loop = _placed(health_pair([_health("1m", 2, {"degrade": share}), _health("3m", 0)]))
    loop.until(300)
    app = loop.slots_on("a")
    slot_node = np.asarray(loop.world.slot_node.view, dtype=np.int64)
    before, during, after = loop.states[55.0], loop.states[120.0], loop.states[200.0]
    assert list(served_cpu(before, slot_node)[app]) == [2.0, 2.0]
    # 4 cores of demand on the cores node a still serves: each pod its proportional part.
    served = 4 * share
    assert served_cpu(during, slot_node)[app] == pytest.approx([served / 2, served / 2])
    assert during.stalled == pytest.approx(4 - served)
    assert during.displaced == 0.0
    # The set-health back (no effect) ends the degrade.
    assert list(served_cpu(after, slot_node)[app]) == [2.0, 2.0]
    lost = loop.figures()["work_lost"]
    assert lost["stalled"] == pytest.approx((4 - served) * 120)
    assert lost["displaced"] == 0.0


def test_a_pod_moved_off_the_node_in_time_loses_only_its_restart() -> None:
    """Of node a's two pods, one is evicted (node a cordoned, so its replacement lands on b)
    30 s before the node degrades to half: it loses its 10 s start-up; the one left behind
    gets half of its demand from then on."""
    loop = _placed(health_pair([_health("1m", 2, {"degrade": 0.25})]))
    moved = loop.slots_on("a")[0]

    def evict(t: float) -> None:
        if t == 30.0:
            node = loop.world.cluster.get_node(NodeName("a"))
            loop.world.cluster.update_node(dataclasses.replace(node, unschedulable=True))
            pod = loop.world.slot_pod[moved]
            assert pod is not None
            loop.world.cluster.evict_pod(Namespace("default"), pod, reason="test")

    loop.until(300, before=evict)
    stayed = loop.slots_on("a")
    assert moved not in stayed
    assert len(stayed) == 1
    slot_node = np.asarray(loop.world.slot_node.view, dtype=np.int64)
    late = loop.states[200.0]
    assert served_cpu(late, slot_node)[moved] == 2.0
    # Node a serves 1 core to the one pod still there, which wants 2.
    assert served_cpu(late, slot_node)[stayed[0]] == pytest.approx(1.0)
    lost = loop.figures()["work_lost"]
    assert lost["displaced"] == pytest.approx(2.0 * 10)
    assert lost["stalled"] == pytest.approx(1.0 * (300 - 60 + 5))


# ------------------------------------------------------------------------------- failure


def test_a_failed_nodes_pods_are_lost_until_their_replacements_run_elsewhere() -> None:
    """Node a runs app's two pods (2 cores each) and db's StatefulSet pod (1 core); it fails
    one minute after turning unhealthy."""
    scenario = health_pair([_health("10s", 2, {"fail-after": "1m"}), _health("9m", 0)])
    loop = SteppedWorld(scenario, lambda pod: "a")
    world = loop.world
    failed = 70.0
    not_ready = failed + NODE_MONITOR_GRACE_PERIOD
    deleted = not_ready + UNREACHABLE_TOLERATION_SECONDS
    assert (NODE_MONITOR_GRACE_PERIOD, UNREACHABLE_TOLERATION_SECONDS) == (50.0, 300.0)

    loop.until(failed - 5)
    assert loop.states[failed - 5].displaced == 0.0
    assert world.gauges["health_metric"][NodeName("a")] == 2

    loop.until(failed)
    state = loop.states[failed]
    # The node serves nothing: its pods stop, it is no longer scraped, its gauge is gone.
    assert state.displaced == pytest.approx(5.0)
    assert not state.present[world.node_index[NodeName("a")]]
    assert NodeName("a") not in world.gauges["health_metric"]
    assert world.cluster.get_node(NodeName("a")).ready

    loop.until(not_ready)
    node = world.cluster.get_node(NodeName("a"))
    assert not node.ready
    assert set(UNREACHABLE_TAINTS) <= set(node.taints)
    assert len(world.cluster.list_pods(node=NodeName("a"))) == 3

    loop.until(deleted + 10)
    # app's pods were deleted and replaced on b; db's StatefulSet pod waits for a deletion the
    # gone kubelet never confirms.
    on_a = world.cluster.list_pods(node=NodeName("a"))
    assert [p.name for p in on_a] == ["db-0"]
    assert {p.name.split("-")[0] for p in world.cluster.list_pods(node=NodeName("b"))} == {"app"}
    assert loop.states[deleted + 5].displaced == pytest.approx(5.0)
    assert loop.states[deleted + 10].displaced == pytest.approx(1.0)

    loop.until(scenario.duration - scenario.step)
    # A set-health back at 9m changes nothing: a failed node stays failed.
    assert not world.cluster.get_node(NodeName("a")).ready
    assert NodeName("a") not in world.gauges["health_metric"]
    assert loop.states[scenario.duration - scenario.step].displaced == pytest.approx(1.0)

    lost = loop.figures()["work_lost"]
    app_lost = 4.0 * (deleted + 10 - failed)
    db_lost = 1.0 * (scenario.duration - failed)
    assert lost["displaced"] == pytest.approx(app_lost + db_lost)
    # Until it failed node a stalled: 5 cores of demand on 4.
    assert lost["stalled"] == pytest.approx(1.0 * (failed - scenario.warmup))


def test_a_set_health_before_the_failure_calls_it_off() -> None:
    loop = _placed(health_pair([_health("10s", 2, {"fail-after": "2m"}), _health("1m", 0)]))
    loop.until(600)
    assert loop.world.failures == {}
    assert loop.world.cluster.get_node(NodeName("a")).ready
    assert loop.figures()["work_lost"]["core_seconds"] == 0.0


def test_without_an_effect_a_set_health_is_a_gauge_only() -> None:
    loop = _placed(health_pair([_health("10s", 2), _health("20s", 2, "none")]))
    loop.until(600)
    assert loop.world.gauges["health_metric"][NodeName("a")] == 2
    assert list(np.asarray(loop.world.serving.view)) == [1.0, 1.0]
    assert loop.figures()["work_lost"]["core_seconds"] == 0.0


# ---------------------------------------------------------------------------- the limit


def _limit_scenario(events: list[dict[str, Any]]) -> Scenario:
    """Two 4-core nodes, three pods of 2 cores (6 of 8 cores); 10 minutes, 1 of warm-up."""
    return read_scenario(
        {
            "name": "fluid-health",
            "duration": "10m",
            "step": "10s",
            "warmup": "1m",
            "seed": 3,
            "nodes": [
                {"name": "a", "cpu": 4, "memory": "16Gi"},
                {"name": "b", "cpu": 4, "memory": "16Gi"},
            ],
            "workloads": [
                {
                    "name": "steady",
                    "replicas": 3,
                    "requests": {"cpu": "100m", "memory": "64Mi"},
                    "usage": {"cpu": {"profile": "steady", "value": 2}, "memory": MEMORY},
                }
            ],
            "events": events,
        },
        base=SCENARIOS,
    )


@pytest.mark.parametrize(
    ("effect", "lost"),
    [
        pytest.param(None, 0.0, id="a gauge only: 6 cores fit in 8"),
        pytest.param({"degrade": 0.5}, 0.0, id="half of a: 6 cores fit in 6"),
        pytest.param({"degrade": 0.25}, 1.0 * 300, id="a quarter of a: 6 cores in 5"),
        pytest.param({"fail-after": "0s"}, 2.0 * 300, id="a failed: 6 cores in 4"),
    ],
)
def test_the_limit_offers_what_a_degraded_or_failed_node_serves(
    effect: object, lost: float
) -> None:
    figures = fluid_limit(_limit_scenario([_health("5m", 2, effect)]), seed=3)
    assert figures["work_lost"]["core_seconds"] == pytest.approx(lost)


# ------------------------------------------------------------------- obeying the policy

OBEYED = """
name: obeyed
duration: 15m
step: 5s
seed: 2
warmup: 1m
startupDelay: 10s
deschedulingInterval: 30s
deschedulingPhase: 0.5
metrics: {scrapeInterval: 15s, window: 1m, delay: 0s}
nodes:
  - {name: "node-{i}", count: 3, cpu: 4, memory: 8Gi, metrics: {health_metric: 0}}
workloads:
  - name: demo-app
    namespace: health-metric-demo
    replicas: 6
    requests: {cpu: 500m, memory: 64Mi}
    labels: {app: demo, telemetry-policy: demo-policy}
    nodeAffinity:
      - matchExpressions:
          - {key: demo-policy, operator: NotIn, values: [violating]}
    usage:
      cpu: {profile: steady, value: 1}
      memory: {profile: steady, value: 48Mi}
policies:
  - file: policies/health-policy.yaml
events:
  - at: 3m
    set-health: {nodes: [node-2], value: 2, effect: {fail-after: 3m}}
"""


def test_obeying_the_health_policy_before_the_node_fails_saves_what_ignoring_it_loses() -> None:
    scenario = load_scenario_text(OBEYED, base=SCENARIOS)
    result = run_scenario(scenario, contenders=("requests", "ours"))
    requests = result.results["requests"].figures["work_lost"]
    ours = result.results["ours"].figures["work_lost"]
    # requests leaves node-2's pods there: they stop at 6m and run again 350 s + start-up later.
    stopped = NODE_MONITOR_GRACE_PERIOD + UNREACHABLE_TOLERATION_SECONDS + scenario.startup_delay
    assert requests["displaced"] >= 1.0 * stopped
    assert requests["displaced_by_rule"] == 0.0
    # ours moves them off within a cycle or two of the metric, long before the failure: each
    # move costs its start-up, charged to the plugin that obeyed the rule.
    assert ours["core_seconds"] < requests["core_seconds"] / 4
    assert 0 < ours["displaced_by_rule"] <= ours["displaced"]
    assert ours["displaced_by_rule"] == pytest.approx(
        sum(v for k, v in ours["displaced_by_strategy"].items() if k in RULE_STRATEGIES)
    )


#: A health metric that lies: node-2 reads unhealthy for ten minutes and serves every core
#: (`effect: none`). Its one pod leaves while the fleet has room; then the workload triples,
#: more than the other two nodes can serve.
KEPT_OFF = """
name: kept-off
duration: 15m
step: 5s
seed: 3
warmup: 1m
startupDelay: 10s
deschedulingInterval: 30s
metrics: {scrapeInterval: 15s, window: 1m, delay: 0s}
nodes:
  - {name: "node-{i}", count: 3, cpu: 2, memory: 8Gi, metrics: {health_metric: 0}}
workloads:
  - name: demo-app
    namespace: health-metric-demo
    replicas: 3
    requests: {cpu: 500m, memory: 64Mi}
    labels: {app: demo, telemetry-policy: demo-policy}
    nodeAffinity:
      - matchExpressions:
          - {key: demo-policy, operator: NotIn, values: [violating]}
    usage:
      cpu: {profile: steady, value: 900m}
      memory: {profile: steady, value: 48Mi}
policies:
  - file: policies/health-policy.yaml
events:
  - at: 3m
    set-health: {nodes: [node-2], value: 2, effect: none}
  - at: 6m
    scale: {workload: demo-app, replicas: 9}
  - at: 13m
    set-health: {nodes: [node-2], value: 0}
"""


def test_the_capacity_a_rule_keeps_idle_is_counted_where_the_loss_is() -> None:
    """Obeying the health rule empties node-2 and keeps pods off it while the other nodes
    cannot serve their demand: the figures say how much of ours' loss that idle capacity
    could have served (`withheld_by_rule`), and requests, which fills node-2, has far less."""
    scenario = load_scenario_text(KEPT_OFF, base=SCENARIOS)
    result = run_scenario(scenario, contenders=("requests", "ours"))
    requests = result.results["requests"].figures["work_lost"]
    ours = result.results["ours"].figures["work_lost"]
    assert ours["core_seconds"] > requests["core_seconds"]
    assert ours["withheld_by_rule"] > 10 * max(1.0, requests["withheld_by_rule"])
    # Never more than was lost, nor more than node-2's two cores for the ten minutes.
    assert ours["withheld_by_rule"] <= ours["core_seconds"]
    assert ours["withheld_by_rule"] <= 2 * 600
    # Most of ours' loss beyond requests' is there (an estimate in the fluid limit's terms:
    # a whole pod may not fit the cores a node has free).
    extra = ours["core_seconds"] - requests["core_seconds"]
    assert ours["displaced_by_rule"] + ours["withheld_by_rule"] >= extra / 2


# ------------------------------------------------------------------------------ families


def _family(**changes: Any) -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load((FAMILIES / "default.yaml").read_text())
    document.update(changes)
    return {k: v for k, v in document.items() if v is not None}


def _effects(document: dict[str, Any]) -> list[Any]:
    """The effect of each unhealthy set-health ("(absent)" where none is given)."""
    return [
        e["set-health"].get("effect", "(absent)")
        for e in document["events"]
        if "set-health" in e and e["set-health"]["value"] != 0
    ]


def test_the_default_family_draws_every_effect_kind_none_included() -> None:
    family = read_family(_family(), base=FAMILIES)
    kinds: set[str] = set()
    for index in range(200):
        document = draw_scenario(family, index)
        for effect in _effects(document):
            kinds.add(effect if isinstance(effect, str) else next(iter(effect)))
    assert kinds == {"none", "degrade", "fail-after"}


def test_a_family_draws_only_the_effects_it_weighs() -> None:
    only = _family(healthEffects={"weights": {"degrade": 1}, "degrade": {"uniform": [0.4, 0.6]}})
    family = read_family(only, base=FAMILIES)
    shares = [
        effect["degrade"]
        for index in range(60)
        for effect in _effects(draw_scenario(family, index))
    ]
    assert shares
    assert all(0.4 <= s <= 0.6 for s in shares)
    fails = read_family(
        _family(healthEffects={"weights": {"fail-after": 1}, "failAfter": ["90s"]}),
        base=FAMILIES,
    )
    delays = {
        effect["fail-after"]
        for index in range(60)
        for effect in _effects(draw_scenario(fails, index))
    }
    assert delays == {"1m30s"}


def test_a_family_without_health_effects_still_loads_and_draws_gauges_only() -> None:
    family = read_family(_family(healthEffects=None), base=FAMILIES)
    with_effects = read_family(_family(), base=FAMILIES)
    drawn = 0
    for index in range(60):
        plain, effected = draw_scenario(family, index), draw_scenario(with_effects, index)
        drawn += len(_effects(plain))
        assert set(_effects(plain)) <= {"(absent)"}
        # The effects come from their own stream: nothing else of the draw moved.
        for event in effected["events"]:
            event.get("set-health", {}).pop("effect", None)
        assert plain == effected
    assert drawn > 0


def test_a_bad_health_effects_field_lists_every_problem() -> None:
    document = _family(
        healthEffects={
            "weights": {"none": 1, "degrad": 1, "fail-after": -1},
            "degrade": {"uniform": [0, 1.5]},
            "failAfter": "soon",
            "failafter": "1m",
        }
    )
    with pytest.raises(FamilyError) as raised:
        read_family(document, source="bad.yaml", base=FAMILIES)
    text = "\n".join(raised.value.problems)
    for expected in (
        "healthEffects.weights.degrad: unknown (known: none, degrade, fail-after); "
        "did you mean degrade?",
        "healthEffects.weights.fail-after: a weight is a number of at least 0",
        "healthEffects.degrade.uniform[0]: must be more than 0 and less than 1",
        "healthEffects.degrade.uniform[1]: must be more than 0 and less than 1",
        "healthEffects.failAfter:",
        "healthEffects.failafter: unknown (known: weights, degrade, failAfter); "
        "did you mean failAfter?",
    ):
        assert expected in text, text
    with pytest.raises(FamilyError) as raised:
        read_family(_family(healthEffects={"degrade": 0.5}), base=FAMILIES)
    assert any("healthEffects.weights: must map" in p for p in raised.value.problems)


def test_a_bursts_fair_share_counts_what_a_degraded_node_serves() -> None:
    """Node b (8 cores) degrades to a quarter, 2 cores, before a burst of four 2-core pods: a
    load-balanced placement fills a (4 cores, 4 in use) and b (2 served, 1 in use) to the same
    level, 13/6, which puts 7/3 pods on a. Counted with b's full 8 cores it would be 23/6 on
    b, and the herd figure would call a fair placement a herd."""
    scale = {"at": "2m", "scale": {"workload": "app", "replicas": 6, "burst": True}}
    loop = _placed(health_pair([_health("1m", 2, {"degrade": 0.25}, node="b"), scale]))
    loop.until(125)
    (burst,) = loop.world.bursts
    assert burst.balanced_most == pytest.approx(7 / 3)
