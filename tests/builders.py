"""Builders for policies, metric views, nodes, pods and time, so tests state only what matters
to them. Node and pod builders take an optional mutator (`apply=`), as STYLE.md asks."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from tas.policies.model import TASPolicy, parse_policy
from tas.types import MetricColumns, MetricName, NodeName


def rule(metric: str, operator: str, target: Any = 0, labels: Sequence[str] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {"metricname": metric, "operator": operator, "target": target}
    if labels:
        body["labels"] = list(labels)
    return body


def policy_document(
    name: str = "p",
    *,
    namespace: str = "default",
    **strategies: Sequence[Mapping[str, Any]] | tuple[str, Sequence[Mapping[str, Any]]],
) -> dict[str, Any]:
    """A TASPolicy document; each strategy is a rule list or `(logicalOperator, rules)`."""
    body: dict[str, Any] = {}
    for strategy, value in strategies.items():
        if isinstance(value, tuple):
            operator, rules = value
            body[strategy] = {"logicalOperator": operator, "rules": list(rules)}
        else:
            body[strategy] = {"rules": list(value)}
    return {
        "apiVersion": "telemetry.intel.com/v1alpha1",
        "kind": "TASPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"strategies": body},
    }


def make_policy(
    name: str = "p",
    *,
    namespace: str = "default",
    **strategies: Sequence[Mapping[str, Any]] | tuple[str, Sequence[Mapping[str, Any]]],
) -> TASPolicy:
    return parse_policy(policy_document(name, namespace=namespace, **strategies))


def metrics(values: Mapping[str, Mapping[str, float]]) -> MetricColumns:
    return {
        MetricName(metric): {NodeName(node): float(v) for node, v in column.items()}
        for metric, column in values.items()
    }


def nodes(*names: str) -> list[NodeName]:
    return [NodeName(n) for n in names]


class ManualClock:
    """A `tas.clock.Clock` that moves only when told to (`advance`, `epoch = ...`, `sleep`)."""

    def __init__(self, start: datetime | float = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)) -> None:
        self.current = start if isinstance(start, datetime) else datetime.fromtimestamp(start, UTC)
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        self.slept.append(seconds)
        self.advance(seconds)
        return stop.is_set()

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)

    @property
    def epoch(self) -> float:
        """Unix seconds: the time of metric samples and textfiles."""
        return self.current.timestamp()

    @epoch.setter
    def epoch(self, seconds: float) -> None:
        self.current = datetime.fromtimestamp(seconds, UTC)
