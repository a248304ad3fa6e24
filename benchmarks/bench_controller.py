"""The policy controller at scale: 5,000 nodes x 100 policies (3 rules each).

Figures:
- evaluation CPU: one cycle's pure part (desired labels of every policy, node and pod patches,
  statuses), process CPU time, median of several runs, next to a floor (one pass building as
  many dict entries as there are node x rule values) and against the absolute goal (100 ms);
- writes: the first cycle patches exactly the nodes whose labels change; a steady cycle writes
  nothing and reads the nodes once (never a LIST per policy); a metric change on 1% of the
  nodes patches exactly the nodes whose labels changed.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Mapping, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from benchmarks.report import Figure, print_figure
from embedded.cluster import InMemoryCluster, WriteKind
from policy_controller.desired import compute_desired
from policy_controller.diff import NodeDiffer, diff_nodes, diff_pods
from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.status import policy_status
from tas.cluster.model import Node, Pod
from tas.metrics.static import StaticMetricView
from tas.policies.model import parse_policy
from tas.policies.store import PolicyStore
from tas.types import Namespace, NodeName

NODES = 5_000
POLICIES = 100
RULES = 3
METRICS = 30
PODS = 10_000
GOAL_MS = 100.0
RUNS = 5


class CountingCluster(InMemoryCluster):
    """The in-memory cluster, counting the reads and the writes a cycle makes."""

    def __init__(self) -> None:
        self.writes = 0
        super().__init__(before_write=self._count_write)
        self.node_lists = 0
        self.pod_lists = 0

    def _count_write(self, kind: WriteKind) -> None:
        self.writes += 1

    def list_nodes(self) -> Sequence[Node]:
        self.node_lists += 1
        return super().list_nodes()

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]:
        self.pod_lists += 1
        return super().list_pods(node=node)


def _policy_documents(rng: random.Random) -> list[dict[str, Any]]:
    documents = []
    for index in range(POLICIES):
        rules: list[dict[str, Any]] = [
            {
                "metricname": f"metric_{rng.randrange(METRICS)}",
                "operator": "GreaterThan",
                # Distinct targets, so no two rules are the same comparison.
                "target": f"{98 + rng.random() * 1.9:.4f}",
            }
            for _ in range(RULES)
        ]
        if index % 2 == 0:
            strategies: dict[str, Any] = {"deschedule": {"rules": rules}}
        else:
            labeled = [{**r, "labels": [f"level{i}=high"]} for i, r in enumerate(rules)]
            strategies = {"labeling": {"rules": labeled}}
        documents.append(
            {
                "apiVersion": "telemetry.intel.com/v1alpha1",
                "kind": "TASPolicy",
                "metadata": {"name": f"policy-{index:03d}", "namespace": f"team-{index % 10}"},
                "spec": {"strategies": strategies},
            }
        )
    return documents


def _metric_values(rng: random.Random, nodes: Sequence[NodeName]) -> dict[str, dict[str, float]]:
    return {f"metric_{m}": {n: rng.uniform(0, 100) for n in nodes} for m in range(METRICS)}


def _build() -> tuple[CountingCluster, PolicyStore, StaticMetricView, list[NodeName]]:
    rng = random.Random(7)
    cluster = CountingCluster()
    names = [NodeName(f"node-{i:05d}") for i in range(NODES)]
    for name in names:
        # A realistic node carries a dozen labels the controller must scan and leave alone.
        labels = {f"example.com/label-{j}": "x" for j in range(10)}
        cluster.add_node(Node(name, labels={**labels, "kubernetes.io/hostname": name}))
    documents = _policy_documents(rng)
    for document in documents:
        cluster.apply_policy(document)
    for index in range(PODS):
        linked = documents[(index % POLICIES) // 2 * 2]["metadata"]  # a deschedule policy
        labels = {"app": f"app-{index % 50}"}
        if index % 4 == 0:
            labels["telemetry-policy"] = linked["name"]
        namespace = Namespace(linked["namespace"] if index % 4 == 0 else "default")
        cluster.add_pod(
            Pod(namespace, f"pod-{index:05d}", labels=labels, node_name=names[index % NODES])
        )
    store = PolicyStore()
    store.replace(parse_policy(d) for d in documents)
    view = StaticMetricView(_metric_values(rng, names))
    return cluster, store, view, names


def _changed_nodes(
    before: Mapping[NodeName, Mapping[str, str]], after: Mapping[NodeName, Mapping[str, str]]
) -> int:
    return sum(1 for n in before.keys() | after.keys() if before.get(n, {}) != after.get(n, {}))


def _evaluation_cpu(
    cluster: InMemoryCluster, store: PolicyStore, view: StaticMetricView, *, warm: bool
) -> float:
    """Median process CPU seconds of one cycle's pure part, on the cycle's own inputs.

    `warm`: the node diff remembers nodes found right in the previous cycle (the steady state);
    otherwise every node is diffed from scratch (a cold start, or every node changed).
    """
    nodes = cluster.list_nodes()
    pods = cluster.list_pods()
    policies = store.snapshot().policies
    columns = view.columns()
    differ = NodeDiffer()
    if warm:
        desired = compute_desired(policies, columns, frozenset(n.name for n in nodes))
        differ.diff(nodes, desired.node_labels, desired.deschedule_keys)
    timings = []
    for _ in range(RUNS):
        started = time.process_time()
        desired = compute_desired(policies, columns, frozenset(n.name for n in nodes))
        if warm:
            differ.diff(nodes, desired.node_labels, desired.deschedule_keys)
        else:
            diff_nodes(nodes, desired.node_labels, desired.deschedule_keys)
        violating = {
            k: e.deschedule.keys() for k, e in desired.evaluations.items() if e.has_deschedule
        }
        diff_pods(pods, violating)
        for evaluation in desired.evaluations.values():
            policy_status(evaluation)
        timings.append(time.process_time() - started)
    return statistics.median(timings)


def _desired_cpu(cluster: InMemoryCluster, store: PolicyStore, view: StaticMetricView) -> float:
    """Median process CPU seconds of evaluating every policy and merging labels per node."""
    names = frozenset(n.name for n in cluster.list_nodes())
    policies = store.snapshot().policies
    columns = view.columns()
    timings = []
    for _ in range(RUNS):
        started = time.process_time()
        compute_desired(policies, columns, names)
        timings.append(time.process_time() - started)
    return statistics.median(timings)


def _floor_cpu(view: StaticMetricView, store: PolicyStore) -> float:
    """One pass per rule over its metric's values, building one dict entry per value."""
    columns = view.columns()
    rules = [
        rule
        for policy in store.snapshot().policies.values()
        for strategy in policy.strategies.values()
        for rule in strategy.rules
    ]
    timings = []
    for _ in range(RUNS):
        started = time.process_time()
        for rule in rules:
            {node: value for node, value in columns[rule.metricname].items()}  # noqa: C416
        timings.append(time.process_time() - started)
    return statistics.median(timings)


