"""The descheduler's taints: the soft tainter's `<prefix>/overutilized=true:PreferNoSchedule`
on overutilized nodes, and `telemetry.aware.scheduling/reserved=<pod uid>:NoSchedule` on a node
being cleared for a pending pod over more than one cycle (`MakeRoomForPending`).

While a node is hot, new pods prefer other nodes, so the pods LoadAware evicts do not come
straight back. The taint goes once the node has not been overutilized for the classification's
hold time (`TaintHolds`), even where the class lets go sooner (at the low threshold): a load
that swings across the thresholds every cycle must not flip every new pod's preference with
it. A node without fresh usage loses its taint at once (a taint needs fresh evidence), and
every such taint goes when the feature is switched off.

A reservation lasts only while the plugin that made it asks for it again each cycle: a node is
never left reserved by a plugin that stopped, restarted, lost its lease or was switched off
(the first cycle after removes it). Taints are written only in Automatic mode; Predictive mode
logs what it would write.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping, MutableMapping
from dataclasses import dataclass, field, replace
from datetime import datetime

from tas.cluster.interface import Cluster, ClusterError
from tas.cluster.model import Node, Taint, TaintEffect
from tas.types import NodeName
from tas.vocabulary import RESERVED_TAINT_KEY

log = logging.getLogger(__name__)


#: The taint that keeps new pods off a node being cleared for a pending pod.
RESERVED_KEY = RESERVED_TAINT_KEY


def soft_taint(key: str) -> Taint:
    return Taint(key=key, value="true", effect=TaintEffect.PREFER_NO_SCHEDULE)


def reservation(pod_uid: str) -> Taint:
    """Kept on a node while it is cleared for the pod: no new pod lands there meanwhile."""
    return Taint(key=RESERVED_KEY, value=pod_uid, effect=TaintEffect.NO_SCHEDULE)


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


def wanted_taints(node: Node, *, key: str, taint: Taint | None) -> tuple[Taint, ...] | None:
    """The node's taints with the one of `key` set to `taint` (None: cleared); None when
    nothing changes."""
    others = tuple(t for t in node.taints if t.key != key)
    wanted = (*others, taint) if taint is not None else others
    return None if set(wanted) == set(node.taints) else wanted


def sync_taint(
    cluster: Cluster,
    nodes: MutableMapping[NodeName, Node],
    *,
    key: str,
    taints: Mapping[NodeName, Taint],
    dry_run: bool,
) -> TaintChanges:
    """Make exactly the nodes of `taints` carry their taint of `key`, and no other node any.
    `nodes` is the cycle's view and is kept current with what is written, so a second key
    synced in the same cycle builds on the first instead of writing over it."""
    changes = TaintChanges()
    for name, node in list(nodes.items()):
        taint = taints.get(name)
        wanted = wanted_taints(node, key=key, taint=taint)
        if wanted is None:
            continue
        verb = "taint" if taint is not None else "remove the taint from"
        effect = taint.effect if taint is not None else "any effect"
        if dry_run:
            log.info("Would %s node %s (%s, %s)", verb, name, key, effect)
        else:
            try:
                cluster.set_node_taints(name, wanted)
            except ClusterError as error:
                # The next cycle reads the node again and retries.
                log.warning("Could not %s node %s: %s", verb, name, error)
                continue
            log.info("Taint %s %s on node %s", key, "set" if taint else "removed", name)
            nodes[name] = replace(node, taints=wanted)
        (changes.added if taint is not None else changes.removed).append(name)
    return changes


def sync_soft_taints(
    cluster: Cluster,
    nodes: MutableMapping[NodeName, Node],
    *,
    key: str,
    overutilized: Collection[NodeName],
    dry_run: bool,
) -> TaintChanges:
    """Make exactly the `overutilized` nodes among `nodes` carry the soft taint."""
    taint = soft_taint(key)
    return sync_taint(
        cluster,
        nodes,
        key=key,
        taints={n: taint for n in overutilized if n in nodes},
        dry_run=dry_run,
    )
