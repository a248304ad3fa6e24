"""The two extenders the kube-scheduler model calls in-process (`tas_inmemory.scheduler.Extender`).

- `OursExtender` is this project's extender: a thin adapter to the `ExtenderService` that
  `tas extender`'s HTTP routes call (`extender/service.py`), built with the settings `tas
  extender` builds from its defaults (the circuit breaker's `max_violating_node_share`, the
  score mode, estimates in scoring only), on the contender's metric view (with its staleness
  check) and policy store, with herd control: the recent placements' estimates
  (`tas_herd.placements`) the in-memory cluster feeds.
- `TasExtender` answers as Intel TAS does today (intel/platform-aware-scheduling at c4c90e3,
  telemetry-aware-scheduling/pkg/telemetryscheduler/telemetryscheduler.go, and
  pkg/strategies/core/operator.go):
  - filter (`filterNodes`): fails (HTTP 404) when the pod's policy is missing; keeps every
    node ("Returning all nodes") when the policy has no dontschedule rule (since "Fix
    handling of nil dontschedule strategy", 416bf0c, 2022; older releases answered 404);
    otherwise removes the nodes that violate the dontschedule rules.
  - prioritize (`prioritizeNodes`, `prioritizeNodesForRule`): an empty list (no scores, HTTP
    200) when the policy is missing or has no scheduleonmetric rule; otherwise it orders the
    candidates that have a value by the first scheduleonmetric rule (`sort.Slice`, so ties
    fall in any order, and `Equals` is not sorted at all: Go's map order) and scores them
    `10 - i`, going negative past the eleventh node; candidates without a value are left out
    (kube-scheduler adds nothing for them).
  TAS's metric cache never checks sample times: its view never goes stale. Its shipped
  scheduler configuration uses `weight: 1` and `ignorable: true`
  (deploy/extender-configuration/scheduler-config.yaml).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from extender.decisions import DecisionLog
from extender.service import DecisionReporter, ExtenderService
from extender.settings import ExtenderSettings
from extender.wire import PodInfo
from tas.cluster.model import Pod
from tas.metrics.refreshing import RefreshingMetricView
from tas.metrics.view import MetricView
from tas.policies.model import Operator, StrategyName, TASPolicy
from tas.policies.store import PolicyStore
from tas.rules import filter_nodes
from tas.types import Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL
from tas_herd.placements import PlacementTracker
from tas_herd.readings import HerdReadings, herd_readings
from tas_inmemory.extender_client import DEFAULT_EXTENDER_WEIGHT
from tas_inmemory.scheduler import ExtenderError, FilterAnswer
from tas_simulator.clock import VirtualClock

#: The weight this project recommends (docs/deploy.md) and ships; TAS's examples use 1.
OURS_WEIGHT = DEFAULT_EXTENDER_WEIGHT
TAS_WEIGHT = 1


def pod_info(pod: Pod) -> PodInfo:
    return PodInfo(
        name=pod.name, namespace=Namespace(pod.namespace), uid=pod.uid, labels=pod.labels
    )


class OursExtender:
    """The kube-scheduler model's `Extender` over the shipped `ExtenderService`: only the
    conversions between the scheduler model's types and the service's are here."""

    ignorable = True

    def __init__(
        self,
        *,
        store: PolicyStore,
        view: MetricView,
        clock: VirtualClock,
        weight: int = OURS_WEIGHT,
        placements: PlacementTracker | None = None,
        settings: ExtenderSettings | None = None,
    ) -> None:
        self.weight = weight
        herd: HerdReadings | None = None
        if placements is not None and isinstance(view, RefreshingMetricView):
            # What `tas extender` wires, on the virtual clock.
            herd = herd_readings(placements, view, now=clock.time)

        # `tas extender` with no flags builds `ExtenderSettings()` (tests/tas_simulator/
        # test_extenders.py checks it): the breaker's share, score mode and filtering on
        # estimates as users get them.
        settings = settings if settings is not None else ExtenderSettings()
        self.service = ExtenderService(
            store=store,
            metrics=view,
            settings=settings,
            clock=clock,
            herd=herd,
            record=DecisionReporter(DecisionLog(settings.decision_log_size)).record,
        )

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        failed = self.service.filter(pod_info(pod), candidates).failed
        return FilterAnswer(
            [n for n in candidates if n not in failed], {str(n): r for n, r in failed.items()}
        )

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        return self.service.prioritize(pod_info(pod), candidates).scores


@dataclass(frozen=True, kw_only=True, eq=False)
class TasExtender:
    store: PolicyStore
    view: MetricView
    #: Breaks ties as Go's map order and unstable sort do.
    rng: random.Random
    weight: int = TAS_WEIGHT
    ignorable: ClassVar[bool] = True

    def _policy(self, pod: Pod) -> TASPolicy | None:
        name = pod.labels.get(POLICY_LABEL)
        return self.store.snapshot().get(
            PolicyKey(Namespace(pod.namespace), PolicyName(name or ""))
        )

    def filter(self, pod: Pod, candidates: Sequence[NodeName]) -> FilterAnswer:
        policy = self._policy(pod)
        if policy is None:
            # filterNodes: getPolicyFromPod fails -> nil -> Filter writes 404.
            raise ExtenderError(f"404: no policy for pod {pod.namespace}/{pod.name}")
        if policy.strategy(StrategyName.DONTSCHEDULE) is None:
            # filterNodes: getDontScheduleStrategy fails -> "Returning all nodes".
            return FilterAnswer(list(candidates))
        result = filter_nodes(policy, self.view.columns(), candidates)
        return FilterAnswer(list(result.passed), dict.fromkeys(result.failed, "Node violates"))

    def prioritize(self, pod: Pod, candidates: Sequence[NodeName]) -> Mapping[NodeName, int]:
        policy = self._policy(pod)
        strategy = None if policy is None else policy.strategy(StrategyName.SCHEDULEONMETRIC)
        if strategy is None:
            # prioritizeNodes: a missing policy or scheduling rule -> an empty HostPriorityList.
            return {}
        rule = strategy.rules[0]
        column = self.view.columns().get(rule.metricname, {})
        found = [(node, column[node]) for node in candidates if node in column]
        self.rng.shuffle(found)  # Go's map order, then an unstable sort: ties in any order
        if rule.operator is Operator.GREATER_THAN:
            found.sort(key=lambda item: -item[1])
        elif rule.operator is Operator.LESS_THAN:
            found.sort(key=lambda item: item[1])
        return {node: 10 - i for i, (node, _) in enumerate(found)}
