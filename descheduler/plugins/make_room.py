"""MakeRoomForPending: a pod that has waited long for want of room, while the fleet has that
room in pieces, gets one node cleared for it. A few smaller pods leave that node, each for a
node with room for it, and the pending pod then fits.

Why: kube-scheduler places pods as they come and its default scoring spreads them (least
allocated first). Pods that take nearly a whole node, created beside many small ones, find
every node holding a core or so of requests and can stay pending for good, although the fleet
has room for everything (docs/decisions.md, "Where the hindsight gain goes"). kube-scheduler's
preemption does not help there: it only evicts pods of lower priority, and without asking
whether they fit elsewhere.

The rules, each for a reason:

- Only a pod pending for `minPendingSeconds` (default 5 minutes, so a cluster autoscaler's new
  node comes first), whose `PodScheduled` condition, when it has one, says `Unschedulable` (a
  gated pod waits for something else), and that no node accepts as the cluster stands.
- The pods that leave are each of no higher priority than the pending pod, at most
  `maxPodsPerPending` of them (default 10), smaller together than the pending pod (their
  shares of the node, each the larger of cpu and memory, summed), and each passes the
  profile's evictor rules. Each is booked on another node with room for it (nodeFit, its
  TASPolicy included), so after the move the fleet runs strictly more than before.
- A replacement of a moved pod is left to settle for an hour (`descheduler.settling`, the rule
  LoadAware keeps too): one replica's slot is moved by this plugin at most once an hour,
  whatever the queue.
- The pending pod must pass every filter on the cleared node, its own TASPolicy's
  `dontschedule` rules included.
- Among the nodes that qualify, the one where the least leaves.
- A pod that room was made for is not helped again for `retrySeconds` (default 10 minutes).
  If it is still pending by then, something else took the room, and the next attempt may
  choose better.

When the rails let all of a plan's pods go in one cycle, the room is not reserved: the
evicted pods' replacements are created while the evicted pods still terminate and hold the
node's room, so kube-scheduler places them elsewhere first; when the evicted pods are gone it
retries the pending pod, which is older than any pod created since. A pod created in the moment
the room frees can still take it: the retry rule bounds what that costs.

When they do not (a node holding more pods than `maxNoOfPodsToEvictPerNode` lets go in one
cycle), as many go as they allow and the node is reserved: the cycle keeps the taint
`telemetry.aware.scheduling/reserved=<pod uid>:NoSchedule` on it, so no new pod lands there
while the rest leave in the next cycles. The cycle that evicts the last of them lets the
reservation go, so the node is free for the pending pod when they are gone. A reservation
lasts only while the plugin asks for it again each cycle: it ends once the pod is placed or
gone, after `retrySeconds`, when the node no longer qualifies, while the circuit breaker is
open, in a cycle skipped for want of Ready nodes, and when the descheduler restarts or hands
over its lease. A plan none of whose pods may go now (a limit already spent, a PDB) is not
begun; only a refusal by the Eviction API itself (a PDB that changed since the snapshot) can
stop one part-way.

The plugin is built (`descheduler.assemble`) with what it needs beyond the per-cycle handle:
the evictions remembered (`descheduler.settling.MoveHistory`: which pods are replacements left
to settle) and `reserve` (`Reserve`: the cycle's reservations, which it asks for anew each
cycle it still needs a node). How much of a plan the rails let go now is asked of the evictor
without evicting (`EvictOptions.trial`: each pod after those before it), through the checks
the evictions will meet.

The owner cooldown does not guard it by default, as it does the plugins driven by telemetry:
the cooldown keeps a flapping metric from moving a workload back and forth, and this plugin
reads no metric. Its moves cannot undo each other: each runs strictly more requests than
before (the pending pod is larger than what leaves, and what leaves has room booked
elsewhere), so churn is bounded by the pending pods there are.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from descheduler.args import FieldReader
from descheduler.framework import (
    EvictOptions,
    ExtensionPoint,
    Outcome,
    Plugin,
    PluginContext,
    PluginName,
    Trial,
)
from descheduler.nodefit import fitting_nodes
from descheduler.settling import MoveHistory, NoMoves, settle_left
from descheduler.state import CycleState
from tas.cluster.model import Node, Pod
from tas.fit import (
    PODS_RESOURCE,
    holds_resources,
    matches_node_selection,
    node_share,
    request_share,
    untolerated_taint,
)
from tas.types import NodeName
from tas.vocabulary import RESERVED_TAINT_KEY, TELEMETRY_RESOURCE

log = logging.getLogger(__name__)

NAME = PluginName("MakeRoomForPending")

#: Keeps new pods off a node until the end of the next cycle, for the pending pod (its uid)
#: the node is being cleared for (`descheduler.cycle.Reservations.reserve`).
Reserve = Callable[[NodeName, str], None]


def _no_reservation(node: NodeName, pod_uid: str) -> None:
    return None


#: How many of the most promising nodes get a whole plan worked out for one pending pod
#: (the others are ruled out by arithmetic alone): bounds a cycle's work on a large fleet.
PLANNED_NODES = 20
_NEVER = datetime.min.replace(tzinfo=UTC)

#: How many pending pods get a plan looked for in one cycle, the highest priority and oldest
#: first: each costs a pass over every node, and a queue of a thousand pending pods (a batch
#: system's) must not make the cycle slow. The rest wait for the next cycles.
PLANNED_PODS = 10


@dataclass(frozen=True, slots=True)
class MakeRoomForPendingArgs:
    min_pending_seconds: int = 300
    max_pods_per_pending: int = 10
    retry_seconds: int = 600


def parse_args(r: FieldReader) -> MakeRoomForPendingArgs:
    defaults = MakeRoomForPendingArgs()

    def integer(key: str, default: int, minimum: int) -> int:
        value = r.integer(key, default, minimum=minimum)
        return default if value is None else value

    return MakeRoomForPendingArgs(
        min_pending_seconds=integer("minPendingSeconds", defaults.min_pending_seconds, 0),
        max_pods_per_pending=integer("maxPodsPerPending", defaults.max_pods_per_pending, 1),
        retry_seconds=integer("retrySeconds", defaults.retry_seconds, 0),
    )


def waiting_for_room(pod: Pod, now: datetime, min_pending_seconds: float) -> bool:
    """Pending, unbound and not going away, for at least `min_pending_seconds`, and (where
    kube-scheduler said why) pending because it was found unschedulable."""
    if pod.node_name is not None or pod.phase != "Pending" or pod.terminating:
        return False
    if pod.creation_timestamp is None:
        return False
    if (now - pod.creation_timestamp).total_seconds() < min_pending_seconds:
        return False
    scheduled = [c for c in pod.conditions if c.type == "PodScheduled"]
    return all(c.status == "False" and c.reason == "Unschedulable" for c in scheduled)


def share(pod: Pod, node: Node) -> float:
    """How much of the node the pod's requests take (0..100): the larger of its cpu and memory
    shares (`tas.fit.request_share`, the one estimate)."""
    return max(
        (
            found
            for resource in ("cpu", "memory")
            if (found := request_share(pod, node, resource)) is not None
        ),
        default=0.0,
    )


def _wanted(pod: Pod) -> dict[str, float]:
    """What the pod needs of a node's room: its requests (the telemetry resource is not room)
    and one pod slot."""
    wanted = {r: v for r, v in pod.requests.items() if r != TELEMETRY_RESOURCE and v > 0}
    wanted[PODS_RESOURCE] = 1.0
    return wanted


class _Ledger:
    """The room of the cycle's snapshot, less what this cycle's plans have booked on each node,
    plus what they freed (the pods they evict)."""

    def __init__(self, state: CycleState, moves: MoveHistory) -> None:
        self._state = state
        self._moves = moves
        self._booked: defaultdict[NodeName, defaultdict[str, float]] = defaultdict(
            lambda: defaultdict(float)
        )
        #: Nodes cleared for a pending pod in this cycle: no plan books or clears them again.
        self.cleared: set[NodeName] = set()
        self._sized: dict[NodeName, list[tuple[float, Pod]]] = {}

    def free(self, node: Node, resource: str, besides: Sequence[Pod] = ()) -> float:
        """The node's room for `resource`, less this cycle's bookings and `besides` (pods a
        plan being worked out would put there)."""
        load = self._state.load_by_node().get(node.name)
        if resource == PODS_RESOURCE:
            used = float(load.pods) if load is not None else 0.0
        else:
            used = load.requested.get(resource, 0.0) if load is not None else 0.0
        available = node.allocatable.get(resource)
        if available is None:
            return float("inf") if resource == PODS_RESOURCE else 0.0
        tentative = sum(_wanted(p).get(resource, 0.0) for p in besides)
        return available - used - self._booked_of(node.name, resource) - tentative

    def sized_pods(self, node: Node) -> list[tuple[float, Pod]]:
        """The pods on the node that hold resources, each with its share of the node: worked
        out once per cycle, as every pending pod weighs every node (a node that loses pods in
        this cycle is cleared, and weighed no more)."""
        found = self._sized.get(node.name)
        if found is None:
            pods = self._state.pods_on(node.name)
            found = self._sized[node.name] = [
                (share(p, node), p) for p in pods if holds_resources(p) and not self._settling(p)
            ]
        return found

    def _settling(self, pod: Pod) -> bool:
        """A replacement of a moved pod, left to settle for an hour as LoadAware leaves it
        (`settle_left`): one replica's slot is moved by this plugin at most once an hour."""
        since = self._moves.owner_moving_since(pod)
        return settle_left(pod, since, self._state.now) > 0

    def movable(self, pending: Pod, node: Node) -> list[Pod]:
        """The pods on the node that may leave for the pending pod, before the evictor's say:
        running pods of no higher priority, each smaller than the pending pod, none a
        replacement of a pod moved within the hour."""
        size = share(pending, node)
        return [p for s, p in self.sized_pods(node) if s < size and p.priority <= pending.priority]

    def forget(self, node: NodeName) -> None:
        """Work the node's pods out afresh when next asked."""
        self._sized.pop(node, None)

    def has_room(self, node: Node, pod: Pod, besides: Sequence[Pod] = ()) -> bool:
        return all(self.free(node, r, besides) >= v for r, v in _wanted(pod).items())

    def booked_on(self, node: NodeName) -> bool:
        """A plan of this cycle books a pod on the node (its room is no longer the snapshot's)."""
        return self._booked_of(node, PODS_RESOURCE) > 0.5  # a count of pods

    def _booked_of(self, node: NodeName, resource: str) -> float:
        """Read without adding an entry: asking about a node books nothing on it."""
        booked = self._booked.get(node)
        return booked.get(resource, 0.0) if booked is not None else 0.0

    def book(self, node: NodeName, pod: Pod) -> None:
        for resource, value in _wanted(pod).items():
            self._booked[node][resource] += value


