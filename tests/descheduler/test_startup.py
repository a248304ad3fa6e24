"""What a restart costs each workload, read from its pods (`descheduler.startup`).

Covered: a pod's start-up is its Ready after its PodScheduled; a pod not yet ready, one without
either condition, a VM's launcher pod (a live migration's target is not work lost) and a
Ready older than the scheduling give none; an owner's start-up is the median over its pods.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from descheduler.startup import owner_startups, started_in
from tas.cluster.model import PodCondition
from tas.vocabulary import VIRT_LAUNCHER
from tests.descheduler.builders import START, make_pod, replace


def _conditions(scheduled: float | None, ready: float | None) -> tuple[PodCondition, ...]:
    found = []
    if scheduled is not None:
        at = START + timedelta(seconds=scheduled)
        found.append(PodCondition("PodScheduled", "True", last_transition_time=at))
    if ready is not None:
        at = START + timedelta(seconds=ready)
        found.append(PodCondition("Ready", "True", last_transition_time=at))
    return tuple(found)


@pytest.mark.parametrize(
    ("scheduled", "ready", "expected"),
    [
        (0.0, 42.0, 42.0),
        (10.0, 10.0, 0.0),
        (0.0, None, None),  # still starting
        (None, 5.0, None),
        (None, None, None),
        (30.0, 5.0, None),  # Ready before it was scheduled: not a start-up
    ],
)
def test_a_pods_start_up_is_its_ready_after_its_scheduling(
    scheduled: float | None, ready: float | None, expected: float | None
) -> None:
    pod = make_pod("p", apply=replace(conditions=_conditions(scheduled, ready)))
    assert started_in(pod) == expected


def test_a_not_ready_condition_is_no_start_up() -> None:
    waiting = (
        *_conditions(0.0, None),
        PodCondition("Ready", "False", last_transition_time=START + timedelta(seconds=9)),
    )
    assert started_in(make_pod("p", apply=replace(conditions=waiting))) is None


def test_a_vms_launcher_pod_gives_no_start_up() -> None:
    vm = make_pod(
        "virt-launcher-a",
        labels=VIRT_LAUNCHER,
        apply=replace(conditions=_conditions(0.0, 90.0)),
    )
    assert started_in(vm) is None


def test_an_owners_start_up_is_the_median_of_its_started_pods() -> None:
    pods = [
        make_pod(f"web-{i}", owner="web", apply=replace(conditions=_conditions(0.0, s)))
        for i, s in enumerate((20.0, 90.0, 40.0))
    ]
    pods.append(make_pod("web-new", owner="web", apply=replace(conditions=_conditions(0.0, None))))
    pods.append(make_pod("db-0", owner="db", apply=replace(conditions=_conditions(0.0, 5.0))))
    pods.append(make_pod("bare", owner=None, apply=replace(conditions=_conditions(0.0, 7.0))))
    assert owner_startups(pods) == {
        ("default", "ReplicaSet", "web"): 40.0,
        ("default", "ReplicaSet", "db"): 5.0,
    }
