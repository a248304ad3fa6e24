"""The health-metric demo's world: TAS's demo app on five nodes, among workloads that move.

What `make run` (and its dashboard) starts from, as TAS's demo ships it plus what a real
cluster has around it:

- nodes `node-a` .. `node-e` (4 cores, 8 GiB each), `node-b` starting unhealthy (health 1:
  nothing new is scheduled there), the others healthy (0);
- the demo app: a ReplicaSet whose pods link `demo-policy` and must avoid nodes labelled
  `demo-policy=violating` (required node affinity, as `deploy/health-metric-demo/demo-app.yaml`);
- background workloads with usage profiles from the workload model (`tas_inmemory.workload`):
  a bursty web tier, batch jobs on a repeating trace, a steady cache, and a node agent per node
  (a DaemonSet, never evicted), so the CPU utilization and pressure charts move;
- the demo's controls, as data the dashboard and the terminal share: scaling a ReplicaSet,
  adding CPU load to a node (a bare "stress" pod pinned to it, invisible to the scheduler's
  request arithmetic, as a noisy neighbour is) and setting a node's health value.

A pod's usage comes from its owner's profile; a stress pod carries its cores in an annotation.

`describe_state` (and `TerminalState`, `tas run --show-state`) prints the state the demo is
about: each node's health, its violating labels and the demo pods on it.
"""

from __future__ import annotations

import difflib
import itertools
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tas.adapters.metrics.textfile import write_node_series
from tas.cluster.interface import NotFoundError
from tas.cluster.model import Node, NodeSelectorTerm, OwnerReference, Pod, QoSClass, Requirement
from tas.types import MetricColumns, MetricName, Namespace, NodeName
from tas.vocabulary import POD_VIOLATION_LABEL, POLICY_LABEL, TELEMETRY_RESOURCE, VIOLATING
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.live_telemetry import PodProfile
from tas_inmemory.workload import ProfileKind, UsageProfile, steady

NAMESPACE = Namespace("health-metric-demo")
POLICY = "demo-policy"
NODES = tuple(NodeName(f"node-{letter}") for letter in "abcde")
NODE_CORES = 4.0
NODE_MEMORY = 8 * 2**30
#: The demo's starting values: node-b is unhealthy enough not to take new pods.
START_HEALTH: Mapping[NodeName, float] = {
    node: (1.0 if node == "node-b" else 0.0) for node in NODES
}
HEALTH_SERIES = "node_health_metric"
#: Where stress pods live, and the annotation that says how many cores one burns.
LOAD_NAMESPACE = Namespace("load")
LOAD_CORES_ANNOTATION = "demo.telemetry.aware.scheduling/cpu-cores"
#: Limits on what a control may ask for, so a typo cannot stall the demo.
MAX_REPLICAS = 40
MAX_LOAD_CORES = 16.0
MAX_LOAD_PODS_PER_NODE = 8
MI = 2**20


