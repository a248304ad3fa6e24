"""The `status` of a TASPolicy, and when it is worth writing.

`policy_status` is pure: compliance, a message for humans, and the violating nodes per strategy
(sorted, capped so a large cluster cannot bloat the object; the count is always exact).
`StatusTracker` decides when to write: when the status changed apart from its timestamp, or
when the last write is `refresh_cycles` cycles old, so a steady state writes almost nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from heapq import nsmallest
from typing import Any

from policy_controller.desired import PolicyEvaluation
from tas.policies.model import StrategyName
from tas.types import NodeName, PolicyKey

COMPLIANT = "Compliant"
VIOLATING = "Violating"
#: At most this many node names per strategy in `status.violatingNodes`.
MAX_LISTED_NODES = 100
_MESSAGE_NODES = 5

_REPORTED = (StrategyName.DESCHEDULE, StrategyName.DONTSCHEDULE)


def _phrase(strategy: str, first: Sequence[NodeName], count: int) -> str:
    shown = ", ".join(first[:_MESSAGE_NODES])
    more = f" and {count - _MESSAGE_NODES} more" if count > _MESSAGE_NODES else ""
    return f"{strategy} on {shown}{more}"


def policy_status(evaluation: PolicyEvaluation) -> dict[str, Any]:
    """The status without its timestamp (see `stamped`)."""
    found = {
        StrategyName.DESCHEDULE: evaluation.deschedule,
        StrategyName.DONTSCHEDULE: evaluation.dontschedule,
    }
    present = [s for s in _REPORTED if s in evaluation.policy.strategies]
    # The first names in order, without sorting them all: a cycle does this for every policy.
    first = {s: nsmallest(MAX_LISTED_NODES, found[s]) for s in present}
    listed = {s.value: [str(node) for node in first[s]] for s in present}
    violating = set().union(*(found[s].keys() for s in present))
    if violating:
        parts = [_phrase(s.value, first[s], len(found[s])) for s in present if found[s]]
        count = len(violating)
        message = f"{count} node{'s' if count != 1 else ''} violating: " + "; ".join(parts)
    elif present:
        message = "No node violates " + " or ".join(s.value for s in present) + " rules"
    else:
        message = "No deschedule or dontschedule strategy to violate"
    if evaluation.held is not None:
        message = f"Circuit breaker open, deschedule held: {evaluation.held}. {message}"
    return {
        "compliance": VIOLATING if violating else COMPLIANT,
        "message": message,
        "violatingNodes": listed,
        "violatingNodeCount": len(violating),
    }


def stamped(status: Mapping[str, Any], evaluated_at: datetime) -> dict[str, Any]:
    """The status with `lastEvaluation` (RFC 3339, UTC, seconds)."""
    when = evaluated_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {**status, "lastEvaluation": when}


class StatusTracker:
    """Remembers what was last written per policy, to write only changes (and a refresh)."""

    def __init__(self, *, refresh_cycles: int = 30) -> None:
        if refresh_cycles < 0:
            raise ValueError("refresh_cycles must be >= 0 (0: never refresh unchanged status)")
        self._refresh_cycles = refresh_cycles
        self._written: dict[PolicyKey, tuple[Mapping[str, Any], int]] = {}

    def due(self, key: PolicyKey, status: Mapping[str, Any], cycle: int) -> bool:
        last = self._written.get(key)
        if last is None or last[0] != status:
            return True
        return self._refresh_cycles > 0 and cycle - last[1] >= self._refresh_cycles

    def written(self, key: PolicyKey, status: Mapping[str, Any], cycle: int) -> None:
        self._written[key] = (status, cycle)

    def forget_except(self, keys: Iterable[PolicyKey]) -> None:
        """Drop policies that no longer exist (a re-created policy gets a fresh write)."""
        keep = set(keys)
        for key in [k for k in self._written if k not in keep]:
            del self._written[key]
