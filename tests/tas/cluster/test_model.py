"""The cluster model's owner key (`tas.cluster.model.workload_of`).

Covered: a pod's key is its controller's (the controller among several owners, else the first
owner); a pod without an owner is its own workload; a `PodSummary` and the `Pod` it summarizes
share one key, so herd control (which holds summaries) and the descheduler's cooldown (which
holds pods) count the same owners.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.cluster.model import OwnerReference, PodSummary, workload_of
from tas.types import Namespace
from tests.builders import make_pod


@pytest.mark.parametrize(
    ("owners", "key"),
    [
        pytest.param((), ("shop", "Pod", "web-0"), id="no owner: the pod itself"),
        pytest.param(
            (OwnerReference("ReplicaSet", "web-7c9d"),),
            ("shop", "ReplicaSet", "web-7c9d"),
            id="one owner, not marked controller",
        ),
        pytest.param(
            (OwnerReference("Node", "n1"), OwnerReference("StatefulSet", "db", controller=True)),
            ("shop", "StatefulSet", "db"),
            id="the controller among several owners",
        ),
    ],
)
def test_a_pods_owner_key_is_its_controller_or_the_pod_itself(
    owners: tuple[OwnerReference, ...], key: tuple[str, str, str]
) -> None:
    pod = make_pod("web-0", namespace="shop", apply=lambda p: replace(p, owners=owners))

    assert workload_of(pod) == key


def test_a_pod_and_its_summary_have_the_same_owner_key() -> None:
    pod = make_pod("web-0", namespace="shop", node="node-a", owner="web-7c9d")
    summary = PodSummary(namespace=Namespace("shop"), name="web-0", owners=pod.owners)

    assert workload_of(summary) == workload_of(pod) == ("shop", "ReplicaSet", "web-7c9d")
