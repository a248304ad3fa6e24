"""What `tas explain` answers, as data: the explanations of a pod and a node (frozen
dataclasses, pure: no I/O) and their JSON, which the dashboard's `/api/explain/...` serves and
`tas explain --output json` prints (`to_json`), and back (`pod_from_json`, `node_from_json`).

The explanations are built in `tas_explain.explain` from the facts `tas_explain.facts` gathers,
and printed as text by `tas_explain.render`.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The phase of a pod that no longer exists, explained by its eviction Events.
GONE = "Gone"


@dataclass(frozen=True, slots=True)
class MetricReading:
    """One metric on one node: its fresh value and how old it is (None: no fresh value)."""

    metric: str
    value: float | None
    age_seconds: float | None


@dataclass(frozen=True, slots=True)
class PolicyVerdict:
    """One strategy of one policy on one node."""

    policy: str
    strategy: str
    #: "violates", "passes", "no value" (a rule's metric has no fresh value: fails open),
    #: "score" (scheduleonmetric) or "labels" (labeling).
    verdict: str
    #: The rules and values behind the verdict, e.g. `health_metric Equals 2 (value 2)`.
    detail: str
    score: int | None = None
    rank: int | None = None
    of: int | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    """One candidate node of the extender's decision for the pod."""

    node: str
    #: "pass" or "fail" (filter); None when only scored.
    verdict: str | None = None
    reason: str | None = None
    score: int | None = None
    #: The metric values the decision read on the node (metric -> value).
    metrics: Mapping[str, float] = field(default_factory=dict)
    #: What recent placements added to them (herd control).
    estimates: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ExtenderRecord:
    """One entry of the extender's decision log (`extender.decisions.Decision.to_json`)."""

    time: float
    verb: str
    pod: str
    pod_uid: str
    policy: str
    outcome: str
    reason: str
    nodes: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class ExtenderDecision:
    """The extender's last filter and prioritize decisions for the pod, merged per node (what
    `tas explain` shows under "Placement"; not the scheduler model's `ScheduleResult` nor herd
    control's `tas_herd.placements.Placement`)."""

    filter_time: float | None
    prioritize_time: float | None
    policy: str
    #: Why every node passed or scored alike, when the extender did not apply a policy.
    outcome: str
    reason: str
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True, slots=True)
class NotOffered:
    """A node kube-scheduler did not send the extender for the pod, and why, as its own filters
    judge the node now (node selection, taints, resources, readiness)."""

    node: str
    reason: str


@dataclass(frozen=True, slots=True)
class MoveVerdict:
    """Whether the descheduler's current cycle, run dry, would evict the pod, and why."""

    would_move: bool
    summary: str
    strategy: str | None = None
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EventFact:
    """An Event, as both clusters record it."""

    time: float | None
    kind: str
    namespace: str
    name: str
    reason: str
    message: str
    type: str = "Normal"


@dataclass(frozen=True, slots=True)
class Eviction:
    """A pod evicted from a node, from the Event the descheduler wrote on it."""

    time: float | None
    pod: str
    strategy: str
    message: str


@dataclass(frozen=True, slots=True)
class PodExplanation:
    namespace: str
    name: str
    node: str | None
    phase: str
    #: The pod's `telemetry-policy` label (None: no TAS policy applies).
    policy_label: str | None
    #: Whether the labelled policy exists in the pod's namespace.
    policy_found: bool
    #: Every strategy of the pod's policy on the node it runs on.
    policies: tuple[PolicyVerdict, ...]
    placement: ExtenderDecision | None
    move: MoveVerdict | None
    evictions: tuple[Eviction, ...]
    #: What could not be read, each with why (the rest is still explained).
    missing: tuple[str, ...] = ()
    #: The cluster's other nodes, which the extender never saw for this pod, each with why.
    not_offered: tuple[NotOffered, ...] = ()


@dataclass(frozen=True, slots=True)
class CurveReading:
    """The node's pressure curve as the descheduler learned it (`tas.calibration.curve`), and
    what it predicts for a move of one core off the node, beside the shared model's."""

    #: Effective servers (its cores on the fallback).
    servers: int
    #: Informative (utilization, PSI) samples fitted on.
    samples: int
    #: Too few samples: the shared model predicts for the node.
    fallback: bool
    cores: float
    #: The node's pressure now, read on its curve (None: no CPU reading).
    pressure: float | None = None
    #: ... and once one core of its load moved away, on its curve and on the shared model.
    pressure_after_move: float | None = None
    shared_pressure_after_move: float | None = None
    #: Stalled cores one core's move takes off the node, on its curve and on the shared model.
    relief: float | None = None
    shared_relief: float | None = None


@dataclass(frozen=True, slots=True)
class NodeExplanation:
    name: str
    ready: bool
    labels: Mapping[str, str]
    taints: tuple[str, ...]
    metrics: tuple[MetricReading, ...]
    policies: tuple[PolicyVerdict, ...]
    pods: tuple[str, ...]
    evictions: tuple[Eviction, ...]
    missing: tuple[str, ...] = ()
    #: Its learned pressure curve (None: no descheduler learns one here).
    curve: CurveReading | None = None


class UnknownObjectError(LookupError):
    """No pod or node of that name; `near` lists the names most like it."""

    def __init__(self, kind: str, name: str, near: Sequence[str]) -> None:
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        super().__init__(f"no {kind} named {name}{hint}")
        self.kind = kind
        self.name = name
        self.near = tuple(near)


# ------------------------------------------------------------------------------ JSON


def to_json(value: Any) -> Any:
    """A result as JSON-ready data, keys in camelCase as the dashboard's API has them."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _from_json(kind: Any, data: Any) -> Any:
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return None if data is None else _from_json(options[0], data)
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(data, Mapping):
            raise ValueError(f"expected an object for {kind.__name__}")
        hints = typing.get_type_hints(kind)
        values = {
            f.name: _from_json(hints[f.name], data[_camel(f.name)])
            for f in dataclasses.fields(kind)
            # A field an older answer lacks keeps its default.
            if _camel(f.name) in data or f.default is dataclasses.MISSING
            if _camel(f.name) in data
        }
        return kind(**values)
    if origin is tuple:
        (item, _) = typing.get_args(kind)
        return tuple(_from_json(item, v) for v in data)
    if origin is Mapping or origin is dict:
        _, item = typing.get_args(kind)
        return {str(k): _from_json(item, v) for k, v in data.items()}
    if kind is float and isinstance(data, int | float):
        return float(data)
    return data


def pod_from_json(data: Any) -> PodExplanation:
    """What `to_json` made of a `PodExplanation` (the dashboard's answer), back."""
    found: PodExplanation = _from_json(PodExplanation, data)
    return found


def node_from_json(data: Any) -> NodeExplanation:
    found: NodeExplanation = _from_json(NodeExplanation, data)
    return found
