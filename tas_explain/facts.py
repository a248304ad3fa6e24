"""The Explainer: gathers one world's facts (its cluster, metrics, policies, the extender's
recent decisions, Events, and a dry run of the descheduler's next cycle) and builds the
explanations from them (`tas_explain.explain`). `tas run` builds one over its live parts for the
dashboard, `tas explain` over a real cluster."""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from descheduler.assemble import dry_run, load_aware_curves
from descheduler.cycle import CycleReport, Descheduler
from tas.calibration.curve import NodeCurve
from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.interface import Cluster, ClusterError
from tas.cluster.model import Node, Pod
from tas.metrics.view import MetricView
from tas.policies.model import TASPolicy
from tas.rules import ScoreMode
from tas.types import PolicyKey
from tas_explain.explain import explain_gone_pod, explain_node, explain_pod, find_node, find_pod
from tas_explain.explanation import (
    EventFact,
    ExtenderRecord,
    NodeExplanation,
    PodExplanation,
    UnknownObjectError,
)
from tas_explain.move import move_verdict
from tas_explain.quiet import quiet_descheduler_logs

PolicySource = Callable[[], Mapping[PolicyKey, TASPolicy]]


def api_message(text: str) -> str:
    """The API server's own words from an error carrying its Status (its `message`)."""
    # The API server's encoder (Go's) writes no space after the colon.
    found = re.search(r'"message":\s*("(?:[^"\\]|\\.)*")', text)
    if found is not None:
        with contextlib.suppress(ValueError):
            text = str(json.loads(found.group(1)))
    return text


class DecisionsUnavailableError(Exception):
    """The extender's decision log could not be read (the message says why)."""


DecisionSource = Callable[[], list[ExtenderRecord]]


@dataclass
class Explainer:
    """Gathers the facts of one world and builds explanations (`tas_explain.explain`). `tas run`
    builds one over its live parts for the dashboard; this command over a real cluster."""

    cluster: Cluster
    view: MetricView
    policies: PolicySource
    #: The extender's recent decisions; raises `DecisionsUnavailableError`.
    decisions: DecisionSource
    #: Events (for evictions); raises `ClusterError` when they cannot be listed.
    events: Callable[[], Sequence[EventFact]]
    #: The descheduler whose cycle is run dry (its memory is read, never changed).
    descheduler: Descheduler | None
    clock: Clock = SYSTEM_CLOCK
    score_mode: ScoreMode = ScoreMode.PROPORTIONAL
    #: What this world cannot tell, whatever is asked (said in every answer).
    missing: tuple[str, ...] = ()
    #: One dry cycle at a time: two clicks at once need not run two.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def explain_pod(self, namespace: str, name: str) -> PodExplanation:
        pods = self.cluster.list_pods()
        missing = list(self.missing)
        try:
            pod = find_pod(pods, namespace, name)
        except UnknownObjectError:
            # Gone: "why was it moved?" is answered by its eviction Events, if any.
            gone = explain_gone_pod(namespace, name, events=self._events(missing), missing=missing)
            if gone is None:
                raise
            return gone
        nodes = self.cluster.list_nodes()
        policies = self.policies()
        decisions: list[ExtenderRecord] | None
        try:
            decisions = self.decisions()
        except DecisionsUnavailableError as error:
            decisions = None
            missing.append(str(error))
        move = None
        if self.descheduler is not None:
            try:
                report = self._dry_run(self.descheduler, pod)
                move = move_verdict(
                    report, pod, policies=policies, metrics=self.descheduler.metric_view.columns()
                )
            except ClusterError as error:  # e.g. a PriorityClass the policy names, unreadable
                missing.append(f"whether the descheduler would move it: {api_message(str(error))}")
        return explain_pod(
            pod,
            nodes=nodes,
            policies=policies,
            metrics=self.view.columns(),
            decisions=decisions,
            move=move,
            events=self._events(missing),
            score_mode=self.score_mode,
            missing=missing,
            pods=pods,
        )

    def explain_node(self, name: str) -> NodeExplanation:
        nodes = self.cluster.list_nodes()
        node = find_node(nodes, name)
        missing = list(self.missing)
        times = getattr(self.view, "sample_times", None)
        return explain_node(
            node,
            nodes=nodes,
            pods=self.cluster.list_pods(),
            policies=self.policies(),
            metrics=self.view.columns(),
            sample_times=times() if times is not None else {},
            now=self.clock.now().timestamp(),
            shown=getattr(self.view, "wanted", ()),
            events=self._events(missing),
            score_mode=self.score_mode,
            missing=missing,
            curve=self._curve(node),
        )

    def _curve(self, node: Node) -> NodeCurve | None:
        """The node's pressure curve as the descheduler's LoadAware learned it (None: no
        LoadAware learns curves here). Read, never changed."""
        learner = load_aware_curves(self.descheduler)
        if learner is None:
            return None
        return learner.curve(node.name, node.allocatable.get("cpu", 0.0))

    def _events(self, missing: list[str]) -> Sequence[EventFact]:
        try:
            return self.events()
        except ClusterError as error:
            missing.append(f"recent evictions (Events): {error}")
            return ()

    def _dry_run(self, live: Descheduler, pod: Pod) -> CycleReport:
        with self._lock, quiet_descheduler_logs():
            return dry_run(live, watch=frozenset({(pod.namespace, pod.name)}))


def recorded_events(events: Callable[[], Sequence[Any]]) -> Callable[[], list[EventFact]]:
    """The in-memory cluster's recorded Events (`tas_inmemory.cluster.RecordedEvent`) as facts."""

    def read() -> list[EventFact]:
        return [
            EventFact(
                time=e.time.timestamp(),
                kind=e.involved.kind,
                namespace=e.involved.namespace,
                name=e.involved.name,
                reason=e.reason,
                message=e.message,
                type=e.type,
            )
            for e in events()
        ]

    return read
