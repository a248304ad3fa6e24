"""Names used across every part, as distinct types so they cannot be mixed up."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, NewType

NodeName = NewType("NodeName", str)
MetricName = NewType("MetricName", str)
PolicyName = NewType("PolicyName", str)
Namespace = NewType("Namespace", str)

#: A pod, by its namespace and name: what every per-pod table is keyed by. Plain strings, so a
#: key built from a metric's labels is one too (a `Namespace` is a `str`, so a pod's own is).
PodKey = tuple[str, str]

#: One metric's values: node -> value. Only fresh, finite values are ever in a column; a node
#: that is absent has no usable value (missing or stale), which never violates a rule.
MetricColumn = Mapping[NodeName, float]

#: The metric view the rule engine reads: metric name (as a policy names it) -> column.
MetricColumns = Mapping[MetricName, MetricColumn]


class PolicyKey(NamedTuple):
    """A TASPolicy is found by the pod's own namespace and the policy name."""

    namespace: Namespace
    name: PolicyName

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"
