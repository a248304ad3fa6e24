"""How much of a node a pod takes (`tas.fit.node_share`, `tas.fit.request_share`): the one
estimate per-pod usage, LoadAware's relief and the simulator's Volcano reading share
(tests/descheduler/test_request_share.py: that they agree).

Covered: a pod's requests as a percentage of its node's allocatable; 0 for a resource the pod
does not request; no share on a node without the resource; a measured amount above the
allocatable is not capped (the callers that read a part of the node cap it).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from tas.cluster.model import Node, Pod
from tas.fit import node_share, request_share
from tests.builders import GiB, make_node, make_pod


@pytest.mark.parametrize(
    ("pod", "node", "resource", "share"),
    [
        pytest.param(
            make_pod("web", cpu=1.0), make_node("n", cpu=4.0), "cpu", 25.0, id="1 core of 4"
        ),
        pytest.param(
            make_pod("web", memory=3 * GiB),
            make_node("n", memory=12 * GiB),
            "memory",
            25.0,
            id="3 GiB of 12",
        ),
        pytest.param(
            make_pod("web", cpu=1.0), make_node("n", cpu=4.0), "memory", 0.0, id="none requested"
        ),
        pytest.param(
            make_pod("web", cpu=1.0),
            make_node("n", apply=lambda n: replace(n, allocatable={"memory": GiB})),
            "cpu",
            None,
            id="a node without the resource has no share",
        ),
    ],
)
def test_a_pods_requests_are_a_percentage_of_its_nodes_allocatable(
    pod: Pod, node: Node, resource: str, share: float | None
) -> None:
    assert request_share(pod, node, resource) == share


def test_a_measured_amount_above_the_allocatable_is_not_capped() -> None:
    assert node_share(6.0, make_node("n", cpu=4.0), "cpu") == 150.0
