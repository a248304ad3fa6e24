"""What the policies would have done over a recorded window: the replay itself. Pure, no I/O.

Each step is one controller cycle on the values of that moment: the rule engine
(`tas.rules.violations`, over columns narrowed once for every policy's rules as the controller
does) and the circuit breaker (`tas.breaker`) decide, exactly as the live components would:

- **violating** (deschedule): the nodes the controller would label `<policy>=violating`. While
  the breaker is open on the strategy no node newly becomes violating (nodes already violating
  stay, as their labels would), and those seconds count as `breaker_open_seconds`.
- **would_evict**: the descheduler evicts a pod labelled `telemetry-policy: <policy>` (in the
  policy's namespace) from a violating node, once, at the first step it is found there; only
  labelled pods, and nothing while the breaker holds.
- **dontschedule**: the nodes the extender would filter; a pod of the policy that started on
  one of them is a `filtered_placement` (the extender would have sent it elsewhere). While the
  breaker is open on the strategy no node counts (the extender fails open when dontschedule
  would remove every candidate; the replay, which does not know each pod's candidates, takes
  an open breaker as that case).

A step's verdict holds until the next step: an interval is `[first violating step, first step
not violating)`, the last one cut at the window's end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tas.breaker import DEFAULT_MAX_SHARE, BreakerVerdict, nodes_with_values
from tas.policies.model import StrategyName, TASPolicy
from tas.rules import narrow_columns, violation_map, violation_reason
from tas.types import MetricColumns, NodeName
from tas_replay.history import History, PodHistory, StepColumns, Window


@dataclass
class NodeReplay:
    violating_seconds: float = 0.0
    dontschedule_seconds: float = 0.0
    intervals: list[list[float]] = field(default_factory=list)
    dontschedule_intervals: list[list[float]] = field(default_factory=list)


@dataclass
class PolicyReplay:
    nodes: dict[NodeName, NodeReplay] = field(default_factory=dict)
    would_evict: list[dict[str, Any]] = field(default_factory=list)
    filtered_placements: list[dict[str, Any]] = field(default_factory=list)
    breaker_open_seconds: float = 0.0
    #: When the breaker held the deschedule strategy, as [start, end] (for the timeline).
    breaker_open_intervals: list[list[float]] = field(default_factory=list)

    def hold(self, start: float, end: float) -> None:
        self.breaker_open_seconds += end - start
        spans = self.breaker_open_intervals
        if spans and spans[-1][1] == start:
            spans[-1][1] = end
        else:
            spans.append([start, end])

    def as_json(self) -> dict[str, Any]:
        return {
            "nodes": {
                node: {
                    "violating_seconds": record.violating_seconds,
                    "dontschedule_seconds": record.dontschedule_seconds,
                    "intervals": record.intervals,
                    "dontschedule_intervals": record.dontschedule_intervals,
                }
                for node, record in sorted(self.nodes.items())
            },
            "would_evict": self.would_evict,
            "filtered_placements": self.filtered_placements,
            "breaker_open_seconds": self.breaker_open_seconds,
            "breaker_open_intervals": self.breaker_open_intervals,
        }


@dataclass
class Replay:
    window: Window
    policies: dict[str, PolicyReplay]

    def as_json(self) -> dict[str, Any]:
        return {
            "window": self.window.as_json(),
            "policies": {key: p.as_json() for key, p in sorted(self.policies.items())},
        }


class _Intervals:
    """Open intervals per node, closed as nodes leave the set, seconds summed on close."""

    def __init__(self, window: Window) -> None:
        self.window = window
        self.open: dict[NodeName, float] = {}
        self.closed: dict[NodeName, list[list[float]]] = {}

    def advance(self, now: set[NodeName], at: float) -> set[NodeName]:
        """Record the set at time `at`; the nodes that entered it."""
        entered = now.difference(self.open)
        for node in set(self.open).difference(now):
            self.closed.setdefault(node, []).append([self.open.pop(node), at])
        for node in entered:
            self.open[node] = at
        return entered

    def finish(self) -> dict[NodeName, list[list[float]]]:
        for node, start in self.open.items():
            if self.window.end > start:
                self.closed.setdefault(node, []).append([start, self.window.end])
        self.open = {}
        return self.closed


def _pods_by_policy(
    policies: Sequence[TASPolicy], pods: Iterable[PodHistory]
) -> dict[str, list[PodHistory]]:
    """The pods each policy governs: labelled `telemetry-policy: <name>` in its namespace."""
    keys = {(p.namespace, p.name): str(p.key) for p in policies}
    found: dict[str, list[PodHistory]] = {str(p.key): [] for p in policies}
    for pod in pods:
        key = keys.get((pod.namespace, pod.policy)) if pod.policy else None  # type: ignore[arg-type]
        if key is not None:
            found[key].append(pod)
    return found


def _placements(pods: Iterable[PodHistory], window: Window) -> dict[int, list[PodHistory]]:
    """Pods by the step they were placed in: the step their start time falls in, or the first
    step they are seen on a node when kube-state-metrics has no start time for them."""
    at: dict[int, list[PodHistory]] = {}
    for pod in pods:
        first = pod.first_step()
        if first is None:
            continue
        if pod.started is not None:
            index = int((pod.started - window.start) // window.step)
            if index < 0:
                continue  # placed before the window: not a placement the window saw
            first = min(max(index, 0), first)
        at.setdefault(first, []).append(pod)
    return at


def _by_node(pods: Iterable[PodHistory]) -> dict[NodeName, list[PodHistory]]:
    """The pods ever seen on each node: an eviction looks only at the violating nodes' pods."""
    found: dict[NodeName, list[PodHistory]] = {}
    for pod in pods:
        for node in {node for _, _, node in pod.spans}:
            found.setdefault(node, []).append(pod)
    return found


