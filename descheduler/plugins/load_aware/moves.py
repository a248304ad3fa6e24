"""How LoadAware weighs a move: the policy a rebalancing pass asks, pod by pod.

One pass (`load_aware.plugin.rebalance`) walks the overutilized nodes and their pods; what
differs by signal is the policy it asks:

- on the CPU signals, the stall model (`load_aware.stall.StallModel`): a node is relieved only
  while it is at risk of stalling, and a pod moves only when the move is predicted to pay;
- on the others (memory, IO), the capacity budget (`CapacityBudget`): upstream's rule, pods
  move to the underutilized nodes until the capacity below their high thresholds is spent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from descheduler.framework import PluginContext, PodUsage, sort_candidates
from descheduler.node_classes import Classification
from descheduler.signals import Signal
from descheduler.state import pod_key
from tas.cluster.model import Node, Pod
from tas.fit import request_share
from tas.pressure import Prediction
from tas.types import NodeName


@dataclass(frozen=True, slots=True)
class Move:
    """A move the policy lets the pass try."""

    #: What the eviction's reason adds (the prediction), empty for none.
    explains: str = ""
    #: How much of the owner cooldown it respects (`EvictOptions.cooldown_share`,
    #: `EvictOptions.several_per_cycle`).
    cooldown_share: float = 1.0
    several_per_cycle: bool = False
    #: Where it goes and what it is predicted to do there, where a policy predicts moves.
    planned: tuple[NodeName, Prediction] | None = None


@dataclass(frozen=True, slots=True)
class MoveCandidate:
    """A pod the pass weighs moving off its node."""

    pod: Pod
    node: NodeName
    #: What moving it takes off the node per signal (0..100); None where it is not known.
    relief: Mapping[str, float] | None
    #: The nodes it may go to (`MovePolicy.targets`).
    targets: frozenset[NodeName]


@dataclass(frozen=True, slots=True)
class Decline:
    """The pod stays: why (the cycle's report keeps it for `tas explain`)."""

    why: str
    #: The move was weighed and does not pay (counted in the node's summary line).
    unpaid: bool = True
    #: The rule that kept it, without this pod's figures (what a page sums over pods; empty:
    #: `why` says no more).
    rule: str = ""


class MovePolicy(Protocol):
    """What a rebalancing pass asks about nodes and moves."""

    def targets(self, c: Classification) -> frozenset[NodeName]:
        """The nodes pods may go to."""
        ...

    def spent(self) -> str | None:
        """Why no more pod may move this cycle, if so (checked before each pod)."""
        ...

    def worth_relieving(self, node: NodeName) -> bool:
        """Whether the node is (still) worth moving pods off (checked before each pod)."""
        ...

    def weigh(self, candidate: MoveCandidate, context: PluginContext) -> Move | Decline:
        """Whether moving the candidate off its node (taking its relief, where known) is tried."""
        ...

    def moved(self, node: NodeName, move: Move) -> None:
        """The move was made: later weighings see it."""
        ...


@dataclass
class CapacityBudget:
    """Upstream's LowNodeUtilization rule on measured signals: pods move to the underutilized
    nodes while the capacity left below their high thresholds lasts (`capacity`, per signal,
    which the pass lowers by each move's relief)."""

    c: Classification
    capacity: dict[str, float]

    def targets(self, c: Classification) -> frozenset[NodeName]:
        # A set: every pod weighed asks each Ready node whether it is among them.
        return frozenset(c.underutilized)

    def spent(self) -> str | None:
        if any(self.capacity[s] <= 0 for s in self.c.thresholds.high):
            return "No more capacity to move pods to underutilized nodes"
        return None

    def worth_relieving(self, node: NodeName) -> bool:
        return True

    def weigh(self, candidate: MoveCandidate, context: PluginContext) -> Move | Decline:
        return Move()

    def moved(self, node: NodeName, move: Move) -> None:
        return None


#: The request behind each signal, for estimating a move when per-pod usage is unknown.
_REQUEST_OF_SIGNAL: Mapping[str, str] = {
    Signal.CPU_UTILIZATION: "cpu",
    Signal.CPU_PRESSURE: "cpu",
    Signal.CPU_COMBINED: "cpu",
    Signal.MEMORY_UTILIZATION: "memory",
    Signal.MEMORY_PRESSURE: "memory",
}


def estimate_relief(pod: Pod, node: Node, signals: list[str]) -> dict[str, float] | None:
    """What moving the pod takes off the node per signal (0..100), from its requests as a share
    of the node's allocatable (`tas.fit.request_share`); None when some signal cannot be
    estimated so (a signal no request stands for, a pod that requests none of it, a node
    without it)."""
    relief: dict[str, float] = {}
    for signal in signals:
        resource = _REQUEST_OF_SIGNAL.get(signal)
        share = request_share(pod, node, resource) if resource else None
        if share is None or share <= 0:
            return None
        relief[signal] = min(100.0, share)
    return relief


def eviction_order(pods: list[Pod], measured: PodUsage, signals: list[str]) -> list[Pod]:
    """Lower priority first, and among equals the pod that relieves the node most."""
    ranked = sort_candidates(pods)
    position = {pod_key(p): i for i, p in enumerate(ranked)}
    return sorted(
        ranked,
        key=lambda p: (
            p.priority,
            -sum(measured[pod_key(p)].get(s, 0.0) for s in signals),
            position[pod_key(p)],
        ),
    )
