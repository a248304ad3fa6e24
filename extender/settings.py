"""How one extender instance behaves; built once by `tas extender` (never at import)."""

from __future__ import annotations

from dataclasses import dataclass

from tas.breaker import DEFAULT_MAX_SHARE
from tas.rules import ScoreMode

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class ExtenderSettings:
    score_mode: ScoreMode = ScoreMode.PROPORTIONAL
    #: TAS puts violating nodes in `FailedNodes` (preemption may be tried); by default they go
    #: to `FailedAndUnresolvableNodes`, since evicting pods does not change a node's telemetry.
    tas_compat_failed_nodes: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    decision_log_size: int = 200
    #: Fail open when dontschedule would remove every candidate and more than this share of
    #: the nodes with values violate (`tas.breaker`); 1.0 never fails open.
    max_violating_node_share: float = DEFAULT_MAX_SHARE
    #: Policies whose dontschedule rules also see recent placements' estimates, as `name`
    #: (any namespace) or `namespace/name`; scheduleonmetric always sees them when estimates
    #: are on (`tas extender --filter-on-estimates`).
    filter_estimate_policies: frozenset[str] = frozenset()

    def filters_on_estimates(self, namespace: str, policy: str | None) -> bool:
        chosen = self.filter_estimate_policies
        return policy is not None and (policy in chosen or f"{namespace}/{policy}" in chosen)
