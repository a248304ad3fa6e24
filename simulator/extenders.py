"""The two extenders the kube-scheduler model calls in-process (`embedded.scheduler.Extender`).

- `OursExtender` is this project's extender: the same `extender.decide` functions the HTTP
  routes call, on the contender's metric view (with its staleness check) and policy store,
  with herd control: the recent placements' estimates (`tas.placements`) the embedded
  cluster feeds, added when it scores (and when it filters, for the policies named).
- `TasExtender` answers as Intel TAS does (intel/platform-aware-scheduling,
  telemetry-aware-scheduling/pkg/telemetryscheduler/telemetryscheduler.go and
  pkg/strategies/core/operator.go):
  filter removes nodes violating the pod's dontschedule rules, and fails (HTTP 404) when the
  pod's policy is missing or has no dontschedule strategy; prioritize orders the candidates
  that have a value by the first scheduleonmetric rule (`sort.Slice`, so ties fall in any
  order, and `Equals` is not sorted at all: Go's map order) and scores them `10 - i`, going
  negative past the eleventh node; candidates without a value are left out (kube-scheduler adds
  nothing for them). TAS's metric cache never checks sample times: its view never goes stale.
  Its shipped scheduler configuration uses `weight: 1` and `ignorable: true`
  (deploy/extender-configuration/scheduler-config.yaml).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from embedded.scheduler import ExtenderError, FilterAnswer
from extender.decide import decide_filter, decide_prioritize
from extender.wire import PodInfo
from simulator.clock import VirtualClock
from tas.cluster.model import Pod
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.view import MetricView
from tas.placements import Estimates, PlacementTracker
from tas.policies.model import Operator, StrategyName, TASPolicy
from tas.policies.store import PolicyStore
from tas.rules import ScoreMode, filter_nodes
from tas.types import Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL

#: The weight this project recommends (docs/deploy.md) and TAS ships.
OURS_WEIGHT = 5
TAS_WEIGHT = 1


def pod_info(pod: Pod) -> PodInfo:
    return PodInfo(
        name=pod.name, namespace=Namespace(pod.namespace), uid=pod.uid, labels=pod.labels
    )


class OursExtender:
    ignorable = True

    def __init__(
        self,
        *,
        store: PolicyStore,
        view: MetricView,
        clock: VirtualClock,
        weight: int = OURS_WEIGHT,
        mode: ScoreMode = ScoreMode.PROPORTIONAL,
        placements: PlacementTracker | None = None,
        filter_on_estimates: frozenset[str] = frozenset(),
    ) -> None:
        self.weight = weight
        self._store = store
        self._view = view
        self._clock = clock
        self._mode = mode
        self._placements = placements
        self._filter_on = filter_on_estimates

    def _estimates(self) -> Estimates | None:
        if self._placements is None or not isinstance(self._view, RefreshingMetricView):
            return None
        return self._placements.estimates(
            sample_times=self._view.sample_times(), now=self._clock.time()
        )

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        name = pod.labels.get(POLICY_LABEL)
        chosen = name is not None and (
            name in self._filter_on or f"{pod.namespace}/{name}" in self._filter_on
        )
        decision = decide_filter(
            pod=pod_info(pod),
            candidates=candidates,
            snapshot=self._store.snapshot(),
            metrics=self._view.columns(),
            now=self._clock.time(),
            estimates=self._estimates() if chosen else None,
        )
        failed = decision.failed
        return FilterAnswer(
            [n for n in candidates if n not in failed], {str(n): r for n, r in failed.items()}
        )

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        decision = decide_prioritize(
            pod=pod_info(pod),
            candidates=candidates,
            snapshot=self._store.snapshot(),
            metrics=self._view.columns(),
            mode=self._mode,
            now=self._clock.time(),
            estimates=self._estimates(),
        )
        return decision.scores


class TasExtender:
    ignorable = True

    def __init__(
        self,
        *,
        store: PolicyStore,
        view: MetricView,
        rng: random.Random,
        weight: int = TAS_WEIGHT,
    ) -> None:
        self.weight = weight
        self._store = store
        self._view = view
        self._rng = rng

    def _policy(self, pod: Pod) -> TASPolicy:
        name = pod.labels.get(POLICY_LABEL)
        policy = self._store.snapshot().get(
            PolicyKey(Namespace(pod.namespace), PolicyName(name or ""))
        )
        if policy is None:
            raise ExtenderError(f"404: no policy {name!r} for pod {pod.namespace}/{pod.name}")
        return policy

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        policy = self._policy(pod)
        if policy.strategy(StrategyName.DONTSCHEDULE) is None:
            raise ExtenderError("404: no dontschedule strategy found")
        result = filter_nodes(policy, self._view.columns(), candidates)
        return FilterAnswer(list(result.passed), dict.fromkeys(result.failed, "Node violates"))

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        policy = self._policy(pod)
        strategy = policy.strategy(StrategyName.SCHEDULEONMETRIC)
        if strategy is None:
            raise ExtenderError("404: no scheduling rule found")
        rule = strategy.rules[0]
        column = self._view.columns().get(rule.metricname, {})
        found = [(node, column[node]) for node in candidates if node in column]
        self._rng.shuffle(found)  # Go's map order, then an unstable sort: ties in any order
        if rule.operator is Operator.GREATER_THAN:
            found.sort(key=lambda item: -item[1])
        elif rule.operator is Operator.LESS_THAN:
            found.sort(key=lambda item: item[1])
        return {node: 10 - i for i, (node, _) in enumerate(found)}
