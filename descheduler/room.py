"""CPU room by measured usage: where an evacuated pod can go without overloading its new node.

nodeFit (upstream's and ours) asks whether another node would accept a pod by its requests. A
node can accept a pod by requests and still be full in use: pods using more than they request
leave no room that requests show. TASViolations evacuates violating nodes, and a pod pushed onto
a node full in use stalls it and the pods already there; in the default family that cost more
work than the violation did (docs/decisions.md, "When a loss is the deschedule rule's").

`MeasuredRoom` holds each Ready node's CPU room: `ROOM_SHARE` of its allocatable cores less the
measured CPU of its pods (their requests until they are measured). A pod may go only to a node
whose room holds its own measured CPU, and each eviction planned takes that room from the node
with the most of it, where the extender's scores would send it. The share keeps a fifth of a
node for the bursts a one-minute average hides.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Mapping

from descheduler.framework import PodUsage
from descheduler.signals import CPU_SIGNALS
from descheduler.state import CycleState, pod_key
from tas.cluster.model import Pod
from tas.types import NodeName

#: The share of a node's allocatable cores an evacuation may fill, by measured usage.
ROOM_SHARE = 0.8


def cpu_cores(shares: Mapping[str, float] | None, cores: float) -> float:
    """A pod's CPU in cores, from its share (0..100) of its node on a CPU signal: measured
    usage, or its requests where usage is not measured."""
    if not shares:
        return 0.0
    share = max((shares.get(s, 0.0) for s in CPU_SIGNALS), default=0.0)
    return share / 100.0 * cores


def pod_cpu_cores(pod: Pod, measured: PodUsage, cores: float) -> float:
    """The pod's CPU in cores on a node of `cores`: measured, or its requests until it is."""
    usage = measured.get(pod_key(pod))
    if usage is not None:
        return cpu_cores(usage, cores)
    return pod.requests.get("cpu", 0.0)


class MeasuredRoom:
    """Each Ready node's CPU room this cycle (see the module docstring), taken as evictions are
    planned."""

    def __init__(self, state: CycleState, measured: PodUsage, share: float = ROOM_SHARE) -> None:
        self._measured = measured
        self._cores = {n.name: n.allocatable.get("cpu", 0.0) for n in state.ready_nodes}
        self._room = {
            name: share * cores - sum(self.cpu_of(p) for p in state.pods_on(name))
            for name, cores in self._cores.items()
        }
        # The nodes by room, and the set of the roomiest k, kept until a move changes a room:
        # pods whose need clears the same nodes get the same set, which nodeFit's own cache
        # (keyed by it) then answers without scanning the nodes again.
        self._by_room: list[tuple[float, NodeName]] | None = None
        self._roomiest: dict[int, frozenset[NodeName]] = {}

    def cpu_of(self, pod: Pod) -> float:
        """The pod's CPU in cores: measured, or its requests until it is."""
        node = pod.node_name
        cores = self._cores.get(node, 0.0) if node is not None else 0.0
        return pod_cpu_cores(pod, self._measured, cores)

    def nodes_for(self, pod: Pod) -> frozenset[NodeName]:
        """The nodes whose room holds the pod's measured CPU, its own left out (empty: none)."""
        if self._by_room is None:
            self._by_room = sorted((free, name) for name, free in self._room.items())
        rooms = self._by_room
        count = len(rooms) - bisect.bisect_left(rooms, (self.cpu_of(pod), ""))
        found = self._roomiest.get(count)
        if found is None:
            found = self._roomiest[count] = frozenset(n for _, n in rooms[len(rooms) - count :])
        # Its own node is left out by nodeFit too; here it only tells "nowhere" apart.
        return found if pod.node_name not in found or len(found) > 1 else frozenset()

    def moved(self, pod: Pod, among: Collection[NodeName]) -> None:
        """The pod was evicted to go to one of `among`: the node with the most room takes it
        (the first such in node order), and its own node gets it back."""
        need = self.cpu_of(pod)
        room = self._room
        best = max((n for n in room if n in among and n != pod.node_name), key=lambda n: room[n])
        self._room[best] -= need
        if pod.node_name is not None and pod.node_name in self._room:
            self._room[pod.node_name] += need
        self._by_room, self._roomiest = None, {}
