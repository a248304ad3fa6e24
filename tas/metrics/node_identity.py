"""Which node a Prometheus series is about, with or without relabeling.

A scrape config that relabels `instance` to the node's name (kube-prometheus, this project's
`deploy/metrics-pipeline`) names the node in the series itself. kube-prometheus-stack's
node-exporter ServiceMonitor does not: `instance` is the pod's `IP:9100` (node-exporter runs
on the host network, so the node's own InternalIP), and no label names a node. So a series is
mapped in this order:

1. **An explicit node label**: the configured `node_label` (when it is not `instance`), then
   `node`, then `kubernetes_node`. Its value (any `:port` removed) is the node's name.
2. **`instance`** (`host:port`, `[IPv6]:port` or a bare host), its host compared with:
   a. the nodes' names: a host that is a node's name is that node;
   b. the nodes' `status.addresses` of type InternalIP, ExternalIP and Hostname (IPv6 in any
      spelling): a host that is an address of exactly one node is that node. One that several
      nodes share names none of them (a warning, once per address); an IP address of no node
      names none (a debug line with the instance). Both are counted in
      `tas_metric_series_dropped_total{reason}`.
   c. without the nodes' addresses at hand (a component that does not watch Nodes), or for a
      host name no node has, the host itself, as before: the name a relabelled scrape gives.

The addresses come from an `AddressBook`, the Node cache a component already keeps
(`tas.adapters.cluster.kubernetes.KubernetesCluster.node_addresses`); this module does no I/O. Each
answer is read against one snapshot of the book (`NodeIdentity.resolver`), and the index over
it is rebuilt only when the book hands out a new snapshot, i.e. when an address changed.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter

from tas.types import NodeName

log = logging.getLogger(__name__)

#: The address types that identify a node to a scrape target. (InternalDNS and ExternalDNS
#: name a node to DNS, not to Prometheus's Kubernetes discovery, which uses the IP.)
IDENTIFYING_TYPES = frozenset({"InternalIP", "ExternalIP", "Hostname"})
#: The label a scrape target's address is in.
INSTANCE = "instance"
#: Labels that name a node outright, after the configured one.
NODE_LABELS = ("node", "kubernetes_node")
#: Instances told at debug level: enough to name the unknown ones without growing forever.
_TOLD_LIMIT = 1024


class DropReason(StrEnum):
    """Why a series was left out of a metric's column (`tas_metric_series_dropped_total`)."""

    #: No node label and no `instance`.
    NO_NODE_LABEL = "no_node_label"
    #: `instance` is an IP address no node has.
    UNKNOWN_ADDRESS = "unknown_address"
    #: `instance` is an address several nodes share.
    AMBIGUOUS_ADDRESS = "ambiguous_address"


class AddressBook(Protocol):
    """Each node's `status.addresses` as (type, address) pairs, node names included even when
    a node has none; the same object until an address changes."""

    def node_addresses(self) -> Mapping[NodeName, Collection[tuple[str, str]]]: ...


def explicit_labels(node_label: str = INSTANCE) -> tuple[str, ...]:
    """The labels that name a node outright, the configured one first (`instance` is not one:
    it names a scrape target)."""
    configured = (node_label,) if node_label != INSTANCE else ()
    return (*configured, *(label for label in NODE_LABELS if label != node_label))


def strip_port(address: str) -> str:
    """`node-a:9100` -> `node-a`, `[::1]:9100` -> `::1`; anything else as it is."""
    if address.startswith("["):
        host, bracket, _ = address[1:].partition("]")
        return host if bracket else address
    host, colon, port = address.rpartition(":")
    return host if colon and port.isdigit() and ":" not in host else address


def _canonical(host: str) -> str:
    """An IP address in one spelling (`::1` for `0:0::1`, no zone), a name in lower case."""
    try:
        return str(ipaddress.ip_address(host.partition("%")[0]))
    except ValueError:
        return host.lower()


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class AddressIndex:
    """One snapshot of the nodes' names and identifying addresses, as lookups."""

    names: frozenset[str]
    #: Canonical address -> the nodes that have it (more than one: ambiguous).
    owners: Mapping[str, tuple[NodeName, ...]]

    @classmethod
    def of(cls, book: Mapping[NodeName, Collection[tuple[str, str]]]) -> AddressIndex:
        owners: dict[str, list[NodeName]] = {}
        for node, addresses in book.items():
            for kind, address in addresses:
                if kind not in IDENTIFYING_TYPES or not address:
                    continue
                holders = owners.setdefault(_canonical(address), [])
                if node not in holders:
                    holders.append(node)
        return cls(frozenset(book), {a: tuple(sorted(n)) for a, n in owners.items()})


