"""A recorded window as a `tas simulate` scenario (`tas replay --scenario-out`). Pure, no I/O.

What the history becomes, and what it assumes (docs/replay.md says the same to the user):

- **nodes**: each node with a `kube_node_status_allocatable` record, at its last recorded CPU,
  memory and pods. Nodes without one are left out (the simulator needs their size).
- **workloads**: one per owner (`kube_pod_owner`; a StatefulSet stays one, every other kind is
  modelled as a ReplicaSet); a pod without an owner is a workload of its own. Replicas are the
  pods running at the window's start; requests are the first pod's (summed over containers);
  the `telemetry-policy` label is kept.
- **usage**: a workload's CPU and memory are `trace` profiles of the mean over its running pods
  at each step (cAdvisor's `container_cpu_usage_seconds_total` rate and
  `container_memory_working_set_bytes`), at most `MAX_POINTS` points. A step where no pod has a
  value is skipped (the trace holds between points); a workload with no usage recorded at all
  uses its requests as steady usage, and is named in the scenario's description.
- **events**: a `scale` event wherever the number of a workload's running pods changes.
- **node metrics**: the policies' metrics that the simulator does not compute itself (not
  pressure nor utilization: `gauges`, e.g. `health_metric`) start at each node's first
  recorded value, and a `set-health` event sets them wherever the recorded value changes; a
  missing value holds the last one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from tas.types import MetricName, NodeName
from tas_replay.history import History, PodHistory, Steps

MAX_POINTS = 2000
_NAME = re.compile(r"[^a-z0-9-]+")


def _workload_name(text: str, taken: set[str]) -> str:
    base = _NAME.sub("-", text.lower()).strip("-")[:38].strip("-") or "workload"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def _running(pods: Sequence[PodHistory], index: int) -> list[PodHistory]:
    return [p for p in pods if p.node_at(index) is not None]


def _counts(pods: Sequence[PodHistory], steps: int) -> list[int]:
    """How many of `pods` run at each step (from their spans: no pass over pods per step)."""
    change = [0] * (steps + 1)
    for pod in pods:
        for first, last, _ in pod.spans:
            change[first] += 1
            change[last + 1] -= 1
    counts, running = [], 0
    for delta in change[:steps]:
        running += delta
        counts.append(running)
    return counts


def _trace(
    pods: Sequence[PodHistory], history: History, series: str, every: int
) -> list[list[float]]:
    window = history.window
    points: list[list[float]] = []
    for index in range(0, window.count, every):
        values = [
            v
            for p in _running(pods, index)
            if (s := _steps(p, series)) is not None and (v := s[index]) is not None
        ]
        if values:
            points.append([window.time(index) - window.start, max(0.0, sum(values) / len(values))])
    return points


def _steps(pod: PodHistory, series: str) -> Steps | None:
    return pod.cpu if series == "cpu" else pod.memory


def _gauges(
    history: History, gauges: Collection[MetricName], nodes: Collection[str]
) -> tuple[dict[str, dict[str, float]], list[dict[str, Any]]]:
    """Each node's starting value of each gauge, and a `set-health` event per change (the
    nodes changing to one value at one step in one event)."""
    window = history.window
    starting: dict[str, dict[str, float]] = {}
    changes: dict[tuple[int, MetricName, float], list[NodeName]] = {}
    for metric in sorted(gauges):
        for node, steps in sorted(history.metrics.get(metric, {}).items()):
            if node not in nodes:
                continue
            last: float | None = None
            for index, value in enumerate(steps):
                if value is None or value == last:
                    continue
                if last is None and index == 0:
                    starting.setdefault(node, {})[metric] = value
                else:
                    changes.setdefault((index, metric, value), []).append(node)
                last = value
    events = [
        {
            "at": window.time(index) - window.start,
            "set-health": {"nodes": sorted(names), "metric": metric, "value": value},
        }
        for (index, metric, value), names in sorted(changes.items())
    ]
    return starting, events


def build_scenario(
    history: History,
    *,
    name: str,
    policies: Sequence[Mapping[str, Any]] = (),
    gauges: Collection[MetricName] = (),
) -> dict[str, Any]:
    """The scenario document (see the module for what it assumes); `gauges` are the metrics
    carried as node metrics set by events."""
    window = history.window
    duration = window.end - window.start
    every = max(1, math.ceil(window.count / MAX_POINTS))
    nodes = [
        {
            "name": node,
            "cpu": round(alloc.get("cpu", 0.0), 3),
            "memory": int(alloc.get("memory", 0.0)),
            **({"pods": int(alloc["pods"])} if alloc.get("pods", 0) >= 1 else {}),
        }
        for node, alloc in sorted(history.allocatable.items())
        if alloc.get("cpu", 0) > 0 and alloc.get("memory", 0) > 0
    ]
    sized = {str(node["name"]) for node in nodes}
    starting, gauge_events = _gauges(history, gauges, sized)
    for node in nodes:
        if starting.get(str(node["name"])):
            node["metrics"] = starting[str(node["name"])]
    groups: dict[tuple[str, str, str], list[PodHistory]] = {}
    for pod in history.pods:
        if pod.owner_kind and pod.owner_name:
            key = (pod.namespace, pod.owner_kind, pod.owner_name)
        else:
            key = (pod.namespace, "Pod", pod.name)
        groups.setdefault(key, []).append(pod)
    taken: set[str] = set()
    workloads: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = list(gauge_events)
    without_usage: list[str] = []
    for (namespace, kind, owner), pods in sorted(groups.items()):
        workload = _workload_name(owner, taken)
        first = pods[0]
        cpu_request = first.requests.get("cpu", 0.0)
        memory_request = first.requests.get("memory", 0.0)
        usage: dict[str, Any] = {}
        for resource, request in (("cpu", cpu_request), ("memory", memory_request)):
            points = _trace(pods, history, resource, every)
            if points:
                usage[resource] = {"profile": "trace", "points": points}
            else:
                usage[resource] = {"profile": "steady", "value": request}
                without_usage.append(f"{namespace}/{owner} {resource}")
        counts = _counts(pods, window.count)
        entry: dict[str, Any] = {
            "name": workload,
            "namespace": namespace,
            "kind": "StatefulSet" if kind == "StatefulSet" else "ReplicaSet",
            "replicas": counts[0],
            "requests": {"cpu": round(cpu_request, 3), "memory": int(memory_request)},
            "usage": usage,
        }
        if first.policy:
            entry["labels"] = {"telemetry-policy": first.policy}
        workloads.append(entry)
        for index in range(1, window.count):
            if counts[index] != counts[index - 1]:
                at = window.time(index) - window.start
                events.append(
                    {"at": at, "scale": {"workload": workload, "replicas": counts[index]}}
                )
    description = f"Recorded by tas replay from {window.start:.0f} to {window.end:.0f} (Unix s)."
    if without_usage:
        description += " No usage recorded, requests used instead: " + ", ".join(without_usage)
    document: dict[str, Any] = {
        "name": name,
        "description": description,
        "duration": duration,
        # The simulator's default warm-up (10 min) would swallow a short window.
        "warmup": min(600.0, duration / 4),
        "nodes": nodes,
        "workloads": workloads,
    }
    if policies:
        document["policies"] = [dict(policy) for policy in policies]
    if events:
        document["events"] = sorted(events, key=lambda e: e["at"])
    return document
