"""`tas replay`'s pure core: 7 days at 30 s steps, 500 nodes, 20 policies; goal <= 60 s.

The history is built in memory (three metrics per node, a slow wave with a few nodes crossing
the thresholds for hours, a fleet-wide jump for an hour that trips the breaker, 2,000 labelled
pods), so the figure is the replay itself: per step, the metric view, the rule engine over
every policy and the breaker. The range queries are Prometheus's time, not ours.

Figures, next to a floor measured in the same run: building the per-step metric view alone
(what any replay must do before the first rule is evaluated).
"""

from __future__ import annotations

import math
import random
import time

from benchmarks.report import Figure, print_figure
from tas.policies.model import TASPolicy, parse_policy
from tas.types import MetricName, NodeName
from tas_replay.evaluate import replay_policies
from tas_replay.history import History, PodHistory, StepColumns, Steps, Window

NODES = 500
POLICIES = 20
DAYS = 7
STEP = 30.0
METRICS = (
    MetricName("health_metric"),
    MetricName("cpu_pressure"),
    MetricName("memory_utilization"),
)


def make_policies(count: int = POLICIES) -> list[TASPolicy]:
    policies = []
    for i in range(count):
        metric = METRICS[i % len(METRICS)]
        target = 0.6 + 0.01 * i
        rule = {"metricname": metric, "operator": "GreaterThan", "target": target}
        policies.append(
            parse_policy(
                {
                    "apiVersion": "telemetry.intel.com/v1alpha1",
                    "kind": "TASPolicy",
                    "metadata": {"name": f"policy-{i}", "namespace": "default"},
                    "spec": {
                        "strategies": {
                            "deschedule": {"rules": [rule]},
                            "dontschedule": {"rules": [rule]},
                            "scheduleonmetric": {"rules": [rule]},
                        }
                    },
                }
            )
        )
    return policies


def make_history(nodes: int = NODES, days: float = DAYS, step: float = STEP) -> History:
    window = Window(0.0, days * 86400.0, step)
    count = window.count
    rng = random.Random(7)
    jump = range(count // 2 - int(3600 / step), count // 2)  # an hour, mid-window
    metrics: dict[MetricName, dict[NodeName, Steps]] = {}
    for m, metric in enumerate(METRICS):
        columns: dict[NodeName, Steps] = {}
        for n in range(nodes):
            phase = rng.random() * 2 * math.pi
            hot = n % 50 == m  # a few nodes cross the thresholds for hours each day
            amplitude = 0.45 if hot else 0.2
            series: Steps = [
                0.35 + amplitude * math.sin(phase + 2 * math.pi * i * step / 86400)
                for i in range(count)
            ]
            for i in jump:
                series[i] = 0.95
            if n % 97 == 0:  # a scrape gap: missing for six hours
                series[count // 2 : count // 2 + int(6 * 3600 / step)] = [None] * int(
                    6 * 3600 / step
                )
            columns[NodeName(f"node-{n:03d}")] = series
        metrics[metric] = columns
    pods = []
    for p in range(4 * nodes):
        node = NodeName(f"node-{p % nodes:03d}")
        pods.append(
            PodHistory(
                "default",
                f"pod-{p}",
                [(0, count - 1, node)],
                policy=f"policy-{p % POLICIES}",
                started=0.0,
            )
        )
    return History(window, metrics, pods)


def main() -> None:
    history = make_history()
    policies = make_policies()
    started = time.perf_counter()
    steps = StepColumns(history.metrics)
    for index in range(history.window.count):
        steps.at(index)
    floor = time.perf_counter() - started
    started = time.perf_counter()
    replay = replay_policies(policies, history)
    seconds = time.perf_counter() - started
    evictions = sum(len(p.would_evict) for p in replay.policies.values())
    print(
        f"{history.window.count:,} steps, {NODES} nodes, {POLICIES} policies: "
        f"{evictions} would-be evictions"
    )
    print_figure(
        Figure(
            "replay 7 days at 30 s, 500 nodes, 20 policies",
            seconds,
            "s",
            floor=floor,
            floor_name="the per-step metric view alone",
            max_value=60.0,
        )
    )


if __name__ == "__main__":
    main()