class NodeIdentity:
    """See the module docstring: the node of each series, and what could not be mapped."""

    def __init__(
        self,
        *,
        node_label: str = INSTANCE,
        addresses: AddressBook | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        """`node_label` the configured label (`--metrics-config` `prometheus.node_label`);
        `addresses` the nodes' addresses, None when the component does not watch Nodes;
        `registry` where `tas_metric_series_dropped_total` is exported."""
        self._explicit = explicit_labels(node_label)
        self._book = addresses
        self._seen: object = None
        self._index = AddressIndex(frozenset(), {})
        self._warned: set[str] = set()
        self._told: set[str] = set()
        self._dropped = Counter(
            "tas_metric_series_dropped_total",
            "Prometheus series left out of a metric because they name no node, by reason "
            "(no_node_label, unknown_address, ambiguous_address).",
            ["reason"],
            registry=registry,
        )

    def resolver(self) -> NodeResolver:
        """What maps the series of one answer, against the addresses as they are now."""
        if self._book is None:
            return NodeResolver(self._explicit, None, self._drop)
        book = self._book.node_addresses()
        if book is not self._seen:
            self._seen = book
            self._index = AddressIndex.of(book)
            self._told.clear()  # an address may have moved: tell again what stays unknown
        return NodeResolver(self._explicit, self._index, self._drop)

    def node_of(self, labels: Mapping[str, str]) -> NodeName | None:
        """One series' node (a fresh `resolver()` each call: for a single series)."""
        return self.resolver().node_of(labels)

    def _drop(self, reason: DropReason, instance: str, owners: tuple[NodeName, ...]) -> None:
        self._dropped.labels(reason.value).inc()
        if reason is DropReason.AMBIGUOUS_ADDRESS:
            host = strip_port(instance)
            if host not in self._warned:
                self._warned.add(host)
                log.warning(
                    "Series with instance %s are left out: nodes %s share the address %s, "
                    "so it names none of them. Label the series with `node`, or relabel "
                    "`instance` to the node name",
                    instance,
                    ", ".join(owners),
                    host,
                )
        elif reason is DropReason.UNKNOWN_ADDRESS and instance not in self._told:
            if len(self._told) < _TOLD_LIMIT:
                self._told.add(instance)
            log.debug(
                "Series with instance %s are left out: no node has the address %s",
                instance,
                strip_port(instance),
            )


class NodeResolver:
    """The node of each series of one answer (`NodeIdentity.resolver`)."""

    def __init__(
        self,
        explicit: tuple[str, ...],
        index: AddressIndex | None,
        drop: Callable[[DropReason, str, tuple[NodeName, ...]], None],
    ) -> None:
        self._explicit = explicit
        self._index = index
        self._drop = drop

    def node_of(self, labels: Mapping[str, str], *, quiet: bool = False) -> NodeName | None:
        """The series' node, None when it names none (counted and told unless `quiet`: for
        a second series of the same target, such as a value's sample time)."""
        drop = self._drop if not quiet else _ignore
        for label in self._explicit:
            value = labels.get(label)
            if value:
                return NodeName(strip_port(value))
        instance = labels.get(INSTANCE)
        if not instance:
            drop(DropReason.NO_NODE_LABEL, "", ())
            return None
        host = strip_port(instance)
        index = self._index
        if index is None or host in index.names:
            return NodeName(host)
        # Addresses are indexed as spelled canonically, which most hosts already are: the
        # parse only for those that are not (a series per node and metric every sync period).
        owners = index.owners.get(host) or index.owners.get(_canonical(host), ())
        if len(owners) == 1:
            return owners[0]
        if owners:
            drop(DropReason.AMBIGUOUS_ADDRESS, instance, owners)
            return None
        if _is_ip(host):
            drop(DropReason.UNKNOWN_ADDRESS, instance, ())
            return None
        return NodeName(host)


def _ignore(reason: DropReason, instance: str, owners: tuple[NodeName, ...]) -> None:
    pass