@dataclass(frozen=True, slots=True)
class _Plan:
    pending: Pod
    node: Node
    #: Each pod to evict with the node it is booked on.
    moves: tuple[tuple[Pod, Node], ...]


@dataclass(frozen=True, slots=True)
class _Clearing:
    """A node being cleared for a pending pod over several cycles, reserved meanwhile."""

    node: NodeName
    since: datetime


@dataclass
class MakeRoom:
    """The plugin as a cycle runs it: remembers which pending pods it made room for and when,
    and the nodes it is still clearing. Built with the evictions remembered (`moves`) and the
    cycle's reservations (`reserve`); without them (built on its own) it remembers no moves
    and reserves nothing."""

    args: MakeRoomForPendingArgs
    moves: MoveHistory = field(default_factory=NoMoves)
    reserve: Reserve = _no_reservation
    _helped: dict[str, datetime] = field(default_factory=dict)
    _clearing: dict[str, _Clearing] = field(default_factory=dict)
    _looked_at: dict[str, datetime] = field(default_factory=dict)

    def run(self, context: PluginContext) -> None:
        state = context.state
        waiting = {
            _uid(p): p
            for p in state.pods
            if waiting_for_room(p, state.now, self.args.min_pending_seconds)
        }
        # Forget pods that are placed or gone: their uid will not come back.
        self._helped = {u: when for u, when in self._helped.items() if u in waiting}
        self._clearing = {u: c for u, c in self._clearing.items() if u in waiting}
        self._looked_at = {u: when for u, when in self._looked_at.items() if u in waiting}
        ledger = _Ledger(state, self.moves)
        ledger.cleared.update(c.node for c in self._clearing.values())
        for uid, clearing in list(self._clearing.items()):
            if not self._go_on_clearing(waiting[uid], clearing, context, ledger):
                return
        # The pods looked at longest ago first (so a long queue is gone through in turn), then
        # the highest priority, then the oldest.
        fresh = sorted(
            (p for u, p in waiting.items() if not self._recently_helped(u, state.now)),
            key=lambda p: (
                self._looked_at.get(_uid(p), _NEVER),
                -p.priority,
                p.creation_timestamp or state.now,
                p.name,
            ),
        )
        planned = 0
        for pod in fresh:
            if any(n not in ledger.cleared for n in context.fitting_nodes(pod)):
                continue  # a node takes it as things stand: kube-scheduler's to place
            if planned == PLANNED_PODS:
                break
            planned += 1
            self._looked_at[_uid(pod)] = state.now
            plan = _best_plan(pod, context, ledger, self.args)
            if plan is None:
                log.debug("No node can be cleared for pending pod %s/%s", pod.namespace, pod.name)
                continue
            if not self._begin(plan, context, ledger):
                return

    def _begin(self, plan: _Plan, context: PluginContext, ledger: _Ledger) -> bool:
        """Carry out as much of a new plan as this cycle's rails allow, reserving the node
        when the rest must wait for the next cycle. False when the rails stop every plugin."""
        pod, state = plan.pending, context.state
        now_allowed = _allowed_now(plan, context)
        if now_allowed == 0:
            return True
        uid = _uid(pod)
        self._helped[uid] = state.now
        if now_allowed < len(plan.moves):
            self._clearing[uid] = _Clearing(plan.node.name, state.now)
            self.reserve(plan.node.name, uid)
        return _carry_out(plan, now_allowed, context, ledger)

    def _go_on_clearing(
        self, pod: Pod, clearing: _Clearing, context: PluginContext, ledger: _Ledger
    ) -> bool:
        """The next part of a node's clearing: the rest when the rails allow (the reservation
        then ends with this cycle, and the pending pod is the oldest to take the room), else
        as much as they allow, the node still reserved. A clearing that outlived
        `retrySeconds`, or whose node no longer qualifies, ends. False when the rails stop
        every plugin."""
        uid, state = _uid(pod), context.state
        node = state.nodes.get(clearing.node)
        elapsed = (state.now - clearing.since).total_seconds()
        plan = None
        if node is not None and node.ready and elapsed < self.args.retry_seconds:
            ledger.forget(node.name)  # its pods may have changed since the ledger was made
            plan = _plan_on(pod, node, ledger.movable(pod, node), context, ledger, self.args)
        if plan is None:
            log.info(
                'Room for pod="%s/%s" on node="%s" given up after %.0f s',
                pod.namespace,
                pod.name,
                clearing.node,
                elapsed,
            )
            del self._clearing[uid]
            return True
        if not plan.moves:
            del self._clearing[uid]  # made: the reservation ends with this cycle
            return True
        allowed = _allowed_now(plan, context)
        if allowed < len(plan.moves):
            self.reserve(plan.node.name, uid)
        else:
            del self._clearing[uid]
        return _carry_out(plan, allowed, context, ledger) if allowed else True

    def _recently_helped(self, uid: str, now: datetime) -> bool:
        when = self._helped.get(uid)
        return when is not None and (now - when).total_seconds() < self.args.retry_seconds


