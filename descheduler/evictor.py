"""The evictor: every strategy's only way to touch a pod, with every safety rail on the path.

In the order a pod meets them:

1. `ProtectionRules` (the upstream DefaultEvictor rules): pods that must never be evicted;
2. nodeFit (`descheduler.nodefit`): another Ready node must accept the pod, TAS rules included;
3. the `CircuitBreaker`: too many nodes violating at once means a broken metric pipeline;
4. the per-owner `Cooldown`: a workload evicted from is left alone for a while;
5. the `EvictionBudget`: per-node, per-namespace and total limits per cycle;
6. the Eviction API, so PodDisruptionBudgets hold (a refusal is counted, logged, and skipped),
   or in Predictive mode a "would evict" line that is logged and counted like a real one.

The `descheduler.alpha.kubernetes.io/evict` annotation overrides the protection rules (as
upstream), except for pods already being deleted and namespaces out of scope; every other rail
still applies to such a pod, and the Eviction API still honours its PodDisruptionBudget.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from descheduler.args import NamespaceFilter
from descheduler.metrics import DeschedulerMetrics, Result
from descheduler.nodefit import fitting_nodes
from descheduler.plugins.default_evictor import EvictorArgs
from descheduler.state import CycleState, pod_key
from tas.cluster.interface import Cluster, ClusterError, EvictionOutcome
from tas.cluster.model import EVICT_ANNOTATION, Pod, PodDisruptionBudget, QoSClass
from tas.types import Namespace, NodeName

log = logging.getLogger(__name__)

#: system-cluster-critical is 2,000,000,000 and system-node-critical 2,000,001,000.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
BUILTIN_PRIORITY_CLASSES: Mapping[str, int] = {
    "system-cluster-critical": 2_000_000_000,
    "system-node-critical": 2_000_001_000,
}
_LOCAL_STORAGE = ("emptyDir", "hostPath")
_QOS_ORDER = {QoSClass.BEST_EFFORT: 0, QoSClass.BURSTABLE: 1, QoSClass.GUARANTEED: 2}


# ---------------------------------------------------------------------------- protection


@dataclass(frozen=True)
class ProtectionRules:
    """Which pods may be evicted at all. `threshold` is the resolved priority threshold."""

    args: EvictorArgs = field(default_factory=EvictorArgs)
    threshold: int | None = None
    #: A priority class name the threshold names but no one could resolve: protect everything.
    unresolved_class: str | None = None

    @classmethod
    def resolve(cls, args: EvictorArgs, pods: Iterable[Pod]) -> ProtectionRules:
        """Resolve a threshold given by class name from the classes pods carry."""
        wanted = args.priority_threshold
        if wanted is None:
            return cls(args)
        if wanted.value is not None:
            return cls(args, threshold=wanted.value)
        name = wanted.name or ""
        if name in BUILTIN_PRIORITY_CLASSES:
            return cls(args, threshold=BUILTIN_PRIORITY_CLASSES[name])
        for pod in pods:
            if pod.priority_class_name == name:
                return cls(args, threshold=pod.priority)
        return cls(args, unresolved_class=name)

    def protection(self, pod: Pod, *, pdbs: Sequence[PodDisruptionBudget] = ()) -> str | None:
        """Why the pod must not be evicted, or None when it may be."""
        args = self.args
        if pod.deletion_timestamp is not None:
            return "pod is already being deleted"
        if not args.namespaces.allows(pod.namespace):
            return f"namespace {pod.namespace} is not in scope"
        if EVICT_ANNOTATION in pod.annotations:
            return None  # the user asked for it; the PDB still holds (the Eviction API checks it)
        if pod.is_mirror:
            return "mirror pod"
        if pod.is_static:
            return "static pod"
        if not args.evict_system_critical_pods:
            if (
                pod.priority >= SYSTEM_CRITICAL_PRIORITY
                or pod.priority_class_name in BUILTIN_PRIORITY_CLASSES
            ):
                return f"system-critical priority {pod.priority}"
            if self.unresolved_class is not None:
                return f"priority threshold class {self.unresolved_class!r} is unknown"
            if self.threshold is not None and pod.priority >= self.threshold:
                return f"priority {pod.priority} is at or above the threshold {self.threshold}"
        owners = pod.owners
        if any(o.kind == "DaemonSet" for o in owners) and not args.evict_daemonset_pods:
            return "DaemonSet pod"
        if not owners and not (pod.phase == "Failed" and args.evict_failed_bare_pods):
            return "pod has no owner to recreate it"
        if not args.evict_local_storage_pods and any(v.kind in _LOCAL_STORAGE for v in pod.volumes):
            return "pod uses local storage (emptyDir or hostPath)"
        if args.ignore_pvc_pods and any(v.kind == "persistentVolumeClaim" for v in pod.volumes):
            return "pod uses a PersistentVolumeClaim"
        if args.ignore_pods_without_pdb and not any(
            b.namespace == pod.namespace and b.selector.matches(pod.labels) for b in pdbs
        ):
            return "pod has no PodDisruptionBudget"
        return None


def sort_candidates(pods: Iterable[Pod]) -> list[Pod]:
    """Eviction order: lower priority first; then BestEffort, Burstable, Guaranteed."""
    return sorted(pods, key=lambda p: (p.priority, _QOS_ORDER[p.qos_class]))


# ------------------------------------------------------------------------- rails per cycle


@dataclass(frozen=True, slots=True)
class Limits:
    """The policy's `maxNoOfPodsToEvictPerNode`, `...PerNamespace` and `...Total`."""

    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


