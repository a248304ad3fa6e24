"""The evictor: every strategy's only way to touch a pod, with every safety rail on the path.

In the order a pod meets them:

1. the profile's `EvictorFilter` (`descheduler.framework`; the DefaultEvictor's rules,
   `descheduler.plugins.default_evictor.ProtectionRules`): pods that must never be evicted;
2. the pre-eviction filter: nodeFit (`descheduler.nodefit`: another Ready node must accept the
   pod, TAS rules included) and the namespace label selector;
3. the circuit breaker (`tas.breaker`, judged once per cycle by the cycle): too many nodes
   violating at once means a broken metric pipeline, and `CycleRails.halted` says so;
4. the `EvictionBudget`: per-node, per-namespace and total limits per cycle;
5. the per-owner `Cooldown` and "one pod per owner per cycle": a workload evicted from is left
   alone for a while. It guards the telemetry-driven plugins (and, where a profile opts them
   in, the classic ones: `ownerCooldown: AllPlugins`); the classic plugins otherwise behave
   exactly as upstream's. A plugin with a reason the rail cannot see asks for less of it
   (`descheduler.framework.EvictOptions`: `cooldown_share`, `several_per_cycle`);
6. the Eviction API, so PodDisruptionBudgets hold (a refusal is counted, logged, and skipped),
   or in Predictive mode a "would evict" line that is logged and counted like a real one.

Rails 1 to 5 are judged in one place (`PodEvictor._held`) for every question: an eviction, and
a `descheduler.framework.Trial`, which asks how far a plan of evictions would get in this
cycle without evicting, counting the pods asked about before it against the limits.

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
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TypeVar

from descheduler.framework import (
    DONE,
    Attempt,
    EvictOptions,
    EvictorFilter,
    Outcome,
    Result,
)
from descheduler.nodefit import NodeFitter
from descheduler.self_metrics import DeschedulerMetrics
from descheduler.state import CycleState, pod_key
from tas.cluster.interface import Cluster, ClusterError, EvictionOutcome
from tas.cluster.model import ObjectReference, Pod, WorkloadKey, workload_of
from tas.types import Namespace, NodeName

log = logging.getLogger(__name__)

#: Who the Events say evicted the pod.
EVENT_SOURCE = "telemetry-aware-scheduling descheduler"

_NAMESPACE_NOT_SELECTED = "namespace does not match the namespaceLabelSelector"
_NO_NODE_FITS = "no other Ready node would accept it (nodeFit)"


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

    def which_exhausted(
        self, *, node: NodeName | None, namespace: Namespace, besides: Sequence[Pod] = ()
    ) -> Exhausted | None:
        """Which limit is spent for one more eviction on `node` in `namespace`, with `besides`
        (pods a `Trial` asked about before) counted as evicted too; None when none is."""
        limits = self.limits
        if limits.total is not None and self.total + len(besides) >= limits.total:
            return Exhausted.TOTAL
        if (
            node is not None
            and limits.per_node is not None
            and self.by_node.get(node, 0) + sum(p.node_name == node for p in besides)
            >= limits.per_node
        ):
            return Exhausted.NODE
        if limits.per_namespace is not None and (
            self.by_namespace.get(namespace, 0) + sum(p.namespace == namespace for p in besides)
            >= limits.per_namespace
        ):
            return Exhausted.NAMESPACE
        return None

    def exhausted(
        self, *, node: NodeName | None, namespace: Namespace, besides: Sequence[Pod] = ()
    ) -> str | None:
        which = self.which_exhausted(node=node, namespace=namespace, besides=besides)
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


#: How long the nodes pods were evacuated from are remembered: an hour, the horizon over which
#: a pod's evictions are counted (a node evacuated again and again, a flapping health metric,
#: would otherwise be refilled by rebalancing and emptied again).
EVACUATED_NODE_MEMORY = 3600.0
#: How long an owner's last eviction is remembered: its pods created within this long of
#: another of its evictions are replacements (`Cooldown.moving_since`).
MOVE_MEMORY = 3600.0
_K = TypeVar("_K")


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
        self._last_evacuation: dict[WorkloadKey, datetime] = {}
        #: Nodes pods were evacuated from, and when last (rebalancing does not fill them again).
        self._evacuated_nodes: dict[NodeName, datetime] = {}
        #: When each node was seen to begin violating a deschedule rule (a cycle that saw it
        #: violate after one that did not), and the nodes the last cycle saw violating.
        self._violation_onsets: dict[NodeName, list[datetime]] = {}
        self._violating: frozenset[NodeName] = frozenset()
        #: Every owner's last eviction, kept for `MOVE_MEMORY` (longer than the cooldown), and
        #: the first of its evictions since then (pods created after it are replacements).
        self._moved: dict[WorkloadKey, datetime] = {}
        self._moving_since: dict[WorkloadKey, datetime] = {}

    def blocked(self, key: WorkloadKey, now: datetime, *, share: float = 1.0) -> bool:
        """Evicted from less than `share` of the cooldown ago (`share` < 1: an eviction that
        asked for less of the cooldown, `EvictOptions.cooldown_share`)."""
        last = self._moved.get(key)
        return last is not None and (now - last).total_seconds() < self.seconds * share

    def moving_since(self, key: WorkloadKey) -> datetime | None:
        """When the owner's remembered evictions began (none longer than `MOVE_MEMORY` apart):
        its pods created since are replacements of moved pods."""
        return self._moving_since.get(key)

    def evacuation_blocked(self, key: WorkloadKey, now: datetime) -> bool:
        """Evacuated in an earlier cycle (not this one: `now` is the cycle's) and cooling."""
        last = self._last_evacuation.get(key)
        return last is not None and last < now and (now - last).total_seconds() < self.seconds

    def record(
        self,
        key: WorkloadKey,
        now: datetime,
        *,
        evacuation: bool = False,
        node: NodeName | None = None,
    ) -> None:
        if self.seconds > 0:
            self._moved[key] = now
            self._moving_since.setdefault(key, now)
            if evacuation:
                self._last_evacuation[key] = now
                if node is not None:
                    self._evacuated_nodes[node] = now
        # Forget what is cool again, so the maps stay as small as the recent past.
        self._last_evacuation = self._recent(self._last_evacuation, now)
        self._moved = self._recent(self._moved, now, max(self.seconds, MOVE_MEMORY))
        self._moving_since = {k: t for k, t in self._moving_since.items() if k in self._moved}
        self._evacuated_nodes = self._recent(self._evacuated_nodes, now, self._node_memory)

    @property
    def _node_memory(self) -> float:
        return max(self.seconds, EVACUATED_NODE_MEMORY)

    def saw_violating(self, nodes: Collection[NodeName], now: datetime) -> None:
        """The nodes this cycle saw violating some policy's deschedule rules."""
        seen = frozenset(nodes)
        for node in seen - self._violating:
            self._violation_onsets.setdefault(node, []).append(now)
        self._violating = seen
        self._violation_onsets = {
            n: kept
            for n, onsets in self._violation_onsets.items()
            if (kept := [t for t in onsets if (now - t).total_seconds() < self._node_memory])
        }

    def evacuated_nodes(self, now: datetime, *, within: float) -> set[NodeName]:
        """Nodes to keep pods away from, among those pods were evacuated from within `within`
        seconds (at most `EVACUATED_NODE_MEMORY`, or the cooldown if longer, is remembered):
        evacuated within the cooldown, violating still, or flapping (seen to begin violating
        twice or more within `within`: its health came back and went again). One evacuation
        that the eviction limits and the owner cooldown pace over several cycles, on a node
        that violated throughout, is not flapping: once the node is healthy and past the
        cooldown it is a destination again (counting those cycles as flaps kept a recovered
        node empty for the hour while an overloaded fleet stalled)."""
        found: set[NodeName] = set()
        for node, last in self._evacuated_nodes.items():
            age = (now - last).total_seconds()
            if age < self.seconds or (age < within and self._unsettled(node, now, within)):
                found.add(node)
        return found

    def _unsettled(self, node: NodeName, now: datetime, within: float) -> bool:
        """Violating still, or seen to begin violating twice or more within `within`."""
        onsets = self._violation_onsets.get(node, [])
        flaps = sum((now - t).total_seconds() < within for t in onsets)
        return node in self._violating or flaps >= 2

    def _recent(
        self, last: dict[_K, datetime], now: datetime, seconds: float | None = None
    ) -> dict[_K, datetime]:
        keep = self.seconds if seconds is None else seconds
        return {k: t for k, t in last.items() if (now - t).total_seconds() < keep}


@dataclass(frozen=True, slots=True)
class CooldownMoves:
    """The evictions a `Cooldown` remembers (`descheduler.settling.MoveHistory`): what the
    rebalancing plugins are built with (`descheduler.assemble`), over the descheduler's own
    cooldown, so each reads the evictions of the cycle it runs in too."""

    cooldown: Cooldown

    def owner_moving_since(self, pod: Pod) -> datetime | None:
        return self.cooldown.moving_since(workload_of(pod))

    def recently_evacuated(self, now: datetime, within: float) -> set[NodeName]:
        """`Cooldown.evacuated_nodes`; this cycle's evacuations too; nothing when the owner
        cooldown is off."""
        return self.cooldown.evacuated_nodes(now, within=within)


# ------------------------------------------------------------------------------- evicting


@dataclass(frozen=True, slots=True)
class EvictionDecision:
    """One eviction made (or that would be made) in a cycle, or one that was refused/failed."""

    namespace: Namespace
    name: str
    node: NodeName | None
    strategy: str
    reason: str
    result: str  # descheduler.framework.Result


class Rail(enum.StrEnum):
    """Which rail held a pod back (`Blocked.rail`), in the order a pod meets them."""

    EVICTED_ALREADY = "evicted already"
    PROTECTED = "protected"
    NAMESPACE = "namespace"
    BREAKER = "circuit breaker"
    LIMIT = "limit"
    COOLDOWN = "cooldown"
    NODE_FIT = "nodeFit"
    #: Refused by the Eviction API (a PodDisruptionBudget) or failed: see `decisions`.
    API = "eviction API"
    #: The plugin's own reason (`PluginContext.declined`): a move that does not pay, a
    #: replacement left to settle.
    PLUGIN = "plugin"


@dataclass(frozen=True, slots=True)
class Blocked:
    """A pod a plugin weighed and that stayed, with the rail (or the plugin's reason) that held
    it: what `tas explain` reads, instead of judging the rails again."""

    namespace: Namespace
    name: str
    node: NodeName | None
    strategy: str
    rail: Rail
    why: str
    #: The rule that held it, without this pod's figures (empty: `why` says it), for a page
    #: that sums the reasons over pods.
    rule: str = ""


@dataclass
class CycleRails:
    """The rails shared by every profile and strategy of one cycle."""

    budget: EvictionBudget
    cooldown: Cooldown
    dry_run: bool
    #: Why the circuit breaker holds every eviction back this cycle (None: it does not).
    halted: str | None = None
    decisions: list[EvictionDecision] = field(default_factory=list)
    #: Owners evicted from in this cycle (dry runs included): one pod per owner per cycle.
    owners: set[WorkloadKey] = field(default_factory=set)
    #: Warning Events for refused, failed and limit-stopped evictions (upstream's
    #: `evictionFailureEventNotification`).
    failure_events: bool = False
    grace_period_seconds: int | None = None
    #: Every eviction attempt a rail held back, and every pod a plugin declined to move.
    blocked: list[Blocked] = field(default_factory=list)
    #: Pods whose every filter rejection is recorded in `blocked` too (the pod `tas explain`
    #: asks about): recording them for every pod would cost each cycle a record per pod.
    watched: frozenset[tuple[Namespace, str]] = frozenset()

    def block(self, pod: Pod, strategy: str, rail: Rail, why: str) -> None:
        self.blocked.append(Blocked(pod.namespace, pod.name, pod.node_name, strategy, rail, why))

    def declined(self, pod: Pod, strategy: str, why: str, *, rule: str = "") -> None:
        """A plugin's own reason to leave the pod (`PluginContext.declined`)."""
        self.blocked.append(
            Blocked(pod.namespace, pod.name, pod.node_name, strategy, Rail.PLUGIN, why, rule)
        )


# A service, not a value: compared and hashed by identity (eq=False).
@dataclass(frozen=True, kw_only=True, eq=False)
class PodEvictor:
    """One profile's evictor for one cycle (`for_plugin` gives each plugin its view): the
    `descheduler.framework.Evictor` plugins see (upstream's `evictions.PodEvictor`)."""

    cluster: Cluster
    state: CycleState
    rules: EvictorFilter
    rails: CycleRails
    #: nodeFit for this profile's nodes this cycle (over `state`, for the rules' node
    #: selector), shared by every plugin's view.
    fitter: NodeFitter
    metrics: DeschedulerMetrics | None = None
    profile: str = ""
    #: The plugin this view is for (what a filter rejection is recorded under).
    plugin: str = ""
    #: The per-owner cooldown and one-pod-per-owner-per-cycle apply to this plugin.
    guard_owners: bool = True
    #: This plugin empties nodes (`Plugin.evacuates`): see `Cooldown`.
    evacuating: bool = False

    def for_plugin(
        self, plugin: str, *, guard_owners: bool, evacuating: bool = False
    ) -> PodEvictor:
        """The same evictor (state, rails, rules), for one plugin: its name, and the owner
        guard on or off."""
        return replace(self, plugin=plugin, guard_owners=guard_owners, evacuating=evacuating)

    def filter(self, pod: Pod) -> bool:
        """Upstream's Filter: not protected by the profile's rules, not evicted already."""
        if pod_key(pod) in self.state.evicted:
            return False
        protected = self.rules.protection(pod, pdbs=self.state.pdbs, now=self.state.now)
        if protected is not None:
            self._rejected(pod, Rail.PROTECTED, protected)
            return False
        return True

    def pre_eviction_filter(self, pod: Pod) -> bool:
        """Upstream's PreEvictionFilter: the namespace label selector, and nodeFit (when on)."""
        if not self.rules.namespace_selected(pod):
            self._rejected(pod, Rail.NAMESPACE, _NAMESPACE_NOT_SELECTED)
            return False
        if not self.fits_elsewhere(pod):
            self._rejected(pod, Rail.NODE_FIT, _NO_NODE_FITS)
            return False
        return True

    def _rejected(self, pod: Pod, rail: Rail, why: str) -> None:
        if (pod.namespace, pod.name) in self.rails.watched:
            self.rails.block(pod, self.plugin, rail, why)

    def fits_elsewhere(self, pod: Pod, *, among: Collection[NodeName] | None = None) -> bool:
        """nodeFit: another Ready node accepts the pod (always True with nodeFit off)."""
        if not self.rules.node_fit:
            return True
        return bool(self.fitter.fitting_nodes(pod, among=among))

    def evict(self, pod: Pod, options: EvictOptions) -> Attempt:
        """Evict (or in Predictive mode, report) the pod if every rail allows; for a `Trial`,
        only say whether they would (`descheduler.framework.Evictor.evict`)."""
        strategy, reason = options.strategy, options.reason
        held = self._held(pod, options)
        if held is not None:
            rail, why = held
            if options.trial is not None:
                return Attempt(self._outcome_of(rail, pod, options.trial.before), why)
            log.debug("Not evicting %s/%s (%s): %s", pod.namespace, pod.name, strategy, why)
            self.rails.block(pod, strategy, rail, why)
            return Attempt(self._outcome_of(rail, pod), why)
        if options.trial is not None:
            return DONE
        full_reason = f"{strategy}: {reason}"
        if self.rails.dry_run:
            self._log_evicted(pod, strategy, reason, " in dry run mode")
            self._done(pod, strategy, full_reason, Result.DRY_RUN)
            return DONE
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
            return self._api_blocked(pod, strategy, str(error))
        if result.outcome is EvictionOutcome.EVICTED:
            self._log_evicted(pod, strategy, reason, "")
            self.rails.cooldown.record(
                workload_of(pod), self.state.now, evacuation=self.evacuating, node=pod.node_name
            )
            self._done(pod, strategy, full_reason, Result.EVICTED)
            self._event(
                pod,
                reason=strategy,
                message=f"pod eviction from {pod.node_name} node by {EVENT_SOURCE}: {reason}",
            )
            return DONE
        if result.outcome is EvictionOutcome.REFUSED:
            log.info(
                "Eviction of %s/%s refused (PodDisruptionBudget): %s",
                pod.namespace,
                pod.name,
                result.message,
            )
            self._record(pod, strategy, f"{full_reason} ({result.message})", Result.REFUSED)
            self._failure_event(pod, result.message)
            return self._api_blocked(pod, strategy, f"refused: {result.message}")
        if result.outcome is EvictionOutcome.NOT_FOUND:
            log.info("Pod %s/%s is already gone", pod.namespace, pod.name)
            self.state.mark_evicted(pod)
            return self._api_blocked(pod, strategy, "already gone")
        log.warning("Eviction of %s/%s failed: %s", pod.namespace, pod.name, result.message)
        self._record(pod, strategy, f"{full_reason} ({result.message})", Result.FAILED)
        self._failure_event(pod, result.message)
        return self._api_blocked(pod, strategy, result.message)

    def _api_blocked(self, pod: Pod, strategy: str, why: str) -> Attempt:
        self.rails.block(pod, strategy, Rail.API, why)
        return Attempt(Outcome.BLOCKED, why)

    def _outcome_of(self, rail: Rail, pod: Pod, besides: Sequence[Pod] = ()) -> Outcome:
        """What a held-back attempt means for the plugin's loop (`besides`: a trial's pods
        asked about before, counted against the limits)."""
        which = self.rails.budget.which_exhausted(
            node=pod.node_name, namespace=pod.namespace, besides=besides
        )
        if rail is Rail.BREAKER or which is Exhausted.TOTAL:
            return Outcome.STOPPED
        if rail is Rail.LIMIT and which is Exhausted.NODE:
            return Outcome.NODE_LIMIT
        return Outcome.BLOCKED

    def _held(self, pod: Pod, options: EvictOptions) -> tuple[Rail, str] | None:
        """The first rail (short of the Eviction API) that holds the pod back, with why; None
        when none does. The one place the rails are judged, for an eviction and a trial."""
        trial = options.trial
        before = trial.before if trial is not None else ()
        if pod_key(pod) in self.state.evicted or any(pod_key(p) == pod_key(pod) for p in before):
            return Rail.EVICTED_ALREADY, "already evicted in this cycle"
        protected = self.rules.protection(pod, pdbs=self.state.pdbs, now=self.state.now)
        if protected is not None:
            return Rail.PROTECTED, protected
        if not self.rules.namespace_selected(pod):
            return Rail.NAMESPACE, _NAMESPACE_NOT_SELECTED
        if self.rails.halted is not None:
            return Rail.BREAKER, f"circuit breaker open: {self.rails.halted}"
        rails = self.rails
        exhausted = rails.budget.exhausted(
            node=pod.node_name, namespace=pod.namespace, besides=before
        )
        if exhausted is not None:
            if not rails.dry_run and trial is None:
                self._failure_event(pod, exhausted)
            return Rail.LIMIT, exhausted
        owner = workload_of(pod)
        if self.guard_owners and rails.cooldown.seconds > 0:
            if self.evacuating:
                cooling = rails.cooldown.evacuation_blocked(owner, self.state.now)
            elif owner in rails.owners or any(workload_of(p) == owner for p in before):
                cooling = not options.several_per_cycle
            else:
                cooling = rails.cooldown.blocked(
                    owner, self.state.now, share=options.cooldown_share
                )
            if cooling:
                return Rail.COOLDOWN, f"owner {owner[1]}/{owner[2]} is cooling down"
        if not self.fits_elsewhere(pod, among=options.among):
            return Rail.NODE_FIT, _NO_NODE_FITS
        return None

    def _log_evicted(self, pod: Pod, strategy: str, reason: str, mode: str) -> None:
        # Upstream's words, so its users can grep for them.
        log.info(
            'Evicted pod%s pod="%s/%s" node="%s" strategy="%s" profile="%s" reason="%s"',
            mode,
            pod.namespace,
            pod.name,
            pod.node_name,
            strategy,
            self.profile,
            reason,
        )

    def _done(self, pod: Pod, strategy: str, reason: str, result: str) -> None:
        self.rails.budget.record(node=pod.node_name, namespace=pod.namespace)
        self.rails.owners.add(workload_of(pod))
        self.state.mark_evicted(pod)
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