def replay_policies(
    policies: Sequence[TASPolicy], history: History, *, max_share: float = DEFAULT_MAX_SHARE
) -> Replay:
    """Every policy evaluated at every step of the history's window (see the module)."""
    window = history.window
    rules = [r for p in policies for s in p.strategies.values() for r in s.rules]
    wanted = {r.metricname for r in rules}
    steps = StepColumns({m: c for m, c in history.metrics.items() if m in wanted})
    governed = _pods_by_policy(policies, history.pods)
    placed = {key: _placements(pods, window) for key, pods in governed.items()}
    on_node = {key: _by_node(pods) for key, pods in governed.items()}
    results = {str(p.key): PolicyReplay() for p in policies}
    violating = {str(p.key): _Intervals(window) for p in policies}
    filtering = {str(p.key): _Intervals(window) for p in policies}
    evicted: dict[str, set[str]] = {str(p.key): set() for p in policies}
    for index in range(window.count):
        at = window.time(index)
        view = steps.at(index)
        narrowed = narrow_columns(view, rules)
        for policy in policies:
            key = str(policy.key)
            result = results[key]
            deschedule = policy.strategy(StrategyName.DESCHEDULE)
            # Rule hits are built only for the nodes a reason is written for (`ViolationMap`):
            # in a fleet-wide jump every node violates every policy at every step.
            found: Mapping[NodeName, Any] = {}
            nodes: set[NodeName] = set()
            held = False
            if deschedule is not None:
                found = violation_map(deschedule, narrowed)
                nodes = set(found.keys())
                if _breaker_open(deschedule, view, nodes, max_share):
                    # Nothing newly violates while the breaker holds; labels already there stay.
                    held = True
                    result.hold(at, at + _span(window, index))
                    nodes.intersection_update(violating[key].open)
            violating[key].advance(nodes, at)
            if nodes and not held:
                _evict(policy, result, on_node[key], found, nodes, index, at, evicted[key])
            dontschedule = policy.strategy(StrategyName.DONTSCHEDULE)
            if dontschedule is None:
                continue
            filtered = violation_map(dontschedule, narrowed)
            blocked = set(filtered.keys())
            if _breaker_open(dontschedule, view, blocked, max_share):
                blocked = set()  # the extender fails open: every node kept
            filtering[key].advance(blocked, at)
            arrivals = placed[key].get(index)
            if not arrivals or not blocked:
                continue
            for pod in arrivals:
                node = pod.next_node(index)
                if node is not None and node in blocked:
                    result.filtered_placements.append(
                        {
                            "time": at,
                            "pod": pod.key,
                            "node": node,
                            "rule": violation_reason(policy.name, filtered[node]),
                        }
                    )
    for key, result in results.items():
        for node, spans in violating[key].finish().items():
            record = result.nodes.setdefault(node, NodeReplay())
            record.intervals = spans
            record.violating_seconds = sum(end - start for start, end in spans)
        for node, spans in filtering[key].finish().items():
            record = result.nodes.setdefault(node, NodeReplay())
            record.dontschedule_intervals = spans
            record.dontschedule_seconds = sum(end - start for start, end in spans)
    return Replay(window, results)