class DemoError(Exception):
    """A control the demo cannot carry out; `status` is the HTTP status that fits it."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def unknown(kind: str, name: str, known: Iterable[str]) -> DemoError:
    """A 404 for a name the demo does not have, in words: the closest known one (whatever the
    case typed) and every one, so a typo is fixed without a second look."""
    names = sorted(known)
    lowered = {n.lower(): n for n in names}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    guess = f" (did you mean {lowered[close[0]]}?)" if close else ""
    listed = f"; the {kind}s: {', '.join(names)}" if names else ""
    return DemoError(f"no {kind} named {name!r}{guess}{listed}", status=404)


@dataclass(frozen=True, slots=True)
class Workload:
    """A ReplicaSet (or a DaemonSet) and the usage of each of its pods."""

    namespace: Namespace
    name: str  # the Deployment's name, as a user would say it
    replica_set: str  # the pods' name prefix and controller
    replicas: int
    cpu: UsageProfile
    memory: UsageProfile
    requests: Mapping[str, float]
    labels: Mapping[str, str] = field(default_factory=dict)
    qos: QoSClass = QoSClass.BURSTABLE
    daemon: bool = False

    @property
    def kind(self) -> str:
        return "DaemonSet" if self.daemon else "ReplicaSet"


def _bursty(mean: float, peak: float, period: float, jitter: float) -> UsageProfile:
    return UsageProfile(ProfileKind.BURSTY, mean=mean, peak=peak, period=period, jitter=jitter)


DEMO_APP = Workload(
    namespace=NAMESPACE,
    name="demo-app",
    replica_set="demo-app-6558d5ffbf",
    replicas=4,
    cpu=_bursty(0.25, 0.6, 20.0, 0.5),
    memory=steady(64 * MI),
    requests={"cpu": 0.1, "memory": 64 * MI, TELEMETRY_RESOURCE: 1.0},
    labels={"app": "demo", POLICY_LABEL: POLICY},
)

#: The rest of the cluster: enough movement to read the charts, room to rebalance.
BACKGROUND = (
    Workload(
        namespace=Namespace("shop"),
        name="web",
        replica_set="web-7c9d5b8f4",
        replicas=5,
        cpu=_bursty(0.45, 1.1, 30.0, 0.8),
        memory=steady(384 * MI),
        requests={"cpu": 0.25, "memory": 384 * MI},
        labels={"app": "web"},
    ),
    Workload(
        namespace=Namespace("shop"),
        name="batch",
        replica_set="batch-5f6b7d9c8",
        replicas=3,
        cpu=UsageProfile(
            ProfileKind.TRACE,
            points=((0, 0.15), (45, 1.1), (90, 1.1), (110, 0.15), (180, 0.15)),
            loop=True,
        ),
        memory=steady(512 * MI),
        requests={"cpu": 0.5, "memory": 512 * MI},
        labels={"app": "batch"},
    ),
    Workload(
        namespace=Namespace("shop"),
        name="cache",
        replica_set="cache-6d8f7b5c9",
        replicas=2,
        cpu=steady(0.6),
        memory=steady(1536 * MI),
        requests={"cpu": 0.5, "memory": 1536 * MI},
        labels={"app": "cache"},
        qos=QoSClass.GUARANTEED,
    ),
    Workload(
        namespace=Namespace("kube-system"),
        name="node-agent",
        replica_set="node-agent",
        replicas=0,  # one per node
        cpu=UsageProfile(ProfileKind.IDLE, value=0.03),
        memory=steady(48 * MI),
        requests={"cpu": 0.05, "memory": 48 * MI},
        labels={"app": "node-agent"},
        daemon=True,
    ),
)

WORKLOADS: Mapping[str, Workload] = {w.replica_set: w for w in (DEMO_APP, *BACKGROUND)}


def write_start_metrics(directory: Path) -> None:
    for node, value in START_HEALTH.items():
        write_node_series(directory, node, {HEALTH_SERIES: value})


def _pod(workload: Workload, suffix: str, *, node: NodeName | None = None) -> Pod:
    affinity: tuple[NodeSelectorTerm, ...] = ()
    if POLICY_LABEL in workload.labels:
        policy = workload.labels[POLICY_LABEL]
        affinity = (
            NodeSelectorTerm(match_expressions=(Requirement(policy, "NotIn", (VIOLATING,)),)),
        )
    owner = OwnerReference(
        workload.kind, workload.replica_set, f"uid-{workload.replica_set}", controller=True
    )
    return Pod(
        namespace=workload.namespace,
        name=f"{workload.replica_set}-{suffix}",
        labels=dict(workload.labels),
        node_name=node,
        phase="Running" if node is not None else "Pending",
        owners=(owner,),
        qos_class=workload.qos,
        requests=dict(workload.requests),
        required_node_affinity=affinity,
    )


def demo_pod(index: int) -> Pod:
    """A pending demo-app pod, owned by its ReplicaSet so an evicted one comes back."""
    return _pod(DEMO_APP, f"{index:05d}")


def build_demo_cluster(replicas: int = DEMO_APP.replicas) -> InMemoryCluster:
    cluster = InMemoryCluster()
    for node in NODES:
        cluster.add_node(
            Node(
                name=node,
                labels={"kubernetes.io/hostname": node, "kubernetes.io/os": "linux"},
                allocatable={"cpu": NODE_CORES, "memory": float(NODE_MEMORY), "pods": 110.0},
            )
        )
    for index in range(replicas):
        cluster.add_pod(demo_pod(index))
    for workload in BACKGROUND:
        if workload.daemon:
            for node in NODES:
                cluster.add_pod(_pod(workload, node.removeprefix("node-"), node=node))
        else:
            for index in range(workload.replicas):
                cluster.add_pod(_pod(workload, f"{index:05d}"))
    return cluster


def profile_of(pod: Pod) -> PodProfile | None:
    """A pod's usage: its owner's profiles, or a stress pod's cores; None when unknown."""
    cores = pod.annotations.get(LOAD_CORES_ANNOTATION)
    if cores is not None:
        return PodProfile(cpu=steady(float(cores)), memory=steady(16 * MI))
    owner = pod.controller
    workload = WORKLOADS.get(owner.name) if owner is not None else None
    if workload is None:
        return None
    return PodProfile(cpu=workload.cpu, memory=workload.memory)