def _options(plan: _Plan, destination: Node, trial: Trial | None = None) -> EvictOptions:
    """How each of the plan's evictions is asked for, and asked about first (`trial`)."""
    pending = f"{plan.pending.namespace}/{plan.pending.name}"
    return EvictOptions(
        strategy=NAME,
        reason=f"making room on {plan.node.name} for pending pod {pending}",
        among=(destination.name,),
        # Where a profile puts the owner cooldown on every plugin (`ownerCooldown:
        # AllPlugins`), several pods of one owner may still leave together: they make one room.
        several_per_cycle=True,
        trial=trial,
    )


def _allowed_now(plan: _Plan, context: PluginContext) -> int:
    """How many of the plan's pods, in order, every rail lets go in this cycle (0: none,
    with why logged): each asked of the evictor in a trial after those before it."""
    before: list[Pod] = []
    why = "nothing to evict"
    for pod, destination in plan.moves:
        attempt = context.evictor.evict(pod, _options(plan, destination, Trial(tuple(before))))
        if not attempt.done:
            why = f"{pod.namespace}/{pod.name}: {attempt.why}"
            break
        before.append(pod)
    if not before:
        log.info(
            'Room for pod="%s/%s" on node="%s" not begun this cycle: %s',
            plan.pending.namespace,
            plan.pending.name,
            plan.node.name,
            why,
        )
    return len(before)


