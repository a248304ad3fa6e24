"""The load-balanced fair share of a burst: the yardstick of `herd_ratio_by_load`.

The spec's `herd_ratio` divides by a count-based fair share (burst size / schedulable nodes).
That is the right yardstick on a fleet of equal, equally loaded nodes, and the wrong one when
nodes differ: when a cluster autoscaler adds empty nodes to a busy fleet, filling the empty
ones is the load-balanced placement, yet it scores several times the count-based share, and
spreading the burst by count (two pods onto every busy node) scores best while it piles work
onto nodes already under pressure. Perfect information scores 3.7 on `scale-out` that way.

So the burst is also judged against water-filling: each pod of the burst adds its expected CPU
use (a bursty pod's time average, not where its burst happens to be), and the burst fills the
least loaded nodes (by utilization of their cores, from the expected use of the pods they run)
up to one common level. The most pods that places on one node is the fair share. On equal,
equally loaded nodes it equals the count-based one, so both figures agree where the count is
right.
"""

from __future__ import annotations

from collections.abc import Sequence


def most_pods_when_balanced(
    *, loads: Sequence[float], cores: Sequence[float], pod_cpu: float, pods: int
) -> float:
    """The most pods of a burst of `pods` (each using `pod_cpu` cores) that water-filling puts
    on one node, given each node's CPU in use (`loads`) and `cores`. Pods are divisible here,
    as in any fair share; at least 1, since no placement can put less than a pod on its busiest
    node. Without usable nodes or pod use, the count-based share stands in."""
    nodes = [(load, size) for load, size in zip(loads, cores, strict=True) if size > 0]
    if not nodes or pods <= 0:
        return 1.0
    if pod_cpu <= 0:
        return max(1.0, pods / len(nodes))
    level = _level(nodes, pods * pod_cpu)
    room = max(level * size - load for load, size in nodes)
    return max(1.0, room / pod_cpu)


def _level(nodes: Sequence[tuple[float, float]], added: float) -> float:
    """The common utilization the `added` cores bring the least loaded nodes to: every node
    below it is filled to it, every node above it gets nothing."""
    by_utilization = sorted(nodes, key=lambda node: node[0] / node[1])
    load = cores = 0.0
    for i, (node_load, node_cores) in enumerate(by_utilization):
        load += node_load
        cores += node_cores
        level = (load + added) / cores
        following = by_utilization[i + 1] if i + 1 < len(by_utilization) else None
        if following is None or level <= following[0] / following[1]:
            return level
    raise AssertionError("unreachable: the last node always returns")
