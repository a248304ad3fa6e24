"""Builders for policies and metric views, so tests state only what matters to them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
