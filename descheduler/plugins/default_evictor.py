"""DefaultEvictor: which pods may be evicted at all, with every upstream argument, plus the
namespaces every plugin of the profile is limited to (an extension).

It serves `filter` and `preEvictionFilter`; nothing runs it. Its arguments become the profile's
evictor rules (`descheduler.evictor.ProtectionRules`), which every eviction passes.

Protections, as upstream names them. On by default: `PodsWithLocalStorage`, `DaemonSetPods`,
`SystemCriticalPods` (which carries the priority threshold), `FailedBarePods`; off by default:
`PodsWithPVC` (optionally only for some storage classes), `PodsWithoutPDB`,
`PodsWithResourceClaims`. They are set either with the deprecated booleans
(`evictLocalStoragePods`, `ignorePvcPods`, ...) or with `podProtections` (`defaultDisabled`,
`extraEnabled`, `config`), never both.

One default differs from upstream on purpose: `nodeFit` is on (the spec's safety rail); write
`nodeFit: false` for upstream's behaviour.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from descheduler.args import (
    FieldReader,
    NamespaceFilter,
    SelectorSyntaxError,
    parse_selector_string,
)
from descheduler.framework import ExtensionPoint, Plugin, PluginName
from tas.cluster.model import LabelSelector

NAME = PluginName("DefaultEvictor")

#: system-cluster-critical: no priority threshold may be above it (upstream's rule).
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000


class Protection(enum.StrEnum):
    PODS_WITH_LOCAL_STORAGE = "PodsWithLocalStorage"
    DAEMONSET_PODS = "DaemonSetPods"
    SYSTEM_CRITICAL_PODS = "SystemCriticalPods"
    FAILED_BARE_PODS = "FailedBarePods"
    PODS_WITH_PVC = "PodsWithPVC"
    PODS_WITHOUT_PDB = "PodsWithoutPDB"
    PODS_WITH_RESOURCE_CLAIMS = "PodsWithResourceClaims"


DEFAULT_PROTECTIONS = (
    Protection.PODS_WITH_LOCAL_STORAGE,
    Protection.SYSTEM_CRITICAL_PODS,
    Protection.FAILED_BARE_PODS,
    Protection.DAEMONSET_PODS,
)
EXTRA_PROTECTIONS = (
    Protection.PODS_WITH_PVC,
    Protection.PODS_WITHOUT_PDB,
    Protection.PODS_WITH_RESOURCE_CLAIMS,
)


class NoEvictionPolicy(enum.StrEnum):
    """What the `descheduler.alpha.kubernetes.io/prefer-no-eviction` annotation means."""

    PREFERRED = "Preferred"  # evict such pods last
    MANDATORY = "Mandatory"  # never evict them


@dataclass(frozen=True, slots=True)
class PriorityThreshold:
    value: int | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class EvictorArgs:
    """The DefaultEvictor arguments, resolved into the protections in force."""

    protections: frozenset[Protection] = frozenset(DEFAULT_PROTECTIONS)
    #: With PodsWithPVC: only claims of these storage classes protect (empty: every claim).
    protected_storage_classes: frozenset[str] = frozenset()
    node_fit: bool = True
    node_selector: LabelSelector | None = None
    label_selector: LabelSelector | None = None
    namespace_label_selector: LabelSelector | None = None
    priority_threshold: PriorityThreshold | None = None
    min_replicas: int = 0
    min_pod_age_seconds: float | None = None
    no_eviction_policy: NoEvictionPolicy | None = None
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)

    def protects(self, protection: Protection) -> bool:
        return protection in self.protections


def _parse_priority_threshold(r: FieldReader) -> PriorityThreshold | None:
    raw = r.get("priorityThreshold")
    if raw is None:
        return None
    t = FieldReader(raw, r.at("priorityThreshold"), r.problems)
    value = t.integer("value", None, minimum=-(2**31), maximum=SYSTEM_CRITICAL_PRIORITY)
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


_DEPRECATED = {
    # field: (protection, True when the field being true removes a default protection)
    "evictLocalStoragePods": (Protection.PODS_WITH_LOCAL_STORAGE, True),
    "evictDaemonSetPods": (Protection.DAEMONSET_PODS, True),
    "evictSystemCriticalPods": (Protection.SYSTEM_CRITICAL_PODS, True),
    "evictFailedBarePods": (Protection.FAILED_BARE_PODS, True),
    "ignorePvcPods": (Protection.PODS_WITH_PVC, False),
    "ignorePodsWithoutPDB": (Protection.PODS_WITHOUT_PDB, False),
}


def _protection_list(
    r: FieldReader, key: str, allowed: tuple[Protection, ...]
) -> tuple[Protection, ...]:
    names = r.strings(key)
    found: list[Protection] = []
    for index, name in enumerate(names):
        if name not in {p.value for p in allowed}:
            known = ", ".join(p.value for p in allowed)
            r.problem(f"{r.at(key)}[{index}]", f"unknown protection {name!r}; known: {known}")
        elif Protection(name) in found:
            r.problem(f"{r.at(key)}[{index}]", f"{name} is listed twice")
        else:
            found.append(Protection(name))
    return tuple(found)


def _parse_protections(r: FieldReader) -> tuple[frozenset[Protection], frozenset[str]]:
    deprecated = {key: r.boolean(key, False) for key in _DEPRECATED}
    p = r.child("podProtections")
    disabled = _protection_list(p, "defaultDisabled", DEFAULT_PROTECTIONS)
    extra = _protection_list(p, "extraEnabled", EXTRA_PROTECTIONS)
    classes: list[str] = []
    config = p.child("config")
    pvc = config.child("PodsWithPVC")
    raw_classes = pvc.get("protectedStorageClasses") or []
    if not isinstance(raw_classes, list):
        pvc.problem(pvc.at("protectedStorageClasses"), "must be a list of {name: ...}")
        raw_classes = []
    for index, item in enumerate(raw_classes):
        c = FieldReader(item, f"{pvc.at('protectedStorageClasses')}[{index}]", r.problems)
        name = c.string("name")
        c.finish()
        if not name:
            c.problem(c.at("name"), "a storage class name is required")
        else:
            classes.append(name)
    pvc.finish()
    config.finish()
    p.finish()
    if classes and Protection.PODS_WITH_PVC not in extra:
        p.problem(p.at("config.PodsWithPVC"), "only used with extraEnabled: [PodsWithPVC]")
    if disabled or extra:
        if any(deprecated.values()):
            used = ", ".join(k for k, v in deprecated.items() if v)
            r.problem(
                r.at("podProtections"),
                f"cannot be combined with the deprecated fields ({used}); use one or the other",
            )
        return frozenset(DEFAULT_PROTECTIONS) - set(disabled) | set(extra), frozenset(classes)
    protections = set(DEFAULT_PROTECTIONS)
    for key, (protection, removes_default) in _DEPRECATED.items():
        if deprecated[key]:
            if removes_default:
                protections.discard(protection)
            else:
                protections.add(protection)
    return frozenset(protections), frozenset(classes)


def _parse_node_selector(r: FieldReader) -> LabelSelector | None:
    text = r.string("nodeSelector")
    if not text:
        return None
    try:
        return parse_selector_string(text)
    except SelectorSyntaxError as error:
        r.problem(r.at("nodeSelector"), str(error))
        return None


def parse_args(r: FieldReader) -> EvictorArgs:
    protections, classes = _parse_protections(r)
    policy_raw = r.choice("noEvictionPolicy", tuple(p.value for p in NoEvictionPolicy))
    min_age = r.duration("minPodAge")
    return EvictorArgs(
        protections=protections,
        protected_storage_classes=classes,
        node_fit=r.boolean("nodeFit", True),
        node_selector=_parse_node_selector(r),
        label_selector=r.label_selector("labelSelector"),
        namespace_label_selector=r.label_selector("namespaceLabelSelector"),
        priority_threshold=_parse_priority_threshold(r),
        min_replicas=r.integer("minReplicas", 0) or 0,
        min_pod_age_seconds=min_age,
        no_eviction_policy=NoEvictionPolicy(policy_raw) if policy_raw else None,
        namespaces=r.namespaces(),
    )


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.FILTER, ExtensionPoint.PRE_EVICTION_FILTER}),
    args_type=EvictorArgs,
    parse_args=parse_args,
)
