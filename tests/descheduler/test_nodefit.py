"""nodeFit: which other nodes would accept a pod.

Covered: Ready and schedulable, node selector, required node affinity, NoSchedule/NoExecute
taints (PreferNoSchedule ignored), requests against allocatable minus what is already there,
`telemetry/scheduling` ignored for fit (TAS issue 90), and the pod's TASPolicy dontschedule
rules: a pod whose only other nodes violate them is not evicted; a freshly joined node with no
sample yet is a target at its estimated load (its pods' requests over its allocatable): valid
while that passes the rules, not once what landed there would violate.
"""

from __future__ import annotations

import logging

import pytest

from descheduler.nodefit import fitting_nodes
from tas.cluster.model import (
    Node,
    NodeSelectorTerm,
    Pod,
    Requirement,
    Taint,
    TaintEffect,
    Toleration,
)
from tas.fit import rejection
from tas.metrics.static import StaticMetricView
from tas.types import MetricName
from tas.vocabulary import POLICY_LABEL, TELEMETRY_RESOURCE
from tests.builders import make_policy, metrics, rule
from tests.descheduler.builders import (
    cluster_with,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
    replace,
)

AWAY = make_pod("p", node="elsewhere", cpu=1)


@pytest.mark.parametrize(
    ("pod", "node", "reason"),
    [
        pytest.param(AWAY, make_node("n"), None, id="a plain node accepts"),
        pytest.param(
            AWAY, make_node("n", apply=replace(ready=False)), "node is not Ready", id="not Ready"
        ),
        pytest.param(
            AWAY,
            make_node("n", apply=replace(unschedulable=True)),
            "node is unschedulable",
            id="cordoned",
        ),
        pytest.param(
            make_pod("p", node="x", apply=replace(node_selector={"disk": "ssd"})),
            make_node("n"),
            "node selector or required node affinity does not match",
            id="node selector",
        ),
        pytest.param(
            make_pod(
                "p",
                node="x",
                apply=replace(
                    required_node_affinity=(
                        NodeSelectorTerm((Requirement("demo-policy", "NotIn", ("violating",)),)),
                    )
                ),
            ),
            make_node("n", labels={"demo-policy": "violating"}),
            "node selector or required node affinity does not match",
            id="required affinity against a TAS label",
        ),
        pytest.param(
            AWAY,
            make_node("n", apply=replace(taints=(Taint("gpu", TaintEffect.NO_SCHEDULE, "1"),))),
            "taint gpu=1:NoSchedule is not tolerated",
            id="NoSchedule taint",
        ),
        pytest.param(
            make_pod("p", node="x", apply=replace(tolerations=(Toleration("gpu", "Exists"),))),
            make_node("n", apply=replace(taints=(Taint("gpu", TaintEffect.NO_EXECUTE),))),
            None,
            id="tolerated NoExecute taint",
        ),
        pytest.param(
            AWAY,
            make_node("n", apply=replace(taints=(Taint("hot", TaintEffect.PREFER_NO_SCHEDULE),))),
            None,
            id="PreferNoSchedule does not block",
        ),
        pytest.param(
            make_pod("p", node="x", cpu=9),
            make_node("n", cpu=8),
            "insufficient cpu (0 + 9 > 8)",
            id="requests above allocatable",
        ),
        pytest.param(
            make_pod("p", node="x", apply=replace(requests={"cpu": 1, TELEMETRY_RESOURCE: 1})),
            make_node("n"),
            None,
            id="telemetry/scheduling is ignored for fit",
        ),
        pytest.param(
            make_pod("p", node="x", apply=replace(requests={"example.com/fpga": 1})),
            make_node("n"),
            "node has no example.com/fpga",
            id="an extended resource the node lacks",
        ),
    ],
)
def test_node_rejection_reasons(pod: Pod, node: Node, reason: str | None) -> None:
    assert rejection(pod, node, pods_on_node=()) == reason


def test_requests_of_pods_already_on_the_node_count() -> None:
    node = make_node("n", cpu=4)
    there = [make_pod("a", node="n", cpu=2), make_pod("b", node="n", cpu=1)]
    assert rejection(make_pod("p", node="x", cpu=1), node, pods_on_node=there) is None
    assert rejection(make_pod("p", node="x", cpu=2), node, pods_on_node=there) == (
        "insufficient cpu (3 + 2 > 4)"
    )
    finished = [make_pod("done", node="n", cpu=4, apply=replace(phase="Succeeded"))]
    assert rejection(make_pod("p", node="x", cpu=2), node, pods_on_node=finished) is None


def test_dontschedule_rules_remove_nodes_the_policy_forbids() -> None:
    policy = make_policy("demo-policy", dontschedule=[rule("health_metric", "Equals", 1)])
    pod = make_pod("p", node="a")
    nodes = [make_node(n) for n in ("a", "b", "c")]
    found = fitting_nodes(
        pod,
        nodes,
        pods_by_node={},
        policy=policy,
        metrics=metrics({"health_metric": {"a": 0, "b": 1, "c": 0}}),
    )
    assert found == ("c",)


def test_a_pod_whose_only_other_nodes_violate_its_dontschedule_rules_is_not_evicted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    policy = make_policy(
        "demo-policy",
        namespace="default",
        deschedule=[rule("health_metric", "Equals", 2)],
        dontschedule=[rule("health_metric", "Equals", 1), rule("health_metric", "Equals", 2)],
    )
    pod = make_pod("demo", node="node-a", labels={POLICY_LABEL: "demo-policy"})
    cluster = cluster_with(
        make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=(pod,)
    )
    health = {"node-a": 2, "node-b": 1, "node-c": 1}
    config = policy_config("TASViolations", circuitBreaker={"maxViolatingNodeShare": 1.0})
    view = StaticMetricView({"health_metric": health})
    descheduler = make_descheduler(cluster, config, metrics=view, policies={policy.key: policy})
    with caplog.at_level(logging.DEBUG, logger="descheduler.evictor"):
        report = descheduler.run_cycle()
    assert report.decisions == []
    assert [p.name for p in cluster.list_pods()] == ["demo"]
    assert (
        "Not evicting default/demo (TASViolations): no other Ready node would accept it (nodeFit)"
        in caplog.messages
    )
    # Once one other node is healthy again, the pod may go.
    view.set_column(MetricName("health_metric"), {**health, "node-c": 0})
    assert [d.name for d in descheduler.run_cycle().decisions] == ["demo"]


def test_a_freshly_joined_node_without_samples_is_a_target_at_its_estimated_load() -> None:
    policy = make_policy("psi", dontschedule=[rule("cpu_pressure", "GreaterThan", 0.6)])
    pod = make_pod("p", node="hot", cpu=1)
    nodes = [make_node("hot", cpu=8), make_node("warm", cpu=8), make_node("joined", cpu=8)]
    measured = metrics({"cpu_pressure": {"hot": 0.9, "warm": 0.7}})  # joined: no sample yet

    def targets(on_joined: int) -> tuple[str, ...]:
        landed = [make_pod(f"new-{i}", node="joined", cpu=1) for i in range(on_joined)]
        return fitting_nodes(
            pod, nodes, pods_by_node={"joined": landed}, policy=policy, metrics=measured
        )

    assert targets(0) == ("joined",)  # missing data alone never rules it out
    # Pressure at the estimated load, on the stall curve (tas.pressure), not 1 core = 1/8:
    assert targets(6) == ("joined",)  # 6 cores on 8: 0.36
    assert targets(7) == ()  # 7 cores on 8: 0.64, over the target
