"""The evictor: every strategy's only way to touch a pod, with every safety rail on the path.

In the order a pod meets them:

1. `ProtectionRules` (the upstream DefaultEvictor's filter): pods that must never be evicted;
2. the pre-eviction filter: nodeFit (`descheduler.nodefit`: another Ready node must accept the
   pod, TAS rules included) and the namespace label selector;
3. the `CircuitBreaker`: too many nodes violating at once means a broken metric pipeline;
4. the `EvictionBudget`: per-node, per-namespace and total limits per cycle;
5. the per-owner `Cooldown` and "one pod per owner per cycle": a workload evicted from is left
   alone for a while. It guards the telemetry-driven plugins (and, where a profile opts them
   in, the classic ones: `ownerCooldown: AllPlugins`); the classic plugins otherwise behave
   exactly as upstream's;
6. the Eviction API, so PodDisruptionBudgets hold (a refusal is counted, logged, and skipped),
   or in Predictive mode a "would evict" line that is logged and counted like a real one.

Every eviction made in Automatic mode is announced with a Kubernetes Event on the pod, as
upstream does (Normal, reason = the plugin's name); with `evictionFailureEventNotification`
refused and failed evictions, and evictions stopped by a limit, get a Warning `EvictionFailed`.

The `descheduler.alpha.kubernetes.io/evict` annotation overrides the protection rules (as
upstream), except for namespaces out of the profile's scope; every other rail still applies to
such a pod, and the Eviction API still honours its PodDisruptionBudget.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from descheduler.args import NamespaceFilter, PodSelection
from descheduler.nodefit import fitting_nodes
from descheduler.plugins.default_evictor import EvictorArgs, NoEvictionPolicy, Protection
from descheduler.self_metrics import DeschedulerMetrics, Result
from descheduler.state import CycleState, pod_key
from tas.cluster.interface import Cluster, ClusterError, EvictionOutcome
from tas.cluster.model import (
    NamespaceInfo,
    ObjectReference,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    QoSClass,
)
from tas.types import Namespace, NodeName
from tas.vocabulary import EVICT_ANNOTATION

log = logging.getLogger(__name__)

#: system-cluster-critical is 2,000,000,000 and system-node-critical 2,000,001,000.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
#: Every API server has these two classes; a lookup that finds neither falls back to them.
BUILTIN_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
PREFER_NO_EVICTION_ANNOTATION = "descheduler.alpha.kubernetes.io/prefer-no-eviction"
#: Who the Events say evicted the pod.
EVENT_SOURCE = "telemetry-aware-scheduling descheduler"
_LOCAL_STORAGE = ("emptyDir", "hostPath")
_QOS_ORDER = {QoSClass.BEST_EFFORT: 0, QoSClass.BURSTABLE: 1, QoSClass.GUARANTEED: 2}


# ---------------------------------------------------------------------------- protection


@dataclass(frozen=True)
class ProtectionRules:
    """Which pods may be evicted at all: the DefaultEvictor's arguments with what they name
    resolved through the cluster (`resolve`)."""

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


def sort_candidates(pods: Iterable[Pod]) -> list[Pod]:
    """Eviction order (upstream's): lower priority first, pods without a priority before all;
    then BestEffort, Burstable, Guaranteed; then pods without the prefer-no-eviction
    annotation."""
    return sorted(
        pods,
        key=lambda p: (
            p.has_priority,
            p.priority,
            _QOS_ORDER[p.qos_class],
            PREFER_NO_EVICTION_ANNOTATION in p.annotations,
        ),
    )


# ------------------------------------------------------------------------- rails per cycle


@dataclass(frozen=True, slots=True)
class Limits:
    """The policy's `maxNoOfPodsToEvictPerNode`, `...PerNamespace` and `...Total`."""

    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


class Exhausted(enum.StrEnum):
    TOTAL = "total"
    NODE = "node"
    NAMESPACE = "namespace"


class EvictionBudget:
    """Per-node, per-namespace and total eviction limits for one cycle (dry runs count too)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.by_node: dict[NodeName, int] = {}
        self.by_namespace: dict[Namespace, int] = {}

    def which_exhausted(self, *, node: NodeName | None, namespace: Namespace) -> Exhausted | None:
        limits = self.limits
        if limits.total is not None and self.total >= limits.total:
            return Exhausted.TOTAL
        if (
            node is not None
            and limits.per_node is not None
            and self.by_node.get(node, 0) >= limits.per_node
        ):
            return Exhausted.NODE
        if limits.per_namespace is not None and (
            self.by_namespace.get(namespace, 0) >= limits.per_namespace
        ):
            return Exhausted.NAMESPACE
        return None

    def exhausted(self, *, node: NodeName | None, namespace: Namespace) -> str | None:
        which = self.which_exhausted(node=node, namespace=namespace)
        limits = self.limits
        if which is Exhausted.TOTAL:
            return f"maxNoOfPodsToEvictTotal {limits.total} reached"
        if which is Exhausted.NODE:
            return f"maxNoOfPodsToEvictPerNode {limits.per_node} reached on {node}"
        if which is Exhausted.NAMESPACE:
            return f"maxNoOfPodsToEvictPerNamespace {limits.per_namespace} reached in {namespace}"
        return None

    def record(self, *, node: NodeName | None, namespace: Namespace) -> None:
        self.total += 1
        if node is not None:
            self.by_node[node] = self.by_node.get(node, 0) + 1
        self.by_namespace[namespace] = self.by_namespace.get(namespace, 0) + 1

    def node_exhausted(self, node: NodeName | None) -> bool:
        limit = self.limits.per_node
        return node is not None and limit is not None and self.by_node.get(node, 0) >= limit

    @property
    def total_exhausted(self) -> bool:
        return self.limits.total is not None and self.total >= self.limits.total


OwnerKey = tuple[str, str, str]


def owner_key(pod: Pod) -> OwnerKey:
    owner = pod.controller
    if owner is None:
        return (pod.namespace, "Pod", pod.name)
    return (pod.namespace, owner.kind, owner.name)


class Cooldown:
    """Owners evicted from recently are left alone, so a bad metric cannot ping-pong pods.

    Two memories: every eviction (what rebalancing checks: it must not move a pod that just
    moved, for whatever reason) and evacuations only (what an evacuating plugin checks: a
    rebalancing move must not delay leaving an unhealthy node, while a workload evacuated
    in an earlier cycle is not evacuated again within the cooldown, so a flapping health
    metric cannot bounce it between nodes).
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last: dict[OwnerKey, datetime] = {}
        self._last_evacuation: dict[OwnerKey, datetime] = {}

    def blocked(self, key: OwnerKey, now: datetime) -> bool:
        last = self._last.get(key)
        return last is not None and (now - last).total_seconds() < self.seconds

    def evacuation_blocked(self, key: OwnerKey, now: datetime) -> bool:
        """Evacuated in an earlier cycle (not this one: `now` is the cycle's) and cooling."""
        last = self._last_evacuation.get(key)
        return last is not None and last < now and (now - last).total_seconds() < self.seconds

    def record(self, key: OwnerKey, now: datetime, *, evacuation: bool = False) -> None:
        if self.seconds > 0:
            self._last[key] = now
            if evacuation:
                self._last_evacuation[key] = now
        # Forget owners whose cooldown is over, so the maps stay as small as the recent past.
        self._last = self._recent(self._last, now)
        self._last_evacuation = self._recent(self._last_evacuation, now)

    def _recent(self, last: dict[OwnerKey, datetime], now: datetime) -> dict[OwnerKey, datetime]:
        return {k: t for k, t in last.items() if (now - t).total_seconds() < self.seconds}


class CircuitBreaker:
    """Opens when more than `max_share` of in-scope nodes violate at once; closes when not."""

    def __init__(self, max_share: float) -> None:
        self.max_share = max_share
        self.reason: str | None = None

    @property
    def open(self) -> bool:
        return self.reason is not None

    def update(self, violating: Mapping[NodeName, str], *, in_scope: int) -> bool:
        share = len(violating) / in_scope if in_scope else 0.0
        if share > self.max_share:
            names = ", ".join(sorted(violating))
            self.reason = (
                f"{len(violating)} of {in_scope} nodes ({share:.0%}) violate at once, more than "
                f"the {self.max_share:.0%} allowed: treating it as a broken metric pipeline and "
                f"evicting nothing (violating: {names})"
            )
            log.error("Circuit breaker open: %s", self.reason)
            for node in sorted(violating):
                log.error("Circuit breaker: node %s: %s", node, violating[node])
        elif self.reason is not None:
            log.warning(
                "Circuit breaker closed: %d of %d nodes violate; evictions resume",
                len(violating),
                in_scope,
            )
            self.reason = None
        return self.open


# ------------------------------------------------------------------------------- evicting


@dataclass(frozen=True, slots=True)
class EvictionDecision:
    """One eviction made (or that would be made) in a cycle, or one that was refused/failed."""

    namespace: Namespace
    name: str
    node: NodeName | None
    strategy: str
    reason: str
    result: str  # descheduler.self_metrics.Result


@dataclass
class CycleRails:
    """The rails shared by every profile and strategy of one cycle."""

    budget: EvictionBudget
    cooldown: Cooldown
    breaker: CircuitBreaker
    dry_run: bool
    decisions: list[EvictionDecision] = field(default_factory=list)
    #: Owners evicted from in this cycle (dry runs included): one pod per owner per cycle.
    owners: set[OwnerKey] = field(default_factory=set)
    #: Warning Events for refused, failed and limit-stopped evictions (upstream's
    #: `evictionFailureEventNotification`).
    failure_events: bool = False
    grace_period_seconds: int | None = None


class Evictor:
    """One profile's evictor for one cycle (`for_plugin` gives each plugin its view)."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        state: CycleState,
        rules: ProtectionRules,
        rails: CycleRails,
        metrics: DeschedulerMetrics | None = None,
        profile: str = "",
        guard_owners: bool = True,
        evacuating: bool = False,
    ) -> None:
        self.cluster = cluster
        self.state = state
        self.rules = rules
        self.rails = rails
        self.metrics = metrics
        self.profile = profile
        #: The per-owner cooldown and one-pod-per-owner-per-cycle apply to this plugin.
        self.guard_owners = guard_owners
        #: This plugin empties nodes (`Plugin.evacuates`): see `Cooldown`.
        self.evacuating = evacuating

    def for_plugin(self, *, guard_owners: bool, evacuating: bool = False) -> Evictor:
        """The same evictor (state, rails, rules), with the owner guard on or off."""
        view = Evictor.__new__(Evictor)
        view.__dict__.update(self.__dict__)
        view.guard_owners = guard_owners
        view.evacuating = evacuating
        return view

    @property
    def node_fit(self) -> bool:
        return self.rules.args.node_fit

    def protection(self, pod: Pod) -> str | None:
        return self.rules.protection(pod, pdbs=self.state.pdbs, now=self.state.now)

    def evictable(self, pod: Pod, *, namespaces: NamespaceFilter | None = None) -> bool:
        """Not protected (upstream's Filter), not evicted already, in the plugin's namespaces."""
        if pod_key(pod) in self.state.evicted:
            return False
        if namespaces is not None and not namespaces.allows(pod.namespace):
            return False
        return self.protection(pod) is None

    def selected(self, pod: Pod, selection: PodSelection) -> bool:
        """In the plugin's namespaces and label selector, and not evicted already."""
        if pod_key(pod) in self.state.evicted:
            return False
        return selection.matches(pod.namespace, pod.labels)

    def pre_eviction_ok(self, pod: Pod) -> bool:
        """Upstream's PreEvictionFilter: nodeFit (when on) and the namespace label selector."""
        return self.rules.namespace_selected(pod) and self.fits_elsewhere(pod)

    def fitting_nodes(
        self,
        pod: Pod,
        *,
        among: Collection[NodeName] | None = None,
        include_current: bool = False,
    ) -> tuple[NodeName, ...]:
        selector = self.rules.args.node_selector
        candidates = [
            n
            for n in self.state.ready_nodes
            if (among is None or n.name in among)
            and (selector is None or selector.matches(n.labels))
        ]
        return fitting_nodes(
            pod,
            candidates,
            pods_by_node=self.state.pods_by_node(),
            policy=self.state.policy_of(pod),
            metrics=self.state.metrics,
            include_current=include_current,
        )

    def fits_elsewhere(self, pod: Pod, *, among: Collection[NodeName] | None = None) -> bool:
        """nodeFit: another Ready node accepts the pod (always True with nodeFit off)."""
        if not self.node_fit:
            return True
        return bool(self.fitting_nodes(pod, among=among))

    @property
    def stopped(self) -> str | None:
        """Why nothing more can be evicted this cycle, if so."""
        if self.rails.breaker.open:
            return "the circuit breaker is open"
        if self.rails.budget.total_exhausted:
            return "the total eviction limit is reached"
        return None

    def node_exhausted(self, node: NodeName | None) -> bool:
        """The per-node limit is reached for `node`: upstream moves on to the next node."""
        return self.rails.budget.node_exhausted(node)

    def evict(
        self,
        pod: Pod,
        *,
        strategy: str,
        reason: str,
        among: Collection[NodeName] | None = None,
    ) -> bool:
        """Evict (or in Predictive mode, report) the pod if every rail allows; True if done."""
        why_not = self._blocked(pod, among=among)
        if why_not is not None:
            log.debug("Not evicting %s/%s (%s): %s", pod.namespace, pod.name, strategy, why_not)
            return False
        full_reason = f"{strategy}: {reason}"
        if self.rails.dry_run:
            log.info(
                'Evicted pod in dry run mode pod="%s/%s" node="%s" strategy="%s" profile="%s" '
                'reason="%s"',
                pod.namespace,
                pod.name,
                pod.node_name,
                strategy,
                self.profile,
                reason,
            )
            self._done(pod, strategy, full_reason, Result.DRY_RUN)
            return True
        try:
            result = self.cluster.evict_pod(
                pod.namespace,
                pod.name,
                reason=full_reason,
                grace_period_seconds=self.rails.grace_period_seconds,
            )
        except ClusterError as error:
            log.warning("Eviction of %s/%s failed: %s", pod.namespace, pod.name, error)
            self._record(pod, strategy, f"{full_reason} ({error})", Result.FAILED)
            self._failure_event(pod, str(error))
            return False
        if result.outcome is EvictionOutcome.EVICTED:
            log.info(
                'Evicted pod pod="%s/%s" node="%s" strategy="%s" profile="%s" reason="%s"',
                pod.namespace,
                pod.name,
                pod.node_name,
                strategy,
                self.profile,
                reason,
            )
            self.rails.cooldown.record(owner_key(pod), self.state.now, evacuation=self.evacuating)
            self._done(pod, strategy, full_reason, Result.EVICTED)
            self._event(
                pod,
                reason=strategy,
                message=f"pod eviction from {pod.node_name} node by {EVENT_SOURCE}: {reason}",
            )
            return True
        if result.outcome is EvictionOutcome.REFUSED:
            log.info(
                "Eviction of %s/%s refused (PodDisruptionBudget): %s",
                pod.namespace,
                pod.name,
                result.message,
            )
            self._record(pod, strategy, f"{full_reason} ({result.message})", Result.REFUSED)
            self._failure_event(pod, result.message)
            return False
        if result.outcome is EvictionOutcome.NOT_FOUND:
            log.info("Pod %s/%s is already gone", pod.namespace, pod.name)
            self.state.evicted.add(pod_key(pod))
            return False
        log.warning("Eviction of %s/%s failed: %s", pod.namespace, pod.name, result.message)
        self._record(pod, strategy, f"{full_reason} ({result.message})", Result.FAILED)
        self._failure_event(pod, result.message)
        return False

    def _blocked(self, pod: Pod, *, among: Collection[NodeName] | None) -> str | None:
        if pod_key(pod) in self.state.evicted:
            return "already evicted in this cycle"
        protected = self.protection(pod)
        if protected is not None:
            return protected
        if not self.rules.namespace_selected(pod):
            return "namespace does not match the namespaceLabelSelector"
        if self.rails.breaker.open:
            return f"circuit breaker open: {self.rails.breaker.reason}"
        rails = self.rails
        exhausted = rails.budget.exhausted(node=pod.node_name, namespace=pod.namespace)
        if exhausted is not None:
            if not rails.dry_run:
                self._failure_event(pod, exhausted)
            return exhausted
        owner = owner_key(pod)
        if self.guard_owners and rails.cooldown.seconds > 0:
            if self.evacuating:
                cooling = rails.cooldown.evacuation_blocked(owner, self.state.now)
            else:
                cooling = owner in rails.owners or rails.cooldown.blocked(owner, self.state.now)
            if cooling:
                return f"owner {owner[1]}/{owner[2]} is cooling down"
        if not self.fits_elsewhere(pod, among=among):
            return "no other Ready node would accept it (nodeFit)"
        return None

    def _done(self, pod: Pod, strategy: str, reason: str, result: str) -> None:
        self.rails.budget.record(node=pod.node_name, namespace=pod.namespace)
        self.rails.owners.add(owner_key(pod))
        self.state.evicted.add(pod_key(pod))
        self._record(pod, strategy, reason, result)

    def _record(self, pod: Pod, strategy: str, reason: str, result: str) -> None:
        self.rails.decisions.append(
            EvictionDecision(pod.namespace, pod.name, pod.node_name, strategy, reason, result)
        )
        if self.metrics is not None:
            self.metrics.count_eviction(
                strategy=strategy,
                node=pod.node_name or "",
                namespace=pod.namespace,
                result=result,
            )

    def _failure_event(self, pod: Pod, why: str) -> None:
        if self.rails.failure_events:
            self._event(
                pod,
                reason="EvictionFailed",
                message=f"pod eviction from {pod.node_name} node by {EVENT_SOURCE} failed: {why}",
                warning=True,
            )

    def _event(self, pod: Pod, *, reason: str, message: str, warning: bool = False) -> None:
        involved = ObjectReference(kind="Pod", name=pod.name, namespace=pod.namespace, uid=pod.uid)
        try:
            self.cluster.emit_event(involved, reason=reason, message=message, warning=warning)
        except ClusterError as error:
            # An Event is a courtesy: the eviction stands without it.
            log.warning("Could not record an Event for %s/%s: %s", pod.namespace, pod.name, error)
