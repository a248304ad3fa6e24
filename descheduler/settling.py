"""What the plugins that rebalance (LoadAware, MakeRoomForPending) share: the evictions
remembered across cycles (`MoveHistory`), which each is given when it is built
(`descheduler.assemble`), not through the per-cycle handle; and the rule that a replacement of
a moved pod is left to settle for an hour before it may move again (`settle_left`), so one
replica's slot moves at most once an hour whatever the plugin that moves it."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from tas.cluster.model import Pod
from tas.types import NodeName

#: How long a replacement of a moved pod is left to settle (`settle_left`): an hour, the
#: horizon over which one pod's evictions are counted.
SETTLE_SECONDS = 3600.0


def settle_left(pod: Pod, moving_since: datetime | None, now: datetime) -> float:
    """Seconds the pod is still left to settle, 0 when it is free to move.

    Only a replacement of a moved pod settles: one created since its owner began losing pods to
    evictions (`moving_since`, `MoveHistory.owner_moving_since`), for `SETTLE_SECONDS` after it
    was placed. A pod just moved is not moved again for rebalancing within the hour, however
    much a move would pay: the scheduler may have put it back on a hot node (its policy scores
    on something else), and a move that does not hold must not be repeated every cooldown. One
    replica's slot takes at most one rebalancing move an hour, plus the evictions its policies'
    deschedule rules demand. A workload just deployed, or scaled, onto a hot node is rebalanced
    like any other."""
    placed = pod.creation_timestamp
    if moving_since is None or placed is None or placed < moving_since:
        return 0.0
    return max(0.0, SETTLE_SECONDS - (now - placed).total_seconds())


class MoveHistory(Protocol):
    """The evictions remembered across cycles (`descheduler.evictor.CooldownMoves`, over the
    descheduler's owner cooldown), as a rebalancing plugin reads them."""

    def owner_moving_since(self, pod: Pod) -> datetime | None:
        """When the pod's owner began losing pods to evictions (none of its evictions an hour
        apart since): a pod of it created since is (likely) a replacement of a moved pod, which
        a rebalancing plugin lets settle (`settle_left`)."""
        ...

    def recently_evacuated(self, now: datetime, within: float) -> Collection[NodeName]:
        """Nodes an evacuating plugin emptied lately, as of `now`, that a rebalancing plugin
        does not fill again: within the cooldown, or within `within` seconds while they violate
        still or flap (a flapping health metric would empty them again)."""
        ...


class NoMoves:
    """No evictions remembered (a plugin built on its own, outside a descheduler)."""

    def owner_moving_since(self, pod: Pod) -> datetime | None:
        return None

    def recently_evacuated(self, now: datetime, within: float) -> Collection[NodeName]:
        return ()