def _span(window: Window, index: int) -> float:
    return min(window.step, window.end - window.time(index))


def _breaker_open(
    strategy: Any, view: MetricColumns, found: set[NodeName], max_share: float
) -> bool:
    """Whether `tas.breaker` holds `strategy` back at this step (`found` violating)."""
    return (
        bool(found)
        and _may_open(strategy.rules, view, len(found), max_share)
        and BreakerVerdict(frozenset(found), len(nodes_with_values(strategy, view)), max_share).open
    )


def _may_open(rules: Iterable[Any], view: MetricColumns, violating: int, max_share: float) -> bool:
    """False when the breaker surely stays closed, known without building the set of nodes
    with values: that set is at least as large as the largest of the strategy's columns."""
    least = max((len(view.get(rule.metricname, {})) for rule in rules), default=0)
    return violating > max_share * least


def _evict(
    policy: TASPolicy,
    result: PolicyReplay,
    on_node: Mapping[NodeName, Sequence[PodHistory]],
    found: Mapping[NodeName, Any],
    nodes: set[NodeName],
    index: int,
    at: float,
    evicted: set[str],
) -> None:
    for node in sorted(nodes.intersection(on_node)):
        for pod in on_node[node]:
            if pod.node_at(index) != node or pod.key in evicted:
                continue
            evicted.add(pod.key)
            result.would_evict.append(
                {
                    "time": at,
                    "pod": pod.key,
                    "node": node,
                    "reason": violation_reason(policy.name, found[node]),
                }
            )


@dataclass(frozen=True)
class PolicyDifference:
    """`--compare`: what the second version changes for one policy."""

    key: str
    nodes: tuple[int, int]
    violating_seconds: tuple[float, float]
    evictions: tuple[int, int]
    filtered: tuple[int, int]


def compare(first: Replay, second: Replay) -> list[PolicyDifference]:
    """Per policy (in either replay): violating nodes, seconds, evictions and filtered
    placements, first version then second."""
    empty = PolicyReplay()
    found: list[PolicyDifference] = []
    for key in sorted(set(first.policies) | set(second.policies)):
        a, b = first.policies.get(key, empty), second.policies.get(key, empty)
        found.append(
            PolicyDifference(
                key,
                (_violating_nodes(a), _violating_nodes(b)),
                (_seconds(a), _seconds(b)),
                (len(a.would_evict), len(b.would_evict)),
                (len(a.filtered_placements), len(b.filtered_placements)),
            )
        )
    return found


def _violating_nodes(result: PolicyReplay) -> int:
    return sum(1 for r in result.nodes.values() if r.violating_seconds > 0)


def _seconds(result: PolicyReplay) -> float:
    return sum(r.violating_seconds for r in result.nodes.values())
