"""DefaultEvictor: which pods may be evicted at all, with every upstream argument, plus the
namespaces every plugin of the profile is limited to (an extension).

It serves `filter` and `preEvictionFilter`; nothing runs it. Its arguments, resolved through the
cluster once per cycle, become the profile's `ProtectionRules`: the `EvictorFilter`
(`descheduler.framework`) every eviction of the profile passes.

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
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.framework import ExtensionPoint, Plugin, PluginName
from tas.cluster.interface import Cluster, ClusterError
from tas.cluster.model import (
    LabelSelector,
    NamespaceInfo,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
)
from tas.vocabulary import EVICT_ANNOTATION, PREFER_NO_EVICTION_ANNOTATION

log = logging.getLogger(__name__)

NAME = PluginName("DefaultEvictor")

#: system-cluster-critical is 2,000,000,000 and system-node-critical 2,000,001,000: pods at or
#: above the first are system-critical, and no priority threshold may be above it (upstream's
#: rule).
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
#: Every API server has these two classes; a lookup that finds neither falls back to them.
BUILTIN_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
_LOCAL_STORAGE = ("emptyDir", "hostPath")


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


def parse_args(r: FieldReader) -> EvictorArgs:
    protections, classes = _parse_protections(r)
    policy_raw = r.choice("noEvictionPolicy", tuple(p.value for p in NoEvictionPolicy))
    min_age = r.duration("minPodAge")
    return EvictorArgs(
        protections=protections,
        protected_storage_classes=classes,
        node_fit=r.boolean("nodeFit", True),
        node_selector=r.node_selector(),
        label_selector=r.label_selector("labelSelector"),
        namespace_label_selector=r.label_selector("namespaceLabelSelector"),
        priority_threshold=_parse_priority_threshold(r),
        min_replicas=r.integer("minReplicas", 0) or 0,
        min_pod_age_seconds=min_age,
        no_eviction_policy=NoEvictionPolicy(policy_raw) if policy_raw else None,
        namespaces=r.namespaces(),
    )


@dataclass(frozen=True)
class ProtectionRules:
    """Which pods may be evicted at all: the DefaultEvictor's arguments with what they name
    resolved through the cluster (`resolve`). The `descheduler.framework.EvictorFilter` of a
    profile (upstream's DefaultEvictor Filter and PreEvictionFilter)."""

    args: EvictorArgs = field(default_factory=EvictorArgs)
    #: The resolved priority threshold (pods at or above it are protected).
    threshold: int | None = None
    #: Why the configuration cannot be applied this cycle (an unknown priority class, say):
    #: then every pod is protected, as upstream refuses to build the profile.
    broken: str | None = None
    #: Namespaces whose labels match `namespaceLabelSelector` (None: no such selector).
    labelled_namespaces: frozenset[str] | None = None
    #: Storage class of every claim, where `protectedStorageClasses` needs it.
    claim_classes: Mapping[tuple[str, str], str] | None = None
    #: Pods per owner uid, where `minReplicas` needs it.
    owner_replicas: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls, args: EvictorArgs, *, cluster: Cluster, pods: Sequence[Pod]
    ) -> ProtectionRules:
        """Read what the arguments name (one API call each, only when configured)."""
        threshold, broken = _resolve_threshold(args, cluster, pods)
        namespaces: frozenset[str] | None = None
        selector = args.namespace_label_selector
        if selector is not None:
            try:
                found: Sequence[NamespaceInfo] = cluster.list_namespaces()
            except ClusterError as error:
                broken = broken or f"cannot list namespaces for namespaceLabelSelector: {error}"
                found = ()
            namespaces = frozenset(n.name for n in found if selector.matches(n.labels))
        classes: dict[tuple[str, str], str] | None = None
        if args.protects(Protection.PODS_WITH_PVC) and args.protected_storage_classes:
            try:
                claims: Sequence[PersistentVolumeClaim] = cluster.list_persistent_volume_claims()
            except ClusterError as error:
                broken = broken or f"cannot list persistentvolumeclaims: {error}"
                claims = ()
            classes = {(c.namespace, c.name): c.storage_class_name for c in claims}
        replicas: dict[str, int] = {}
        if args.min_replicas > 1:
            for pod in pods:
                for owner in pod.owners:
                    replicas[owner.uid] = replicas.get(owner.uid, 0) + 1
        if broken:
            log.error("DefaultEvictor: %s; nothing is evicted by this profile", broken)
        return cls(
            args,
            threshold=threshold,
            broken=broken,
            labelled_namespaces=namespaces,
            claim_classes=classes,
            owner_replicas=replicas,
        )

    def protection(
        self,
        pod: Pod,
        *,
        pdbs: Sequence[PodDisruptionBudget] = (),
        now: datetime | None = None,
    ) -> str | None:
        """Why the pod must not be evicted (upstream's Filter), or None when it may be."""
        args = self.args
        if not args.namespaces.allows(pod.namespace):
            return f"namespace {pod.namespace} is not in scope"
        if self.broken is not None:
            return self.broken
        if EVICT_ANNOTATION in pod.annotations:
            return None  # the user asked for it; the PDB still holds (the Eviction API checks it)
        if (
            args.no_eviction_policy is NoEvictionPolicy.MANDATORY
            and PREFER_NO_EVICTION_ANNOTATION in pod.annotations
        ):
            return f"annotation {PREFER_NO_EVICTION_ANNOTATION} with noEvictionPolicy Mandatory"
        if pod.is_mirror:
            return "mirror pod"
        if pod.is_static:
            return "static pod"
        if pod.deletion_timestamp is not None:
            return "pod is already being deleted"
        return self._constraint(pod, pdbs=pdbs, now=now)

    def _constraint(
        self, pod: Pod, *, pdbs: Sequence[PodDisruptionBudget], now: datetime | None
    ) -> str | None:
        args = self.args
        if args.protects(Protection.SYSTEM_CRITICAL_PODS) and pod.has_priority:
            if pod.priority >= SYSTEM_CRITICAL_PRIORITY:
                return f"system-critical priority {pod.priority}"
            if self.threshold is not None and pod.priority >= self.threshold:
                return f"priority {pod.priority} is at or above the threshold {self.threshold}"
        owners = pod.owners
        if not owners and (args.protects(Protection.FAILED_BARE_PODS) or pod.phase != "Failed"):
            return "pod has no owner to recreate it"
        if args.protects(Protection.PODS_WITH_LOCAL_STORAGE) and any(
            v.kind in _LOCAL_STORAGE for v in pod.volumes
        ):
            return "pod uses local storage (emptyDir or hostPath)"
        if args.protects(Protection.DAEMONSET_PODS) and any(o.kind == "DaemonSet" for o in owners):
            return "DaemonSet pod"
        if args.protects(Protection.PODS_WITH_PVC):
            why = self._pvc_protection(pod)
            if why is not None:
                return why
        if args.protects(Protection.PODS_WITHOUT_PDB) and not any(
            b.namespace == pod.namespace and b.selector.matches(pod.labels) for b in pdbs
        ):
            return "pod has no PodDisruptionBudget"
        if args.protects(Protection.PODS_WITH_RESOURCE_CLAIMS) and pod.has_resource_claims:
            return "pod has ResourceClaims"
        if args.label_selector is not None and not args.label_selector.matches(pod.labels):
            return "pod labels do not match the DefaultEvictor's labelSelector"
        if args.min_replicas > 1 and len(owners) == 1:
            replicas = self.owner_replicas.get(owners[0].uid, 0)
            if replicas < args.min_replicas:
                return f"owner has {replicas} replicas, fewer than minReplicas {args.min_replicas}"
        if args.min_pod_age_seconds is not None:
            started = pod.start_time
            if started is None or now is None:
                return "pod has not started"
            if (now - started).total_seconds() < args.min_pod_age_seconds:
                return f"pod is younger than minPodAge {args.min_pod_age_seconds:g}s"
        return None

    def _pvc_protection(self, pod: Pod) -> str | None:
        claims = [v for v in pod.volumes if v.kind == "persistentVolumeClaim"]
        if not claims:
            return None
        if self.claim_classes is None:
            return "pod uses a PersistentVolumeClaim"
        protected = self.args.protected_storage_classes
        for claim in claims:
            storage_class = self.claim_classes.get((pod.namespace, claim.claim_name))
            if not storage_class:
                return f"storage class of claim {claim.claim_name} is unknown"
            if storage_class in protected:
                return f"pod uses the protected storage class {storage_class}"
        return None

    @property
    def node_fit(self) -> bool:
        return self.args.node_fit

    @property
    def node_selector(self) -> LabelSelector | None:
        return self.args.node_selector

    def namespace_selected(self, pod: Pod) -> bool:
        """The pod's namespace matches `namespaceLabelSelector` (or there is none)."""
        return self.labelled_namespaces is None or pod.namespace in self.labelled_namespaces


def _resolve_threshold(
    args: EvictorArgs, cluster: Cluster, pods: Iterable[Pod]
) -> tuple[int | None, str | None]:
    wanted = args.priority_threshold
    if wanted is None or not args.protects(Protection.SYSTEM_CRITICAL_PODS):
        return None, None
    if wanted.value is not None:
        return wanted.value, None
    name = wanted.name or ""
    try:
        value = cluster.get_priority_class_value(name)
    except ClusterError as error:
        log.warning("Cannot read PriorityClass %s: %s", name, error)
        value = None
    if value is None:
        value = BUILTIN_PRIORITY_CLASSES.get(name)
    if value is None:
        # Pods of the class carry its value: good enough while the API cannot answer.
        value = next((p.priority for p in pods if p.priority_class_name == name), None)
    if value is None:
        return None, f"priority threshold class {name!r} is unknown"
    if value > SYSTEM_CRITICAL_PRIORITY:
        return None, f"priority threshold {value} ({name}) is above {SYSTEM_CRITICAL_PRIORITY}"
    return value, None


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.FILTER, ExtensionPoint.PRE_EVICTION_FILTER}),
    args_type=EvictorArgs,
    parse_args=parse_args,
)