def main() -> None:
    cluster, store, view, names = _build()
    reconciler = Reconciler(
        cluster=cluster,
        policies=store,
        metric_view=view,
        metrics=ControllerMetrics(CollectorRegistry()),
        status_refresh_cycles=0,
    )
    print(f"  {NODES} nodes, {POLICIES} policies x {RULES} rules, {PODS} pods", flush=True)

    policies = store.snapshot().policies
    first = compute_desired(policies, view.columns(), frozenset(names)).node_labels
    report = reconciler.reconcile()
    print_figure(
        Figure(
            "first cycle node writes",
            report.node_writes,
            "writes",
            floor=_changed_nodes({}, first),
            floor_name="nodes whose labels change",
            max_ratio=1.0,
            min_value=_changed_nodes({}, first),
        )
    )

    floor = _floor_cpu(view, store) * 1000
    floor_name = f"{NODES * POLICIES * RULES:,} dict entries, one pass per rule"
    for name, value in (
        ("policy evaluation CPU (rules + per-node merge)", _desired_cpu(cluster, store, view)),
        (
            "steady cycle evaluation CPU (+ diffs, statuses)",
            _evaluation_cpu(cluster, store, view, warm=True),
        ),
        (
            "cold cycle evaluation CPU (every node diffed)",
            _evaluation_cpu(cluster, store, view, warm=False),
        ),
    ):
        print_figure(
            Figure(name, value * 1000, "ms", floor=floor, floor_name=floor_name, max_value=GOAL_MS)
        )

    cluster.writes = 0
    cluster.node_lists = cluster.pod_lists = 0
    cycles = []
    for _ in range(RUNS):
        cpu = time.process_time()
        steady = reconciler.reconcile()
        cycles.append(time.process_time() - cpu)
        assert steady.ran
    cpu = statistics.median(cycles)
    writes = cluster.writes
    print_figure(Figure(f"writes in {RUNS} steady cycles", writes, "writes", max_value=0))
    lists = cluster.node_lists / RUNS
    print_figure(Figure("node LISTs per steady cycle", lists, "lists", max_value=1))
    print_figure(
        Figure("steady cycle CPU, cluster reads included", cpu * 1000, "ms", max_value=GOAL_MS)
    )

    rng = random.Random(11)
    moved = rng.sample(names, NODES // 100)
    for metric, column in list(view.columns().items()):
        values: dict[str, float] = {str(node): value for node, value in column.items()}
        for node in moved:
            values[node] = rng.uniform(0, 100)
        view.set_column(metric, values)
    after = compute_desired(policies, view.columns(), frozenset(names)).node_labels
    cluster.writes = 0
    changed = reconciler.reconcile()
    expected = _changed_nodes(first, after)
    print_figure(
        Figure(
            "node writes after new values on 1% of nodes",
            changed.node_writes,
            "writes",
            floor=expected,
            floor_name="nodes whose labels change",
            max_ratio=1.0,
            min_value=expected,
        )
    )


if __name__ == "__main__":
    main()