# ------------------------------------------------------------------------------- controls


class DemoWorld:
    """The demo's controls on one cluster and one metrics directory (thread-safe: the cluster
    has its own lock, textfile writes are atomic and serialized by `write_node_series`)."""

    def __init__(self, cluster: InMemoryCluster, metrics_dir: Path, *, seed: int = 0) -> None:
        self.cluster = cluster
        self.metrics_dir = metrics_dir
        self._rng = random.Random(seed)
        self._load_ids = itertools.count(1)

    def set_health(self, node: str, value: float) -> None:
        """What `tas set-health NODE VALUE` does, for a node of this cluster."""
        self._node(node)
        if isinstance(value, bool) or not math.isfinite(value):
            raise DemoError(f"value must be a finite number, not {value!r}", status=422)
        write_node_series(self.metrics_dir, node, {HEALTH_SERIES: value})

    def workloads(self) -> list[dict[str, object]]:
        """Every scalable workload: its name, desired and current replicas."""
        pods = self.cluster.list_pods()
        return [
            {
                "name": w.name,
                "namespace": w.namespace,
                "replicaSet": w.replica_set,
                "pods": sum(1 for p in pods if _owned_by(p, w)),
                "scalable": not w.daemon,
            }
            for w in WORKLOADS.values()
        ]

    def scale(self, name: str, replicas: int) -> int:
        """Make `name` have `replicas` pods (pending ones go first when shrinking); returns
        the previous count."""
        workload = next((w for w in WORKLOADS.values() if w.name == name), None)
        if workload is None:
            # "workload", the page's word (its Workloads panel), not the Kubernetes kind.
            raise unknown("workload", name, (w.name for w in WORKLOADS.values()))
        if workload.daemon:
            raise DemoError(f"{name} is a DaemonSet: one pod per node, not scalable", status=409)
        if isinstance(replicas, bool) or not 0 <= replicas <= MAX_REPLICAS:
            raise DemoError(f"replicas must be 0..{MAX_REPLICAS}, not {replicas!r}", status=422)
        pods = [p for p in self.cluster.list_pods() if _owned_by(p, workload)]
        before = len(pods)
        for _ in range(replicas - before):
            self.cluster.add_pod(_pod(workload, self._free_suffix(workload)))
        # Shrinking removes pending pods first, then the newest, as a ReplicaSet does.
        doomed = sorted(
            pods,
            key=lambda p: (p.node_name is not None, -(p.creation_timestamp or _EPOCH).timestamp()),
        )[: max(0, before - replicas)]
        self._remove(doomed)
        return before

    def add_load(self, node: str, cores: float) -> Pod:
        """Pin a stress pod burning `cores` CPUs to `node` (it requests nothing)."""
        self._node(node)
        if isinstance(cores, bool) or not (0 < cores <= MAX_LOAD_CORES):
            raise DemoError(
                f"cores must be > 0 and <= {MAX_LOAD_CORES:g}, not {cores!r}", status=422
            )
        on_node = self.load_pods(node)
        if len(on_node) >= MAX_LOAD_PODS_PER_NODE:
            raise DemoError(
                f"{node} already has {len(on_node)} stress pods; clear its load first", status=409
            )
        pod = Pod(
            namespace=LOAD_NAMESPACE,
            name=f"stress-{node}-{next(self._load_ids)}",
            labels={"app": "stress"},
            annotations={LOAD_CORES_ANNOTATION: f"{cores:g}"},
            node_name=NodeName(node),
            phase="Running",
            qos_class=QoSClass.BEST_EFFORT,
        )
        return self.cluster.add_pod(pod)

    def clear_load(self, node: str) -> list[str]:
        """Remove every stress pod from `node`; returns their names."""
        self._node(node)
        return self._remove(self.load_pods(node))

    def load_pods(self, node: str) -> Sequence[Pod]:
        return [
            p
            for p in self.cluster.list_pods(node=NodeName(node))
            if LOAD_CORES_ANNOTATION in p.annotations
        ]

    def _remove(self, pods: Iterable[Pod]) -> list[str]:
        """Delete the pods; one gone meanwhile (evicted: its replacement counts next time) is
        skipped. Returns the names deleted."""
        removed = []
        for pod in pods:
            try:
                self.cluster.remove_pod(pod.namespace, pod.name)
            except NotFoundError:
                continue
            removed.append(pod.name)
        return removed

    def _node(self, node: str) -> Node:
        try:
            return self.cluster.get_node(NodeName(node))
        except NotFoundError:
            known = (str(n.name) for n in self.cluster.list_nodes())
            raise unknown("node", node, known) from None

    def _free_suffix(self, workload: Workload) -> str:
        alphabet = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes' name generator uses
        while True:
            suffix = "".join(self._rng.choice(alphabet) for _ in range(5))
            try:
                self.cluster.get_pod(workload.namespace, f"{workload.replica_set}-{suffix}")
            except NotFoundError:
                return suffix


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _owned_by(pod: Pod, workload: Workload) -> bool:
    owner = pod.controller
    return (
        owner is not None
        and owner.name == workload.replica_set
        and pod.namespace == workload.namespace
    )


