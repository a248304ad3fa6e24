"""TASViolations evacuates a violating node only to nodes with measured CPU room
(`descheduler.room`, `measuredRoom`).

Covered: a pod leaves a violating node for a node whose measured use leaves room for its own
measured CPU; it stays, and the cycle's report says why, when every other node fits it by
requests but is full in use; `measuredRoom: false` evicts it anyway (TAS's behaviour); without
a per-pod usage source nothing is measured and it is evicted as nodeFit allows; and each
eviction planned takes its room, so two pods that fit one at a time do not both go to a node
with room for one; a `measuredRoom` that is not true or false is refused, naming it.
"""

from __future__ import annotations

from typing import Any

import pytest

from descheduler.config import ConfigError
from descheduler.framework import PodUsage
from descheduler.state import CycleState, pod_key
from tas.vocabulary import POLICY_LABEL
from tests.builders import make_policy, rule
from tests.descheduler.builders import (
    cluster_with,
    evicted,
    make_descheduler,
    make_node,
    make_pod,
    policy_config,
)

POLICY = make_policy(
    "demo-policy", namespace="default", deschedule=[rule("health_metric", "Equals", 2)]
)
HEALTH = {"health_metric": {"node-a": 2, "node-b": 0, "node-c": 0}}


def _pod(name: str, node: str, *, cpu: float = 0.5, linked: bool = True) -> Any:
    labels = {POLICY_LABEL: "demo-policy"} if linked else {}
    return make_pod(name, node=node, owner=name, cpu=cpu, labels=labels)


def _usage(cores: dict[str, float]) -> Any:
    """Per-pod usage: each named pod's measured cores, as a share (0..100) of an 8-core node."""

    def measured(state: CycleState) -> PodUsage:
        return {
            pod_key(p): {"cpu_utilization": cores[p.name] / 8 * 100}
            for p in state.pods
            if p.name in cores
        }

    return measured


def _cycle(busy_c: float, *, measured_room: bool | None = None, usage: bool = True) -> list[str]:
    """node-a violates and runs two linked 2-core pods (`leaving-1`, `leaving-2`); node-b is
    full in use; node-c's pods use `busy_c` cores. Every pod requests half a core."""
    pods = (
        _pod("leaving-1", "node-a"),
        _pod("leaving-2", "node-a"),
        _pod("busy-b", "node-b", linked=False),
        _pod("busy-c", "node-c", linked=False),
    )
    cores = {"leaving-1": 2.0, "leaving-2": 2.0, "busy-b": 7.5, "busy-c": busy_c}
    args = {} if measured_room is None else {"TASViolations": {"measuredRoom": measured_room}}
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=pods)
    descheduler = make_descheduler(
        cluster,
        policy_config("TASViolations", args=args),
        metrics=HEALTH,
        policies={POLICY.key: POLICY},
        pod_usage=_usage(cores) if usage else None,
    )
    return evicted(descheduler.run_cycle())


def test_a_pod_leaves_for_a_node_with_measured_room_for_it() -> None:
    # node-c: 8 x 0.8 = 6.4 cores of room less 1 used leaves 5.4, room for both 2-core pods.
    assert _cycle(busy_c=1.0) == ["leaving-1", "leaving-2"]


def test_each_eviction_takes_its_room() -> None:
    # node-c: 6.4 - 3.0 = 3.4 cores of room: one 2-core pod, not two.
    assert len(_cycle(busy_c=3.0)) == 1


def test_a_pod_stays_where_every_other_node_is_full_in_use_and_the_report_says_why() -> None:
    pods = (_pod("leaving", "node-a"), _pod("busy-b", "node-b", linked=False))
    cores = {"leaving": 2.0, "busy-b": 7.5}
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)
    report = make_descheduler(
        cluster,
        policy_config("TASViolations"),
        metrics={"health_metric": {"node-a": 2, "node-b": 0}},
        policies={POLICY.key: POLICY},
        pod_usage=_usage(cores),
    ).run_cycle()
    assert evicted(report) == []
    (held,) = [b for b in report.blocked if b.name == "leaving"]
    assert (held.strategy, held.why) == (
        "TASViolations",
        "no other node has 2.00 cores of measured room for it",
    )


@pytest.mark.parametrize(
    ("measured_room", "usage"),
    [
        pytest.param(False, True, id="measuredRoom false: as TAS evicts"),
        pytest.param(None, False, id="no per-pod usage: nothing measured, nodeFit decides"),
    ],
)
def test_without_the_rail_the_pods_leave_by_requests(
    measured_room: bool | None, usage: bool
) -> None:
    # node-b and node-c are full in use (7.5 cores of 8), not by requests.
    assert _cycle(busy_c=7.5, measured_room=measured_room, usage=usage) == [
        "leaving-1",
        "leaving-2",
    ]


def test_with_the_rail_they_stay_there() -> None:
    assert _cycle(busy_c=7.5) == []


def test_a_measured_room_that_is_not_a_boolean_is_refused_naming_it() -> None:
    with pytest.raises(ConfigError) as caught:
        policy_config("TASViolations", args={"TASViolations": {"measuredRoom": "sometimes"}})
    assert any("measuredRoom" in p and "true or false" in p for p in caught.value.problems)
