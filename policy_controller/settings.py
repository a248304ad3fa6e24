"""How one policy controller behaves: what `tas controller`'s flags set and the closed loop's
contenders choose, built once (never at import) and given to the `Reconciler`."""

from __future__ import annotations

from dataclasses import dataclass

from tas.breaker import DEFAULT_MAX_SHARE


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    #: Rewrite a policy's unchanged status every this many cycles (0: only when it changes),
    #: so `kubectl get taspolicy` shows a recent evaluation time (`--status-refresh-cycles`).
    status_refresh_cycles: int = 30
    #: Label no node newly violating while more than this share of the nodes with values
    #: violate one of a policy's rules at once: a broken metric, not broken nodes
    #: (`tas.breaker`); 1.0 never holds back (`--max-violating-node-share`).
    max_violating_node_share: float = DEFAULT_MAX_SHARE
    #: At most this many Kubernetes Events a cycle: a mass change (a metric source coming back)
    #: must not become thousands of API calls.
    max_events_per_cycle: int = 100


#: `tas controller` with no flags.
DEFAULT_CONTROLLER = ControllerSettings()