# ------------------------------------------------------------------ the state, as printed


class TerminalState:
    """`--show-state`: the cluster state printed after every change (the page shows it too)."""

    def __init__(self, cluster: InMemoryCluster, view: Any, *, enabled: bool) -> None:
        self._cluster = cluster
        self._enabled = enabled
        self._shown = ""

    def update(self, columns: MetricColumns) -> None:
        if not self._enabled:
            return
        state = describe_state(self._cluster, columns)
        if state != self._shown:
            print(state, flush=True)
            self._shown = state


def describe_state(cluster: InMemoryCluster, columns: MetricColumns) -> str:
    """One line per node: health value, violating labels, and the demo pods on it."""
    lines = ["-- cluster state --"]
    health = columns.get(MetricName("health_metric"), {})
    pods = [p for p in cluster.list_pods() if POLICY_LABEL in p.labels]
    for node in cluster.list_nodes():
        value = health.get(node.name)
        labels = [f"{k}={v}" for k, v in sorted(node.labels.items()) if v == "violating"]
        on_node = [
            p.name
            + (
                f" [{POD_VIOLATION_LABEL}={p.labels[POD_VIOLATION_LABEL]}]"
                if POD_VIOLATION_LABEL in p.labels
                else ""
            )
            for p in pods
            if p.node_name == node.name
        ]
        lines.append(
            f"{node.name}: health={'?' if value is None else f'{value:g}'} "
            f"labels={','.join(labels) or '-'} pods={', '.join(on_node) or '-'}"
        )
    pending = [p.name for p in pods if p.node_name is None]
    if pending:
        lines.append(f"pending: {', '.join(pending)}")
    return "\n".join(lines)
