"""The soft tainter: `<prefix>/overutilized=true:PreferNoSchedule` on overutilized nodes.

While a node is hot, new pods prefer other nodes, so the pods LoadAware evicts do not come
straight back. The taint goes once the node has not been overutilized for the classification's
hold time (`TaintHolds`), even where the class lets go sooner (at the low threshold): a load
that swings across the thresholds every cycle must not flip every new pod's preference with
it. A node without fresh usage loses its taint at once (a taint needs fresh evidence), and
every such taint goes when the feature is switched off. Taints are written only in Automatic
mode; Predictive mode logs what it would write.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime

from tas.cluster.interface import Cluster, ClusterError
from tas.cluster.model import Node, Taint, TaintEffect
from tas.types import NodeName

log = logging.getLogger(__name__)


def soft_taint(key: str) -> Taint:
    return Taint(key=key, value="true", effect=TaintEffect.PREFER_NO_SCHEDULE)


@dataclass
class TaintChanges:
    added: list[NodeName] = field(default_factory=list)
    removed: list[NodeName] = field(default_factory=list)


class TaintHolds:
    """When each tainted node was last overutilized, per taint key: its taint is held until
    it has not been for the hold time, whatever its class says meanwhile (the class lets go
    at the low threshold; the taint does not), while the node has fresh usage."""

    def __init__(self) -> None:
        self._last_over: dict[str, dict[NodeName, datetime]] = {}

    def tainted(
        self,
        key: str,
        overutilized: Collection[NodeName],
        *,
        held: Collection[NodeName],
        classified: Collection[NodeName],
        hold_seconds: float,
        now: datetime,
    ) -> set[NodeName]:
        """The nodes to carry the taint now: the overutilized ones (`held`: those only the
        class's hysteresis keeps so, not seen over now), and those seen overutilized less than
        `hold_seconds` ago that still have fresh usage (are `classified`)."""
        last = self._last_over.get(key, {})
        seen = set(overutilized) - set(held)
        kept = {
            node
            for node, at in last.items()
            if node not in seen and node in classified and (now - at).total_seconds() < hold_seconds
        }
        self._last_over[key] = {**{n: last[n] for n in kept}, **dict.fromkeys(seen, now)}
        return set(overutilized) | kept


def wanted_taints(node: Node, *, key: str, tainted: bool) -> tuple[Taint, ...] | None:
    """The node's taints with the soft taint set or cleared; None when nothing changes."""
    others = tuple(t for t in node.taints if t.key != key)
    wanted = (*others, soft_taint(key)) if tainted else others
    return None if set(wanted) == set(node.taints) else wanted


def sync_soft_taints(
    cluster: Cluster,
    nodes: Iterable[Node],
    *,
    key: str,
    overutilized: Collection[NodeName],
    dry_run: bool,
) -> TaintChanges:
    """Make exactly the `overutilized` nodes among `nodes` carry the soft taint."""
    changes = TaintChanges()
    hot = frozenset(overutilized)  # asked once per node: a tuple would make it quadratic
    for node in nodes:
        tainted = node.name in hot
        wanted = wanted_taints(node, key=key, tainted=tainted)
        if wanted is None:
            continue
        verb = "taint" if tainted else "remove the taint from"
        if dry_run:
            log.info("Would %s node %s (%s, PreferNoSchedule)", verb, node.name, key)
        else:
            try:
                cluster.set_node_taints(node.name, wanted)
            except ClusterError as error:
                # The next cycle reads the node again and retries.
                log.warning("Could not %s node %s: %s", verb, node.name, error)
                continue
            log.info("Soft taint %s on node %s", "set" if tainted else "removed", node.name)
        (changes.added if tainted else changes.removed).append(node.name)
    return changes
