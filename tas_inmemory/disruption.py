"""The Eviction API's PodDisruptionBudget verdict, as a pure decision.

The API server refuses an eviction (429) when the one budget selecting a running pod allows no
disruption, fails it (500) when several budgets select the pod, and otherwise lets it through,
taking one disruption from the budget. Pods that disrupt nothing (pending, finished or already
terminating) skip the budgets. The in-memory cluster and the Kubernetes API emulator of the
tests both ask this module, so the two cannot drift apart.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

PDB_REFUSAL = "Cannot evict pod as it would violate the pod's disruption budget."
SEVERAL_BUDGETS = (
    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not "
    "support."
)
#: Phases in which a pod may be serving, so its budget guards it.
GUARDED_PHASES = ("Running", "Unknown")


class Verdict(enum.Enum):
    EVICT = "evict"
    REFUSE = "refuse"  # HTTP 429
    FAIL = "fail"  # HTTP 500


@dataclass(frozen=True, slots=True)
class Budget:
    """A PodDisruptionBudget that selects the pod, as the verdict needs it."""

    name: str
    disruptions_allowed: int


@dataclass(frozen=True, slots=True)
class EvictionVerdict:
    verdict: Verdict
    message: str = ""
    #: The budget to take one disruption from when the eviction goes ahead.
    charged: Budget | None = None


def judge_eviction(*, phase: str, terminating: bool, budgets: Sequence[Budget]) -> EvictionVerdict:
    """The API's answer to evicting a pod in `phase` selected by `budgets`."""
    if phase not in GUARDED_PHASES or terminating or not budgets:
        return EvictionVerdict(Verdict.EVICT)
    if len(budgets) > 1:
        return EvictionVerdict(Verdict.FAIL, SEVERAL_BUDGETS)
    budget = budgets[0]
    if budget.disruptions_allowed <= 0:
        return EvictionVerdict(Verdict.REFUSE, PDB_REFUSAL)
    return EvictionVerdict(Verdict.EVICT, charged=budget)