class EvictionBudget:
    """Per-node, per-namespace and total eviction limits for one cycle (dry runs count too)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.total = 0
        self.by_node: dict[NodeName, int] = {}
        self.by_namespace: dict[Namespace, int] = {}

    def exhausted(self, *, node: NodeName | None, namespace: Namespace) -> str | None:
        limits = self.limits
        if limits.total is not None and self.total >= limits.total:
            return f"maxNoOfPodsToEvictTotal {limits.total} reached"
        if (
            node is not None
            and limits.per_node is not None
            and self.by_node.get(node, 0) >= limits.per_node
        ):
            return f"maxNoOfPodsToEvictPerNode {limits.per_node} reached on {node}"
        if limits.per_namespace is not None and (
            self.by_namespace.get(namespace, 0) >= limits.per_namespace
        ):
            return f"maxNoOfPodsToEvictPerNamespace {limits.per_namespace} reached in {namespace}"
        return None

    def record(self, *, node: NodeName | None, namespace: Namespace) -> None:
        self.total += 1
        if node is not None:
            self.by_node[node] = self.by_node.get(node, 0) + 1
        self.by_namespace[namespace] = self.by_namespace.get(namespace, 0) + 1

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
    """Owners evicted from recently are left alone, so a bad metric cannot ping-pong pods."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._last: dict[OwnerKey, datetime] = {}

    def blocked(self, key: OwnerKey, now: datetime) -> bool:
        last = self._last.get(key)
        return last is not None and (now - last).total_seconds() < self.seconds

    def record(self, key: OwnerKey, now: datetime) -> None:
        if self.seconds > 0:
            self._last[key] = now
        # Forget owners whose cooldown is over, so the map stays as small as the recent past.
        self._last = {
            k: t for k, t in self._last.items() if (now - t).total_seconds() < self.seconds
        }


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
    result: str  # descheduler.metrics.Result


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


class Evictor:
    """One profile's evictor for one cycle."""

    def __init__(
        self,
        *,
        cluster: Cluster,
        state: CycleState,
        rules: ProtectionRules,
        rails: CycleRails,
        metrics: DeschedulerMetrics | None = None,
        profile: str = "",
    ) -> None:
        self.cluster = cluster
        self.state = state
        self.rules = rules
        self.rails = rails
        self.metrics = metrics
        self.profile = profile

    @property
    def node_fit(self) -> bool:
        return self.rules.args.node_fit

    def protection(self, pod: Pod) -> str | None:
        return self.rules.protection(pod, pdbs=self.state.pdbs)

    def evictable(self, pod: Pod, *, namespaces: NamespaceFilter | None = None) -> bool:
        """Not protected, not evicted already, and in the strategy's namespaces."""
        if pod_key(pod) in self.state.evicted:
            return False
        if namespaces is not None and not namespaces.allows(pod.namespace):
            return False
        return self.protection(pod) is None

    def fitting_nodes(
        self, pod: Pod, *, among: Collection[NodeName] | None = None
    ) -> tuple[NodeName, ...]:
        candidates = [n for n in self.state.ready_nodes if among is None or n.name in among]
        return fitting_nodes(
            pod,
            candidates,
            pods_by_node=self.state.pods_by_node(),
            policy=self.state.policy_of(pod),
            metrics=self.state.metrics,
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
            result = self.cluster.evict_pod(pod.namespace, pod.name, reason=full_reason)
        except ClusterError as error:
            log.warning("Eviction of %s/%s failed: %s", pod.namespace, pod.name, error)
            self._record(pod, strategy, f"{full_reason} ({error})", Result.FAILED)
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
            self.rails.cooldown.record(owner_key(pod), self.state.now)
            self._done(pod, strategy, full_reason, Result.EVICTED)
            return True
        if result.outcome is EvictionOutcome.REFUSED:
            log.info(
                "Eviction of %s/%s refused (PodDisruptionBudget): %s",
                pod.namespace,
                pod.name,
                result.message,
            )
            self._record(pod, strategy, f"{full_reason} ({result.message})", Result.REFUSED)
            return False
        if result.outcome is EvictionOutcome.NOT_FOUND:
            log.info("Pod %s/%s is already gone", pod.namespace, pod.name)
            self.state.evicted.add(pod_key(pod))
            return False
        log.warning("Eviction of %s/%s failed: %s", pod.namespace, pod.name, result.message)
        self._record(pod, strategy, f"{full_reason} ({result.message})", Result.FAILED)
        return False

    def _blocked(self, pod: Pod, *, among: Collection[NodeName] | None) -> str | None:
        if pod_key(pod) in self.state.evicted:
            return "already evicted in this cycle"
        protected = self.protection(pod)
        if protected is not None:
            return protected
        if self.rails.breaker.open:
            return f"circuit breaker open: {self.rails.breaker.reason}"
        rails = self.rails
        exhausted = rails.budget.exhausted(node=pod.node_name, namespace=pod.namespace)
        if exhausted is not None:
            return exhausted
        owner = owner_key(pod)
        if rails.cooldown.seconds > 0 and (
            owner in rails.owners or rails.cooldown.blocked(owner, self.state.now)
        ):
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
