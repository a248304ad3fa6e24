"""A read-only view of a cluster: its reads, and no write.

A rule, not a copy of the interface: each of the `Cluster` interface's reads is the wrapped
cluster's (`READS`), each write is refused with a ClusterError naming why the cluster is
read-only (`REFUSED`), and Events are dropped (a dry cycle's circuit breaker records some). A
name in neither is no part of the interface; tests/tas/cluster/test_read_only.py checks that the
two cover the interface exactly, so a write added to it cannot pass through unnoticed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tas.cluster.interface import Cluster, ClusterError

#: The interface's reads, forwarded as they are.
READS = frozenset(
    {
        "list_nodes",
        "list_pods",
        "list_policy_documents",
        "list_pdbs",
        "get_priority_class_value",
        "list_namespaces",
        "list_persistent_volume_claims",
        "list_node_metrics",
        "list_pod_metrics",
    }
)

#: The interface's writes, each refused with what it would have done.
REFUSED: Mapping[str, str] = {
    "patch_node_labels": "label nodes",
    "patch_pod_labels": "label pods",
    "set_node_taints": "taint nodes",
    "update_policy_status": "write policy status",
    "evict_pod": "evict",
}

#: The writes that are dropped without a word: what a dry run may record in passing.
DROPPED = frozenset({"emit_event"})


class ReadOnlyCluster:
    """A `Cluster` whose reads are the wrapped one's and whose writes never happen: a dry
    run (`descheduler.cycle.Descheduler.dry_run`, what `tas explain` asks) must not label,
    taint, evict or record anything."""

    def __init__(self, cluster: Cluster, *, why: str = "read-only") -> None:
        self._cluster = cluster
        self._why = why

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # our own, before __init__ set it (a copy): never forwarded
            raise AttributeError(name)
        if name in READS:
            return getattr(self._cluster, name)
        if name in DROPPED:
            return _drop
        if name in REFUSED:
            return self._refuser(REFUSED[name])
        raise AttributeError(f"{name} is not part of the Cluster interface")

    def _refuser(self, what: str) -> Any:
        def refuse(*args: object, **kwargs: object) -> Any:
            raise ClusterError(f"{self._why} does not {what}")

        return refuse


def _drop(*args: object, **kwargs: object) -> None:
    return None
