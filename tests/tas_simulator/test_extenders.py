"""The simulator's two extenders: `ours` is the shipped extender, `tas` answers as Intel TAS does.

Covered:
- ours gives exactly the answers `tas extender` gives over HTTP (the real app on a real
  uvicorn server, asked with kube-scheduler's wire format) for the same store, metric values,
  settings, pod and candidates: kept and failed nodes with their reasons, and scores, over
  random policies, values, candidates and pods, with the default settings and with changed
  ones (circuit breaker share 1, rank scores, TAS's FailedNodes);
- with recent placements, both add the same estimates (filtering on them for the policies
  named);
- ours, unless told otherwise, runs with the settings `tas extender` builds from its defaults;
- TAS keeps every node when the policy has no dontschedule rule and answers 404 when the
  policy is missing; it gives no scores without a scheduleonmetric rule;
- TAS with a prefer-only policy keeps its scores in the kube-scheduler model, and on
  psi-taint-release with that policy it loses less work than `requests` (it used to tie).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extender.settings import ExtenderSettings
from tas.cluster.model import Node, OwnerReference, Pod
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.source import Fetched, Sample
from tas.metrics.static import StaticMetricView
from tas.policies.model import Operator, TASPolicy
from tas.policies.store import PolicyStore
from tas.rules import ScoreMode
from tas.types import MetricName, Namespace, NodeName
from tas.vocabulary import POLICY_LABEL
from tas_cli.extender import ExtenderCommandSettings
from tas_cli.main import command_parser
from tas_herd.placements import PlacementTracker
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.extender_client import HttpExtender
from tas_inmemory.scheduler import ExtenderError, InMemoryScheduler
from tas_simulator.clock import VirtualClock
from tas_simulator.extenders import OursExtender, TasExtender
from tas_simulator.runner import run_scenario
from tas_simulator.scenario import load_scenario
from tests.builders import make_policy, rule
from tests.extender.support import running_extender

NAMESPACE = "default"
NODES = [NodeName(f"n{i}") for i in range(8)]
METRICS = ["m1", "m2"]


def make_pod(name: str = "p", *, labels: dict[str, str] | None = None, ns: str = NAMESPACE) -> Pod:
    return Pod(
        namespace=Namespace(ns),
        name=name,
        uid=f"uid-{name}",
        labels=labels if labels is not None else {POLICY_LABEL: "demo-policy"},
        node_name=None,
        phase="Pending",
        requests={"cpu": 1.0, "memory": 2.0**30},
        owners=(OwnerReference("ReplicaSet", "web", controller=True),),
    )


# -- ours is the shipped extender -------------------------------------------------------------

rules = st.builds(
    rule,
    st.sampled_from(METRICS),
    st.sampled_from([o.value for o in Operator]),
    st.integers(-2, 12),
)


@st.composite
def policies(draw: st.DrawFn) -> TASPolicy:
    strategies: dict[str, Any] = {}
    if draw(st.booleans()):
        operator = draw(st.sampled_from(["anyOf", "allOf"]))
        strategies["dontschedule"] = (operator, draw(st.lists(rules, min_size=1, max_size=3)))
    if draw(st.booleans()):
        strategies["scheduleonmetric"] = draw(st.lists(rules, min_size=1, max_size=2))
    return make_policy("demo-policy", namespace=NAMESPACE, **strategies)


columns = st.dictionaries(
    st.sampled_from(METRICS),
    st.dictionaries(st.sampled_from([str(n) for n in NODES]), st.integers(-2, 12).map(float)),
)
pods = st.sampled_from(
    [
        make_pod(),
        make_pod(labels={}),
        make_pod(labels={POLICY_LABEL: "absent"}),
        make_pod(ns="elsewhere"),
    ]
)


@pytest.mark.parametrize(
    "extender_settings",
    [
        pytest.param(ExtenderSettings(), id="defaults"),
        pytest.param(
            ExtenderSettings(
                max_violating_node_share=1.0,
                score_mode=ScoreMode.RANK,
                tas_compat_failed_nodes=True,
            ),
            id="breaker never opens, rank scores, FailedNodes",
        ),
    ],
)
def test_ours_answers_exactly_as_tas_extender_does_over_http(
    extender_settings: ExtenderSettings,
) -> None:
    view = StaticMetricView()
    store = PolicyStore()
    ours = OursExtender(store=store, view=view, clock=VirtualClock(), settings=extender_settings)
    with running_extender(store=store, view=view, settings=extender_settings) as server:
        over_http = HttpExtender(server.url)

        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(
            policy=policies(),
            values=columns,
            candidates=st.lists(st.sampled_from(NODES), unique=True, min_size=1),
            pod=pods,
        )
        def same_answers(
            policy: TASPolicy,
            values: dict[str, dict[str, float]],
            candidates: list[NodeName],
            pod: Pod,
        ) -> None:
            store.replace([policy])
            for metric in METRICS:
                view.set_column(MetricName(metric), values.get(metric, {}))
            assert ours.filter(pod, candidates) == over_http.filter(pod, candidates)
            assert ours.prioritize(pod, candidates) == over_http.prioritize(pod, candidates)

        try:
            same_answers()
        finally:
            over_http.close()


def test_the_answers_include_the_circuit_breaker_of_max_violating_node_share() -> None:
    # Every node violates: the default share fails open in both; share 1 removes every node.
    policy = make_policy("demo-policy", dontschedule=[rule("m1", "GreaterThan", 5)])
    view = StaticMetricView({"m1": dict.fromkeys(NODES, 9.0)})
    for share, kept in ((None, NODES[:3]), (1.0, [])):
        chosen = (
            ExtenderSettings()
            if share is None
            else ExtenderSettings(max_violating_node_share=share)
        )
        store = PolicyStore()
        store.replace([policy])
        ours = OursExtender(store=store, view=view, clock=VirtualClock(), settings=chosen)
        with running_extender(store=store, view=view, settings=chosen) as server:
            over_http = HttpExtender(server.url)
            try:
                answer = over_http.filter(make_pod(), NODES[:3])
            finally:
                over_http.close()
        assert ours.filter(make_pod(), NODES[:3]) == answer
        assert list(answer.passed) == kept


class _Source:
    """Every node's cpu_utilization, sampled 10 s before the clock's time."""

    kind = "static"

    def __init__(self, clock: VirtualClock, values: dict[NodeName, float]) -> None:
        self._clock = clock
        self._values = values

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        sampled = self._clock.time() - 10.0
        column = {node: Sample(value, sampled) for node, value in self._values.items()}
        return Fetched(columns={MetricName("cpu_utilization"): column}, ok=frozenset({"x"}))

    def close(self) -> None:
        return None


def test_with_recent_placements_ours_and_tas_extender_add_the_same_estimates() -> None:
    clock = VirtualClock()
    utilization = {NodeName("n0"): 0.45, NodeName("n1"): 0.45, NodeName("n2"): 0.2}
    view = RefreshingMetricView(_Source(clock, utilization), sync_period=10, clock=clock)
    view.set_wanted([MetricName("cpu_utilization")])
    view.refresh_once()
    tracker = PlacementTracker(default_capacity={"cpu": 16.0})
    # A 2-core pod just bound on n1: +0.125 utilization until a sample covers it.
    placed = dataclasses.replace(make_pod("placed", labels={}), node_name=NodeName("n1"))
    tracker.observe(dataclasses.replace(placed, requests={"cpu": 2.0}), now=clock.time())
    policy = make_policy(
        "demo-policy",
        dontschedule=[rule("cpu_utilization", "GreaterThan", 0.5)],
        scheduleonmetric=[rule("cpu_utilization", "LessThan")],
    )
    store = PolicyStore()
    store.replace([policy])
    chosen = ExtenderSettings(filter_estimate_policies=frozenset({"demo-policy"}))
    ours = OursExtender(store=store, view=view, clock=clock, placements=tracker, settings=chosen)
    estimates = tracker.estimator(sample_times=view.sample_times, now=clock.time)  # as wired

    candidates = list(utilization)
    with running_extender(
        store=store, view=view, settings=chosen, clock=clock, estimates=estimates
    ) as server:
        over_http = HttpExtender(server.url)
        try:
            answer = over_http.filter(make_pod(), candidates)
            scores = over_http.prioritize(make_pod(), candidates)
        finally:
            over_http.close()
    assert ours.filter(make_pod(), candidates) == answer
    assert ours.prioritize(make_pod(), candidates) == scores
    assert list(answer.passed) == ["n0", "n2"]  # n1 is over 0.5 only with its estimate


def test_ours_runs_with_the_settings_tas_extender_builds_from_its_defaults() -> None:
    no_flags = command_parser("extender").parse_args(["--metrics", "textfile:/nowhere"])
    built = OursExtender(store=PolicyStore(), view=StaticMetricView(), clock=VirtualClock())
    assert built.service.settings == ExtenderCommandSettings.from_args(no_flags).app


# -- TAS ----------------------------------------------------------------------------------------

PREFER_ONLY = make_policy("demo-policy", scheduleonmetric=[rule("cpu_pressure", "LessThan")])


def tas_with(policy: TASPolicy | None, values: dict[str, float]) -> TasExtender:
    store = PolicyStore()
    store.replace([policy] if policy is not None else [])
    view = StaticMetricView({"cpu_pressure": values})
    return TasExtender(store=store, view=view, rng=random.Random(1))


def test_tas_keeps_every_node_when_the_policy_has_no_dontschedule_rule() -> None:
    # filterNodes: "Returning all nodes" (intel/platform-aware-scheduling 416bf0c onwards).
    tas = tas_with(PREFER_ONLY, {"n0": 0.9, "n1": 0.1})
    answer = tas.filter(make_pod(), [NodeName("n0"), NodeName("n1")])
    assert list(answer.passed) == ["n0", "n1"]
    assert tas.prioritize(make_pod(), [NodeName("n0"), NodeName("n1")]) == {"n1": 10, "n0": 9}


def test_tas_answers_404_to_a_filter_for_a_missing_policy_and_no_scores_without_a_rule() -> None:
    missing = tas_with(None, {"n0": 0.9})
    with pytest.raises(ExtenderError, match="404"):
        missing.filter(make_pod(), [NodeName("n0")])
    assert missing.prioritize(make_pod(), [NodeName("n0")]) == {}
    filter_only = make_policy("demo-policy", dontschedule=[rule("cpu_pressure", "GreaterThan", 1)])
    assert tas_with(filter_only, {"n0": 0.9}).prioritize(make_pod(), [NodeName("n0")]) == {}


def test_tas_with_a_prefer_only_policy_keeps_its_scores_in_the_scheduler_model() -> None:
    def node(name: str) -> Node:
        return Node(
            name=NodeName(name),
            labels={"kubernetes.io/hostname": name},
            allocatable={"cpu": 4.0, "memory": 8 * 2.0**30, "pods": 110.0},
        )

    def place(extender: TasExtender | None) -> str | None:
        cluster = InMemoryCluster()
        for name in ("calm", "hot"):
            cluster.add_node(node(name))
        # calm is a little fuller: without TAS's scores least-allocated picks hot.
        busy = dataclasses.replace(make_pod("busy", labels={}), node_name=NodeName("calm"))
        cluster.add_pod(dataclasses.replace(busy, requests={"cpu": 0.25}))
        pod = make_pod()
        cluster.add_pod(pod)
        return InMemoryScheduler(cluster, extender=extender).schedule(pod).node

    assert place(None) == "hot"
    assert place(tas_with(PREFER_ONLY, {"calm": 0.1, "hot": 0.9})) == "calm"


def test_on_psi_taint_release_with_a_prefer_only_policy_tas_loses_less_work_than_requests() -> None:
    scenario = load_scenario("psi-taint-release").with_duration(900)
    prefer_only = []
    for document in scenario.policies:
        changed = copy.deepcopy(dict(document))
        changed["spec"]["strategies"].pop("dontschedule", None)
        prefer_only.append(changed)
    assert all("dontschedule" not in d["spec"]["strategies"] for d in prefer_only)
    result = run_scenario(
        dataclasses.replace(scenario, policies=tuple(prefer_only)),
        contenders=["requests", "tas"],
    )
    lost = {name: run.figures["work_lost"]["core_seconds"] for name, run in result.results.items()}
    assert lost["tas"] < 0.9 * lost["requests"], lost