def _uid(pod: Pod) -> str:
    return pod.uid or f"{pod.namespace}/{pod.name}"


def _best_plan(
    pod: Pod, context: PluginContext, ledger: _Ledger, args: MakeRoomForPendingArgs
) -> _Plan | None:
    state = context.state
    shortfalls = []
    for node in state.ready_nodes:
        if node.unschedulable or node.name in ledger.cleared or ledger.booked_on(node.name):
            continue
        if not matches_node_selection(pod, node) or untolerated_taint(pod, node.taints):
            continue
        movable = ledger.movable(pod, node)
        shortfall = _shortfall(pod, node, movable, ledger)
        if shortfall is not None:
            shortfalls.append((shortfall, node.name, node, movable))
    shortfalls.sort(key=lambda found: (found[0], found[1]))
    choices = [
        (_cost(leaving, node), node, leaving)
        for _, _, node, movable in shortfalls[:PLANNED_NODES]
        if (leaving := _leaving(pod, node, movable, context, args)) is not None
    ]
    # The cheapest first: finding destinations scans every node, so only the plan taken pays it.
    for _, node, leaving in sorted(choices, key=lambda c: c[0]):
        moves = _destinations(leaving, node, context, ledger)
        if moves is not None:
            return _Plan(pod, node, moves)
    return None


