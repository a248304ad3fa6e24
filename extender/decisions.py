"""The decision log: the last N filter and prioritize decisions, for `/debug/decisions`.

Recording must cost next to nothing on the hot path, so a `Decision` keeps references to what
was decided (the candidates, the failures or scores, the metric columns the policy read, which
are immutable snapshots) and builds the per-node explanation only when someone asks for it.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tas.types import MetricColumn, MetricName, NodeName


class Verb(enum.StrEnum):
    FILTER = "filter"
    PRIORITIZE = "prioritize"


class Outcome(enum.StrEnum):
    """Why a decision came out the way it did (also a Prometheus label value)."""

    APPLIED = "applied"
    NO_POLICY_LABEL = "no-policy-label"
    POLICY_NOT_FOUND = "policy-not-found"
    NO_STRATEGY = "no-strategy"
    #: dontschedule would remove every node while most of the fleet violates: fail open.
    BREAKER_OPEN = "breaker-open"


@dataclass(frozen=True, slots=True)
class Decision:
    time: float
    verb: Verb
    pod: str
    pod_uid: str
    policy: str
    outcome: Outcome
    reason: str
    candidates: tuple[NodeName, ...]
    failed: Mapping[NodeName, str] = field(default_factory=dict)
    scores: Mapping[NodeName, int] = field(default_factory=dict)
    metrics: Mapping[MetricName, MetricColumn] = field(default_factory=dict)
    #: What recent placements added to the measured `metrics` (metric -> node -> value).
    estimates: Mapping[MetricName, Mapping[NodeName, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        nodes: list[dict[str, Any]] = []
        for node in self.candidates:
            entry: dict[str, Any] = {"node": node}
            if self.verb is Verb.FILTER:
                reason = self.failed.get(node)
                entry["verdict"] = "fail" if reason is not None else "pass"
                if reason is not None:
                    entry["reason"] = reason
            else:
                entry["score"] = self.scores.get(node, 0)
            entry["metrics"] = {
                metric: column[node] for metric, column in self.metrics.items() if node in column
            }
            estimated = {
                metric: column[node]
                for metric, column in self.estimates.items()
                if node in column and node in self.metrics.get(metric, {})
            }
            if estimated:
                entry["estimates"] = estimated
            nodes.append(entry)
        return {
            "time": self.time,
            "verb": self.verb.value,
            "pod": self.pod,
            "podUID": self.pod_uid,
            "policy": self.policy,
            "outcome": self.outcome.value,
            "reason": self.reason,
            "nodes": nodes,
        }


class DecisionLog:
    """A ring buffer of the most recent decisions (appending is atomic, no lock needed)."""

    def __init__(self, size: int = 100) -> None:
        self._decisions: deque[Decision] = deque(maxlen=size)

    def record(self, decision: Decision) -> None:
        self._decisions.append(decision)

    def recent(self, limit: int | None = None) -> list[Decision]:
        """Newest first."""
        items = list(self._decisions)
        items.reverse()
        return items if limit is None else items[: max(limit, 0)]
