"""Builders for policies, metric views, nodes, pods and time, so tests state only what matters
to them. Node and pod builders take an optional mutator (`apply=`), as STYLE.md asks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from tas.cluster.model import Node, OwnerReference, Pod, QoSClass, Taint
from tas.policies.model import TASPolicy, parse_policy
from tas.types import MetricColumns, MetricName, Namespace, NodeName
from tas.vocabulary import POLICY_LABEL
from tas_inmemory.cluster import InMemoryCluster

GiB = 2.0**30
#: The shipped health-metric demo policy, the one most tests apply.
HEALTH_POLICY = Path(__file__).resolve().parents[1] / "deploy" / "policies" / "health-policy.yaml"


def health_policy_document() -> dict[str, Any]:
    """The shipped demo policy (demo-policy in health-metric-demo), as a document to apply."""
    document: dict[str, Any] = yaml.safe_load(HEALTH_POLICY.read_text(encoding="utf-8"))
    return document


def rule(metric: str, operator: str, target: Any = 0, labels: Sequence[str] = ()) -> dict[str, Any]:
    body: dict[str, Any] = {"metricname": metric, "operator": operator, "target": target}
    if labels:
        body["labels"] = list(labels)
    return body


def policy_document(
    name: str = "p",
    *,
    namespace: str = "default",
    **strategies: Sequence[Mapping[str, Any]] | tuple[str, Sequence[Mapping[str, Any]]],
) -> dict[str, Any]:
    """A TASPolicy document; each strategy is a rule list or `(logicalOperator, rules)`."""
    body: dict[str, Any] = {}
    for strategy, value in strategies.items():
        if isinstance(value, tuple):
            operator, rules = value
            body[strategy] = {"logicalOperator": operator, "rules": list(rules)}
        else:
            body[strategy] = {"rules": list(value)}
    return {
        "apiVersion": "telemetry.intel.com/v1alpha1",
        "kind": "TASPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"strategies": body},
    }


def make_policy(
    name: str = "p",
    *,
    namespace: str = "default",
    **strategies: Sequence[Mapping[str, Any]] | tuple[str, Sequence[Mapping[str, Any]]],
) -> TASPolicy:
    return parse_policy(policy_document(name, namespace=namespace, **strategies))


def metrics(values: Mapping[str, Mapping[str, float]]) -> MetricColumns:
    return {
        MetricName(metric): {NodeName(node): float(v) for node, v in column.items()}
        for metric, column in values.items()
    }


def nodes(*names: str) -> list[NodeName]:
    return [NodeName(n) for n in names]


def make_node(
    name: str,
    *,
    cpu: float = 8.0,
    memory: float = 32 * GiB,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    taints: Sequence[Taint] = (),
    hostname: bool = True,
    apply: Callable[[Node], Node] | None = None,
) -> Node:
    """A Ready node with `cpu` cores, `memory` bytes and 110 pods allocatable, labelled with its
    hostname as kubelet labels it (unless `hostname=False`); `apply` changes anything else."""
    node = Node(
        name=NodeName(name),
        labels={**({"kubernetes.io/hostname": name} if hostname else {}), **(labels or {})},
        annotations=dict(annotations or {}),
        taints=tuple(taints),
        allocatable={"cpu": cpu, "memory": memory, "pods": 110.0},
    )
    return apply(node) if apply is not None else node


def make_pod(
    name: str,
    *,
    node: str | None = None,
    namespace: str = "default",
    cpu: float = 0.0,
    memory: float = 0.0,
    labels: Mapping[str, str] | None = None,
    policy: str | None = None,
    owner: str | None = None,
    owner_kind: str = "ReplicaSet",
    phase: str | None = None,
    created: datetime | None = None,
    apply: Callable[[Pod], Pod] | None = None,
) -> Pod:
    """A pod, Running on `node` (Pending without one), linked to `policy` (the
    `telemetry-policy` label), controlled by `owner`, requesting what is given (Burstable when
    it requests anything, BestEffort otherwise); `apply` changes anything else."""
    all_labels = dict(labels or {})
    if policy is not None:
        all_labels[POLICY_LABEL] = policy
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    pod = Pod(
        namespace=Namespace(namespace),
        name=name,
        uid=f"uid-{namespace}-{name}",
        labels=all_labels,
        node_name=NodeName(node) if node is not None else None,
        phase=phase or ("Running" if node is not None else "Pending"),
        owners=(OwnerReference(owner_kind, owner, controller=True),) if owner else (),
        requests=requests,
        qos_class=QoSClass.BURSTABLE if requests else QoSClass.BEST_EFFORT,
        creation_timestamp=created,
    )
    return apply(pod) if apply is not None else pod


def cluster_of(*nodes: Node, pods: Sequence[Pod] = ()) -> InMemoryCluster:
    """An in-memory cluster holding `nodes` and `pods`."""
    cluster = InMemoryCluster()
    for node in nodes:
        cluster.add_node(node)
    for pod in pods:
        cluster.add_pod(pod)
    return cluster


class ManualClock:
    """A `tas.clock.Clock` that moves only when told to (`advance`, `epoch = ...`, `sleep`)."""

    def __init__(self, start: datetime | float = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)) -> None:
        self.current = start if isinstance(start, datetime) else datetime.fromtimestamp(start, UTC)
        self.slept: list[float] = []

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        self.slept.append(seconds)
        self.advance(seconds)
        return stop.is_set()

    def advance(self, seconds: float) -> None:
        self.current += timedelta(seconds=seconds)

    @property
    def epoch(self) -> float:
        """Unix seconds: the time of metric samples and textfiles."""
        return self.current.timestamp()

    @epoch.setter
    def epoch(self, seconds: float) -> None:
        self.current = datetime.fromtimestamp(seconds, UTC)
