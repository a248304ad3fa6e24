"""One reconcile cycle against a cluster: read once, compute, write only the differences.

Each cycle takes one policy snapshot, one metric view (fresh values only) and one node and pod
view from the cluster's cache, computes the desired state (`desired`), the patches (`diff`) and
the statuses (`status`), then writes them. A write that fails is counted and logged and is
retried by the next cycle, which computes it again from fresh data; one bad object never stops
the others.

A cycle does nothing until the policy store has loaded, the metric view has refreshed once and
the cluster's caches are filled: an empty start would look like "no policy, no violation" and
strip every label.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from policy_controller.desired import DesiredState, compute_desired
from policy_controller.diff import LabelledPod, NodeDiffer, NodePatch, PodPatch, diff_pods
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import DEFAULT_CONTROLLER, ControllerSettings
from policy_controller.status import StatusTracker, policy_status, stamped
from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.interface import Cluster, ClusterError, NotFoundError
from tas.cluster.model import Node, ObjectReference
from tas.metrics.view import MetricView
from tas.policies.model import StrategyName
from tas.policies.store import PolicyStore
from tas.rules import violation_reason
from tas.types import NodeName, PolicyKey
from tas.vocabulary import VIOLATING

log = logging.getLogger(__name__)

REASON_VIOLATING = "TASPolicyViolated"
REASON_COMPLIANT = "TASPolicyCompliant"


@dataclass(frozen=True, slots=True)
class CycleReport:
    """What one cycle did; `ran` is False when it waited for policies or metrics."""

    ran: bool
    node_writes: int = 0
    pod_writes: int = 0
    status_writes: int = 0
    events: int = 0
    errors: int = 0
    #: Seconds spent computing the desired state and the patches (no I/O).
    evaluation_seconds: float = 0.0

    @property
    def writes(self) -> int:
        return self.node_writes + self.pod_writes + self.status_writes


class Reconciler:
    def __init__(
        self,
        *,
        cluster: Cluster,
        policies: PolicyStore,
        metric_view: MetricView,
        metrics: ControllerMetrics,
        settings: ControllerSettings = DEFAULT_CONTROLLER,
        clock: Clock = SYSTEM_CLOCK,
        may_write: Callable[[], bool] = lambda: True,
        cluster_ready: Callable[[], bool] = lambda: True,
        pods: Callable[[], Iterable[LabelledPod]] | None = None,
    ) -> None:
        """`settings`: what `tas controller`'s flags say (`policy_controller.settings`).
        `pods`: where the pods to label come from, when not `cluster.list_pods` (`tas
        controller`'s cache holds only the pods linked to a policy, as `PodSummary`s)."""
        self._cluster = cluster
        self._pods: Callable[[], Iterable[LabelledPod]] = pods or cluster.list_pods
        self._policies = policies
        self._view = metric_view
        self._metrics = metrics
        self._statuses = StatusTracker(refresh_cycles=settings.status_refresh_cycles)
        #: When a cycle evaluates (policy status times). The cycle's own durations are
        #: measured with `time.perf_counter`: work takes real time even on a virtual clock.
        self._clock = clock
        self._may_write = may_write
        self._cluster_ready = cluster_ready
        self._max_events = settings.max_events_per_cycle
        self._cycle = 0
        self._differ = NodeDiffer()
        self._max_violating_share = settings.max_violating_node_share
        self._held: set[PolicyKey] = set()  # policies whose breaker was open last cycle
        self._pod_differ = _PodDiffer()

    @property
    def ready(self) -> bool:
        # The view fetches what the policies name once told so (`want_policy_metrics`, wired
        # with the store): until its first refresh it is not ready, and neither are we.
        return self._policies.loaded and self._view.ready and self._cluster_ready()

    def reconcile(self) -> CycleReport:
        """Run one cycle (see the module docstring)."""
        if not self.ready:
            self._metrics.cycles.labels("not_ready").inc()
            return CycleReport(ran=False)
        started = time.perf_counter()
        self._cycle += 1
        snapshot = self._policies.snapshot()
        columns = self._view.columns()
        nodes = self._cluster.list_nodes()
        pods = self._pods()
        evaluated_at = self._clock.now()

        computing = time.perf_counter()
        desired = compute_desired(
            snapshot.policies,
            columns,
            frozenset(n.name for n in nodes),
            labelled=_labelled_violating(nodes),
            max_violating_share=self._max_violating_share,
        )
        self._report_breakers(desired)
        node_patches = self._differ.diff(nodes, desired.node_labels, desired.deschedule_keys)
        violating: dict[PolicyKey, Collection[NodeName]] = {
            key: evaluation.deschedule.keys()
            for key, evaluation in desired.evaluations.items()
            if evaluation.has_deschedule
        }
        pod_patches = self._pod_differ.diff(pods, violating)
        evaluation_seconds = time.perf_counter() - computing

        by_name = {node.name: node for node in nodes}
        node_writes, events, errors = self._write_nodes(node_patches, by_name, desired)
        pod_writes, pod_errors = self._write_pods(pod_patches)
        status_writes, status_errors = self._write_statuses(desired, evaluated_at)
        self._report_violations(desired)
        self._metrics.cycles.labels("done").inc()
        self._metrics.reconcile_seconds.observe(time.perf_counter() - started)
        return CycleReport(
            ran=True,
            node_writes=node_writes,
            pod_writes=pod_writes,
            status_writes=status_writes,
            events=events,
            errors=errors + pod_errors + status_errors,
            evaluation_seconds=evaluation_seconds,
        )

    # ------------------------------------------------------------------ writes

    def _write_nodes(
        self, patches: Sequence[NodePatch], nodes: Mapping[NodeName, Node], desired: DesiredState
    ) -> tuple[int, int, int]:
        writes = events = errors = 0
        transitions: list[tuple[NodeName, str, bool]] = []
        for patch in patches:
            if not self._may_write():
                break
            current = nodes[patch.node].labels
            try:
                self._cluster.patch_node_labels(
                    patch.node,
                    set_labels=patch.set_labels,
                    remove=patch.remove,
                    annotations=patch.annotations or None,
                )
            except NotFoundError:
                continue  # the node left; the next cycle no longer sees it
            except ClusterError as error:
                errors += 1
                self._metrics.write_errors.labels("node").inc()
                log.warning("Patching labels of node %s failed: %s", patch.node, error)
                continue
            writes += 1
            self._metrics.label_writes.labels("node").inc()
            log.info(
                "Node %s labels: set %s, removed %s",
                patch.node,
                dict(patch.set_labels),
                list(patch.remove),
            )
            transitions.extend((patch.node, key, True) for key in patch.started_violating(current))
            transitions.extend((patch.node, key, False) for key in patch.stopped_violating(current))
        for node, key, started in transitions[: self._max_events]:
            if started:
                message = _violating_message(node, key, desired)
                events += self._emit(node, REASON_VIOLATING, message, True)
            else:
                events += self._emit(
                    node, REASON_COMPLIANT, _recovered_message(node, key, desired), False
                )
        if len(transitions) > self._max_events:
            log.warning(
                "%d violation changes (node, policy) this cycle; Events sent for the first %d only",
                len(transitions),
                self._max_events,
            )
        return writes, events, errors

    def _emit(self, node: NodeName, reason: str, message: str, warning: bool) -> int:
        try:
            self._cluster.emit_event(
                ObjectReference(kind="Node", name=node),
                reason=reason,
                message=message,
                warning=warning,
            )
        except ClusterError as error:
            self._metrics.write_errors.labels("event").inc()
            log.warning("Emitting event %s for node %s failed: %s", reason, node, error)
            return 0
        self._metrics.events.labels(reason).inc()
        return 1

    def _write_pods(self, patches: Sequence[PodPatch]) -> tuple[int, int]:
        writes = errors = 0
        for patch in patches:
            if not self._may_write():
                break
            try:
                self._cluster.patch_pod_labels(
                    patch.namespace, patch.name, set_labels=patch.set_labels, remove=patch.remove
                )
            except NotFoundError:
                continue
            except ClusterError as error:
                errors += 1
                self._metrics.write_errors.labels("pod").inc()
                log.warning(
                    "Patching labels of pod %s/%s failed: %s", patch.namespace, patch.name, error
                )
                continue
            writes += 1
            self._metrics.label_writes.labels("pod").inc()
        return writes, errors

    def _write_statuses(self, desired: DesiredState, evaluated_at: datetime) -> tuple[int, int]:
        writes = errors = 0
        self._statuses.forget_except(desired.evaluations)
        for key, evaluation in desired.evaluations.items():
            status = policy_status(evaluation)
            if not self._statuses.due(key, status, self._cycle) or not self._may_write():
                continue
            try:
                self._cluster.update_policy_status(key, stamped(status, evaluated_at))
            except NotFoundError:
                # A policy read from files has no object to carry a status; try again later.
                log.debug("Policy %s has no cluster object; status not written", key)
            except ClusterError as error:
                errors += 1
                self._metrics.write_errors.labels("status").inc()
                log.warning("Writing status of policy %s failed: %s", key, error)
                continue
            else:
                writes += 1
                self._metrics.status_writes.inc()
            self._statuses.written(key, status, self._cycle)
        return writes, errors

    def _report_breakers(self, desired: DesiredState) -> None:
        """Log when a policy's breaker opens (an error: the metric is broken) and closes, and
        export each one's state (`tas_controller_circuit_breaker_open`)."""
        held = {key for key, e in desired.evaluations.items() if e.held is not None}
        self._metrics.set_breakers((key, key in held) for key in desired.evaluations)
        for key in sorted(held - self._held):
            log.error(
                "Circuit breaker open for policy %s: %s; no node newly labelled violating "
                "until it clears",
                key,
                desired.evaluations[key].held,
            )
        for key in sorted(self._held - held):
            log.warning("Circuit breaker closed for policy %s: labelling resumes", key)
        self._held = held

    def _report_violations(self, desired: DesiredState) -> None:
        counts = []
        for key, evaluation in desired.evaluations.items():
            strategies = evaluation.policy.strategies
            if StrategyName.DESCHEDULE in strategies:
                counts.append((key, StrategyName.DESCHEDULE.value, len(evaluation.deschedule)))
            if StrategyName.DONTSCHEDULE in strategies:
                counts.append((key, StrategyName.DONTSCHEDULE.value, len(evaluation.dontschedule)))
        self._metrics.set_violating(counts)


def _labelled_violating(nodes: Sequence[Node]) -> dict[str, set[NodeName]]:
    """Bare label key (policy name) -> the nodes labelled `<key>=violating` now."""
    labelled: dict[str, set[NodeName]] = {}
    for node in nodes:
        for key, value in node.labels.items():
            if value == VIOLATING:
                labelled.setdefault(key, set()).add(node.name)
    return labelled


def _violating_message(node: NodeName, key: str, desired: DesiredState) -> str:
    reasons = [
        violation_reason(str(policy_key), evaluation.deschedule[node])
        for policy_key, evaluation in desired.evaluations.items()
        if evaluation.policy.name == key and node in evaluation.deschedule
    ]
    detail = "; ".join(reasons) if reasons else key
    return f"Node {node} violates a deschedule strategy, labelled {key}={VIOLATING}: {detail}"


def _recovered_message(node: NodeName, key: str, desired: DesiredState) -> str:
    if key in desired.deschedule_keys:
        return f"Node {node} no longer violates {key}; label {key}={VIOLATING} removed"
    return (
        f"Label {key}={VIOLATING} removed from node {node}: the policy was deleted or "
        "lost its deschedule strategy"
    )


class _PodDiffer:
    """`diff_pods`, skipped when its answer cannot have changed.

    The answer depends only on the pods and on which nodes violate each deschedule policy.
    When the pods are the very tuple of the last cycle (a tuple of frozen pods cannot change:
    the in-memory cluster hands out the same one until something is written), the violations
    are equal and the last diff asked for nothing, this one asks for nothing either. A cluster
    that lists a new collection each time (the Kubernetes adapter's cache) is diffed every
    cycle, as before. In the closed loop the controller diffs every sync over all its pods:
    most of a steady cycle's work.
    """

    def __init__(self) -> None:
        self._pods: tuple[LabelledPod, ...] | None = None
        self._violating: dict[PolicyKey, frozenset[NodeName]] = {}

    def diff(
        self,
        pods: Iterable[LabelledPod],
        violating: Mapping[PolicyKey, Collection[NodeName]],
    ) -> list[PodPatch]:
        now = {key: frozenset(nodes) for key, nodes in violating.items()}
        if isinstance(pods, tuple) and pods is self._pods and now == self._violating:
            return []
        patches = diff_pods(pods, violating)
        # Remembered only when clean: patches asked for are diffed again until written.
        self._pods = pods if isinstance(pods, tuple) and not patches else None
        self._violating = now
        return patches
