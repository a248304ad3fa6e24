"""Each node's `status.addresses`, kept beside the node cache for whoever must tell a node by
an address (`tas.metrics.node_identity`: a Prometheus series whose `instance` is `IP:port`).

The cached `Node` records carry no addresses: only this table reads them, as the node cache
converts each node (`recording`), and it forgets a node the cache reports deleted. Readers get
a `snapshot()`, an immutable mapping that stays the same object until an address changes, so
a reader can tell in one comparison whether to rebuild what it derived from it. Node updates
that leave the addresses alone (labels, conditions, heartbeats) do not change the snapshot.

Thread safety: the watch thread records and forgets; any thread reads snapshots.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import NamedTuple, TypeVar

from tas.cluster import api_types as api
from tas.types import NodeName

R = TypeVar("R")


class NodeAddress(NamedTuple):
    """One entry of a node's `status.addresses`: its type (`InternalIP`, `ExternalIP`,
    `Hostname`, `InternalDNS`, `ExternalDNS`) and the address."""

    type: str
    address: str


NodeAddresses = Mapping[NodeName, tuple[NodeAddress, ...]]

_EMPTY: NodeAddresses = MappingProxyType({})


class NodeAddressTable:
    """See the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._addresses: dict[NodeName, tuple[NodeAddress, ...]] = {}
        self._snapshot: NodeAddresses | None = _EMPTY

    def recording(self, convert: Callable[[api.Node], R]) -> Callable[[api.Node], R]:
        """`convert`, which also records the addresses of each node it converts."""

        def convert_and_record(node: api.Node) -> R:
            self.record(node)
            return convert(node)

        return convert_and_record

    def record(self, node: api.Node) -> None:
        """Keep `node`'s addresses (a node without a name is ignored)."""
        name = NodeName(node.metadata.name if node.metadata is not None else "")
        if not name:
            return
        status = node.status
        addresses = tuple(
            NodeAddress(entry.type, entry.address)
            for entry in (status.addresses if status is not None else None) or ()
            if entry.address
        )
        with self._lock:
            if self._addresses.get(name) == addresses:
                return
            self._addresses[name] = addresses
            self._snapshot = None

    def forget(self, name: str) -> None:
        """Drop a deleted node's addresses."""
        with self._lock:
            if self._addresses.pop(NodeName(name), None) is not None:
                self._snapshot = None

    def snapshot(self) -> NodeAddresses:
        """Every node recorded -> its addresses, in the node's order (none for a node without
        any); the same object until an address changes."""
        with self._lock:
            if self._snapshot is None:
                self._snapshot = MappingProxyType(dict(self._addresses))
            return self._snapshot