def _cost(leaving: Sequence[Pod], node: Node) -> tuple[float, int, str]:
    """Smaller is better: the share of the node that leaves, then how many pods do."""
    return (sum(share(p, node) for p in leaving), len(leaving), node.name)


def _shortfall(pending: Pod, node: Node, movable: Sequence[Pod], ledger: _Ledger) -> float | None:
    """How much of the node (a percentage of its allocatable, `tas.fit.node_share`; the larger
    over its resources) the pending pod lacks there, or None when even every movable pod
    leaving would not make the room."""
    lacking = 0.0
    for resource, wanted in _wanted(pending).items():
        short = wanted - ledger.free(node, resource)
        if short <= 0:
            continue
        freed = sum(p.requests.get(resource, 0.0) for p in movable)
        if resource == PODS_RESOURCE:
            freed = float(len(movable))
        if freed < short:
            return None
        part = node_share(short, node, resource) if resource != PODS_RESOURCE else None
        if part is not None:
            lacking = max(lacking, part)
    return lacking


def _plan_on(
    pending: Pod,
    node: Node,
    movable: Sequence[Pod],
    context: PluginContext,
    ledger: _Ledger,
    args: MakeRoomForPendingArgs,
) -> _Plan | None:
    """The pods to leave the node for the pending pod (`_leaving`), each with another node
    with room for it; None when there is no such set."""
    leaving = _leaving(pending, node, movable, context, args)
    if leaving is None:
        return None
    moves = _destinations(leaving, node, context, ledger)
    return None if moves is None else _Plan(pending, node, moves)


