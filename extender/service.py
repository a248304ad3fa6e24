"""The extender's decisions without a transport: what `tas extender` answers, callable in-process.

`ExtenderService` is the one place a filter or prioritize request becomes a decision: it reads
the policy store, the metric view's current columns and (when wired) the recent placements'
estimates, applies the settings (`max_violating_node_share`, the policies that filter on
estimates, the score mode), decides (`extender.decide`) and hands the decision to a recorder.
The HTTP routes (`extender/app.py`) decode a request, call it and encode its answer; the
simulator's `ours` and the benchmarks call it directly, so every comparison measures the code
users run.

`DecisionReporter` is the recorder `tas extender` uses: the decision log behind
`/debug/decisions`, the self-metrics, and a log line per decision (an open circuit breaker is
a warning, at most once a minute per policy).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from extender.decide import decide_filter, decide_prioritize
from extender.decisions import Decision, DecisionLog, Outcome, Verb
from extender.self_metrics import ExtenderMetrics
from extender.settings import ExtenderSettings
from extender.wire import PodInfo
from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.view import MetricView
from tas.policies.store import PolicyStore
from tas.types import NodeName
from tas.vocabulary import POLICY_LABEL
from tas_herd.readings import HerdReadings

#: The decision lines keep the logger name they had in the HTTP app: users filter on it
#: (docs/upgrade-from-tas.md).
log = logging.getLogger("extender.app")

BREAKER_LOG_SECONDS = 60.0


class ExtenderService:
    def __init__(
        self,
        *,
        store: PolicyStore,
        metrics: MetricView,
        settings: ExtenderSettings,
        clock: Clock = SYSTEM_CLOCK,
        herd: HerdReadings | None = None,
        record: Callable[[Decision], None] | None = None,
    ) -> None:
        """`herd`, when given, is herd control (`tas_herd.readings.herd_readings`): the recent
        placements' extra load per metric and node, each node's CPU cores (pressure estimates
        follow the stall curve) and learned curve; `record` receives every decision
        (`DecisionReporter.record` in `tas extender`)."""
        self.settings = settings
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._estimates = herd.estimates if herd is not None else None
        self._cores = herd.cores if herd is not None else None
        self._servers = herd.servers if herd is not None else None
        self._newcomers = herd.newcomers if herd is not None else None
        self._record = record

    def filter(self, pod: PodInfo, candidates: Sequence[NodeName]) -> Decision:
        extra = None
        if self._estimates is not None and self.settings.filters_on_estimates(
            pod.namespace, pod.labels.get(POLICY_LABEL)
        ):
            extra = self._estimates()
        decision = decide_filter(
            pod=pod,
            candidates=candidates,
            snapshot=self._store.snapshot(),
            metrics=self._metrics.columns(),
            now=self._clock.now().timestamp(),
            max_violating_share=self.settings.max_violating_node_share,
            estimates=extra,
            cores=self._cores,
            servers=self._servers,
        )
        if self._record is not None:
            self._record(decision)
        return decision

    def prioritize(self, pod: PodInfo, candidates: Sequence[NodeName]) -> Decision:
        decision = decide_prioritize(
            pod=pod,
            candidates=candidates,
            snapshot=self._store.snapshot(),
            metrics=self._metrics.columns(),
            mode=self.settings.score_mode,
            now=self._clock.now().timestamp(),
            estimates=self._estimates() if self._estimates is not None else None,
            cores=self._cores,
            servers=self._servers,
            newcomers=self._newcomers() if self._newcomers is not None else (),
        )
        if self._record is not None:
            self._record(decision)
        return decision


class DecisionReporter:
    """Keeps, counts and logs decisions; `record` is the service's `record` hook."""

    def __init__(self, decisions: DecisionLog, telemetry: ExtenderMetrics | None = None) -> None:
        self.decisions = decisions
        self._telemetry = telemetry
        self._breaker_warned: dict[str, float] = {}  # policy -> when last logged

    def record(self, decision: Decision) -> None:
        self.decisions.record(decision)
        if self._telemetry is not None:
            self._telemetry.count_decision(decision)
        if decision.outcome is Outcome.BREAKER_OPEN:
            # Loud on purpose (scheduling goes on without telemetry until the metric is
            # fixed), but once a minute per policy, not once per pending pod.
            last = self._breaker_warned.get(decision.policy, -BREAKER_LOG_SECONDS)
            if decision.time - last >= BREAKER_LOG_SECONDS:
                self._breaker_warned[decision.policy] = decision.time
                log.warning("Circuit breaker open for %s: %s", decision.policy, decision.reason)
            return
        _log_decision(decision)


def _log_decision(decision: Decision) -> None:
    if not log.isEnabledFor(logging.INFO):
        return
    if decision.outcome is not Outcome.APPLIED:
        log.info(
            "%s %s: every node %s (%s)",
            decision.verb.value,
            decision.pod,
            "passes" if decision.verb is Verb.FILTER else "scores the same",
            decision.reason,
        )
        return
    if decision.verb is Verb.FILTER:
        passed = [n for n in decision.candidates if n not in decision.failed]
        log.info("Filtered nodes available for %s: %s", decision.policy, " ".join(passed))
        for node, reason in decision.failed.items():
            log.info("%s violating %s", node, reason)
    else:
        ranked = sorted(decision.scores.items(), key=lambda item: -item[1])
        log.info(
            "Scores for %s (%s): %s",
            decision.pod,
            decision.policy,
            " ".join(f"{node}={score}" for node, score in ranked),
        )
    _log_estimates(decision)


def _log_estimates(decision: Decision) -> None:
    for metric, extra in decision.estimates.items():
        measured = decision.metrics.get(metric, {})
        # A node without a measured value (it runs only recent placements) shows "-".
        shown = " ".join(
            f"{node}={_shown(measured.get(node))}+{value:.3g}"
            for node, value in sorted(extra.items())
        )
        if shown:
            log.info("Recent placements on %s (measured+estimate): %s", metric, shown)


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
