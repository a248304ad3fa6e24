"""The classes a utilization plugin puts the nodes in, as a cycle reports them.

Shared vocabulary, not any plugin's algorithm: LoadAware, LowNodeUtilization and
HighNodeUtilization hand a `Classification` to the cycle (`PluginContext.classified`), which
reports it, exports it as metrics and soft-taints by it. How nodes are classified is
`descheduler.classify`'s.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from tas.types import NodeName

#: One node's usage: signal name -> 0..100.
Usage = Mapping[str, float]


class Category(enum.StrEnum):
    UNDERUTILIZED = "underutilized"
    APPROPRIATE = "appropriately utilized"
    OVERUTILIZED = "overutilized"


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The bounds in force for this classification (the same for every node)."""

    low: Mapping[str, float]
    high: Mapping[str, float]
    average: Mapping[str, float] | None = None


@dataclass(frozen=True)
class Classification:
    thresholds: Thresholds
    usages: Mapping[NodeName, Usage]
    categories: Mapping[NodeName, Category]
    #: Least used first.
    underutilized: tuple[NodeName, ...]
    #: Most used first: the order evictions are tried in.
    overutilized: tuple[NodeName, ...]
    capacity_to_move: Mapping[str, float] = field(default_factory=dict)
    #: Why nothing is to be done, in the upstream descheduler's words; None when there is work.
    nothing_to_do: str | None = None
    #: Nodes without a fresh value for every signal: never classified, never acted on.
    unknown: tuple[NodeName, ...] = ()
    #: Hysteresis (`hold_overutilized`): an overutilized node keeps its class this long after
    #: it was last seen overutilized, unless its usage falls to the low threshold (0: none).
    hold_seconds: float = 0.0
    #: Nodes overutilized only because they are held (their usage is not above high now).
    held: tuple[NodeName, ...] = ()