def _leaving(
    pending: Pod,
    node: Node,
    movable: Sequence[Pod],
    context: PluginContext,
    args: MakeRoomForPendingArgs,
) -> list[Pod] | None:
    """The fewest, smallest pods whose leaving lets the pending pod onto the node, within
    `maxPodsPerPending` and smaller together than it; None when there is no such set."""
    state = context.state
    evictor = context.evictor
    candidates = sorted(
        (p for p in movable if evictor.filter(p)),
        key=lambda p: (-share(p, node), p.name),
    )
    on_node = state.pods_on(node.name)

    # The node as it will be for the pending pod: without the reservation kept for it.
    unreserved = replace(node, taints=tuple(t for t in node.taints if t.key != RESERVED_TAINT_KEY))

    def accepts(leaving: Iterable[Pod]) -> bool:
        gone = {(p.namespace, p.name) for p in leaving}
        staying = [p for p in on_node if (p.namespace, p.name) not in gone]
        return bool(
            fitting_nodes(
                pending,
                [unreserved],
                pods_by_node={node.name: staying},
                policy=state.policy_of(pending),
                metrics=state.metrics,
            )
        )

    leaving: list[Pod] = []
    if not accepts(leaving):
        for pod in candidates:
            leaving.append(pod)
            if accepts(leaving):
                break
        else:
            return None
    # Drop any pod the room does not need after all, the largest first.
    for pod in list(leaving):
        fewer = [p for p in leaving if p is not pod]
        if accepts(fewer):
            leaving = fewer
    if len(leaving) > args.max_pods_per_pending:
        return None
    if sum(share(p, node) for p in leaving) >= share(pending, node):
        return None
    return leaving


def _destinations(
    leaving: Sequence[Pod], node: Node, context: PluginContext, ledger: _Ledger
) -> tuple[tuple[Pod, Node], ...] | None:
    """A node with room for each leaving pod (nodeFit, then room left after the ledger's
    bookings and the plan's own): the one with the most cpu free, as kube-scheduler's
    least-allocated scoring would pick. None when one of them has nowhere to go. Books
    nothing: a plan is booked once carried out (`_carry_out`)."""
    nodes = context.state.nodes
    moves: list[tuple[Pod, Node]] = []
    headed_to: defaultdict[NodeName, list[Pod]] = defaultdict(list)
    for pod in leaving:
        allowed = context.evictor.pre_eviction_filter(pod)
        destinations = [
            nodes[name]
            for name in (context.fitting_nodes(pod) if allowed else ())
            if name != node.name
            and name not in ledger.cleared
            and ledger.has_room(nodes[name], pod, headed_to.get(name, ()))
        ]
        if not destinations:
            return None
        best = max(
            destinations, key=lambda n: (ledger.free(n, "cpu", headed_to.get(n.name, ())), n.name)
        )
        headed_to[best.name].append(pod)
        moves.append((pod, best))
    return tuple(moves)


def _carry_out(plan: _Plan, count: int, context: PluginContext, ledger: _Ledger) -> bool:
    """Evict the plan's first `count` pods (the rest wait for the next cycle, the node
    reserved); False when the cycle's rails stop every plugin."""
    pending = f"{plan.pending.namespace}/{plan.pending.name}"
    ledger.cleared.add(plan.node.name)
    moves = plan.moves[:count]
    for pod, destination in moves:
        ledger.book(destination.name, pod)
    log.info(
        'Making room pod="%s" node="%s" evicting=%s%s',
        pending,
        plan.node.name,
        ",".join(f"{p.namespace}/{p.name}->{d.name}" for p, d in moves),
        f" (then {len(plan.moves) - count} more, the node reserved)"
        if count < len(plan.moves)
        else "",
    )
    for done, (pod, destination) in enumerate(moves):
        attempt = context.evictor.evict(pod, _options(plan, destination))
        if not attempt.done:
            log.warning(
                'Room for pod="%s" on node="%s" left unmade after %d of %d evictions: %s',
                pending,
                plan.node.name,
                done,
                len(plan.moves),
                attempt.why,
            )
            return attempt.outcome is not Outcome.STOPPED
    return True


PLUGIN = Plugin.serving(
    ExtensionPoint.BALANCE,
    NAME,
    args=(MakeRoomForPendingArgs, parse_args),
    new=MakeRoom,
)
