"""DefaultEvictor: which pods may be evicted at all (upstream's arguments), plus the namespaces
every plugin of the profile is limited to.

It serves `filter` and `preEvictionFilter`; nothing runs it. Its arguments become the profile's
evictor rules (`descheduler.evictor.ProtectionRules`), which every eviction passes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import ExtensionPoint, Plugin, PluginName

NAME = PluginName("DefaultEvictor")


@dataclass(frozen=True, slots=True)
class PriorityThreshold:
    value: int | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class EvictorArgs:
    """The DefaultEvictor arguments (upstream names), plus namespaces for every strategy."""

    evict_system_critical_pods: bool = False
    evict_failed_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_daemonset_pods: bool = False
    ignore_pvc_pods: bool = False
    ignore_pods_without_pdb: bool = False
    node_fit: bool = True
    priority_threshold: PriorityThreshold | None = None
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def _parse_priority_threshold(r: FieldReader) -> PriorityThreshold | None:
    raw = r.get("priorityThreshold")
    if raw is None:
        return None
    t = FieldReader(raw, r.at("priorityThreshold"), r.problems)
    value = t.integer("value", None, minimum=-(2**31))
    name = t.get("name")
    if name is not None and not isinstance(name, str):
        t.problem(t.at("name"), f"must be a priority class name, got {name!r}")
        name = None
    if value is not None and name:
        t.problem(t.path, "give value or name, not both")
    elif value is None and not name:
        t.problem(t.path, "give a value or a name")
    t.finish()
    return PriorityThreshold(value=value, name=name or None)


def parse_args(r: FieldReader) -> EvictorArgs:
    threshold = _parse_priority_threshold(r)
    return EvictorArgs(
        evict_system_critical_pods=r.boolean("evictSystemCriticalPods", False),
        evict_failed_bare_pods=r.boolean("evictFailedBarePods", False),
        evict_local_storage_pods=r.boolean("evictLocalStoragePods", False),
        evict_daemonset_pods=r.boolean("evictDaemonSetPods", False),
        ignore_pvc_pods=r.boolean("ignorePvcPods", False),
        ignore_pods_without_pdb=r.boolean("ignorePodsWithoutPDB", False),
        node_fit=r.boolean("nodeFit", True),
        priority_threshold=threshold,
        namespaces=r.namespaces(),
    )


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.FILTER, ExtensionPoint.PRE_EVICTION_FILTER}),
    args_type=EvictorArgs,
    parse_args=parse_args,
)
