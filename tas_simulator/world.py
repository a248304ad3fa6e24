"""The modelled world of one run: the in-memory cluster, the workload model and the events.

Everything here is the same for every contender: the cluster the components act on
(`tas_inmemory.cluster`), the pods' usage (`tas_inmemory.workload`), the scenario's events, and the
bookkeeping the figures need (when pods were created, bound, evicted, killed).

A pod's usage is a *slot*: the usage stream of one replica of a workload. The slot travels in
a pod annotation, so when a pod is evicted and its controller creates a replacement (a copy of
the pod, annotation included), the replacement carries on the same usage on its new node, after
the start-up delay. The cluster's change notifications keep the slots' placement current.
"""

from __future__ import annotations

import dataclasses
import hashlib
import heapq
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from tas.cluster.interface import (
    ChangeType,
    ClusterChange,
    NotFoundError,
    ResourceKind,
)
from tas.cluster.model import (
    Node,
    OwnerReference,
    Pod,
    QoSClass,
    Taint,
    TaintEffect,
)
from tas.types import MetricColumns, MetricName, Namespace, NodeName, PodKey
from tas.vocabulary import VIRT_LAUNCHER
from tas_inmemory.cluster import InMemoryCluster
from tas_inmemory.workload import (
    UsageBank,
    memory_pressures,
    oom_victims,
    slot_seed,
    unit_hash,
)
from tas_simulator.clock import VirtualClock
from tas_simulator.fair_share import most_pods_when_balanced
from tas_simulator.pressure_model import ReadNoise, node_biases, pressures
from tas_simulator.scenario import (
    Event,
    EventKind,
    HealthEffectKind,
    NodeSpec,
    Scenario,
    WorkloadSpec,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Replicas per block in which a workload's usage shares are met exactly.
_BLOCK = 64

#: The kubelet's node-pressure eviction, as Kubernetes documents it (kubernetes.io/docs/
#: concepts/scheduling-eviction/node-pressure-eviction/): the default hard threshold
#: `memory.available<100Mi`, checked every `housekeeping-interval` (10s); while it is met the
#: node has the MemoryPressure condition, and for `eviction-pressure-transition-period` (5m)
#: after; the node lifecycle controller taints a node with that condition
#: `node.kubernetes.io/memory-pressure:NoSchedule` (taint-nodes-by-condition), so the scheduler
#: sends no new pod there. The kubelet evicts at most one pod per housekeeping pass
#: (kubernetes/kubernetes pkg/kubelet/eviction/eviction_manager.go `synchronize`), ranked:
#: pods whose usage exceeds their request first, then by priority (lowest first), then by
#: usage above the request (most first).
MEMORY_EVICTION_THRESHOLD = 100.0 * 2**20
HOUSEKEEPING_INTERVAL = 10.0
PRESSURE_TRANSITION_PERIOD = 300.0
MEMORY_PRESSURE_TAINT = Taint("node.kubernetes.io/memory-pressure", TaintEffect.NO_SCHEDULE)

#: A failed node (a set-health `effect: {fail-after: D}`), as Kubernetes meets it: the kubelet
#: stops posting the node's status, and after the node lifecycle controller's
#: `node-monitor-grace-period` (50s since Kubernetes 1.32, kubernetes/kubernetes#126287; 40s
#: before) its Ready condition turns Unknown and it is tainted `node.kubernetes.io/unreachable`,
#: NoSchedule and NoExecute. Every pod carries the DefaultTolerationSeconds admission plugin's
#: toleration of that NoExecute taint with `tolerationSeconds: 300` (kubernetes.io/docs/concepts/
#: scheduling-eviction/taint-and-toleration/, "Taint based evictions"), so 300s later the taint
#: manager deletes the pods, and a ReplicaSet creates their replacements at once (it does not
#: count terminating pods). A StatefulSet does not: its pod's deletion is never confirmed by the
#: gone kubelet, and the controller creates no pod of that identity until it is
#: (kubernetes.io/docs/tasks/run-application/force-delete-stateful-set-pod/), so it stays lost.
#: So does a pod that tolerates the taint itself (a toleration here has no tolerationSeconds:
#: it tolerates for ever).
NODE_MONITOR_GRACE_PERIOD = 50.0
UNREACHABLE_TOLERATION_SECONDS = 300.0
UNREACHABLE_TAINTS = (
    Taint("node.kubernetes.io/unreachable", TaintEffect.NO_SCHEDULE),
    Taint("node.kubernetes.io/unreachable", TaintEffect.NO_EXECUTE),
)

#: The pod annotation that names a pod's usage stream (copied into replacements).
SLOT_ANNOTATION = "simulator.telemetry-aware-scheduling/slot"
#: The true-value metric names the model offers (besides event-set node metrics).
CPU_UTILIZATION = MetricName("cpu_utilization")
CPU_PRESSURE = MetricName("cpu_pressure")
MEMORY_UTILIZATION = MetricName("memory_utilization")
MEMORY_PRESSURE = MetricName("memory_pressure")
#: The load average per CPU, at most 1 (`tas.metrics.names.Derived.CPU_LOAD`).
CPU_LOAD = MetricName("cpu_load")


@dataclass
class ModelState:
    """One step of the model: per node (index = world node index) and totals."""

    t: float
    present: npt.NDArray[np.bool_]
    cores: FloatArray
    demand: FloatArray
    utilization: FloatArray
    pressure: FloatArray
    memory_used: FloatArray
    memory_utilization: FloatArray
    memory_pressure: FloatArray
    #: Usage per slot at t (cores, bytes), and which slots ran.
    slot_cpu: FloatArray
    slot_memory: FloatArray
    running: npt.NDArray[np.bool_]
    #: The PSI reading node-exporter accumulates: `pressure` with the pressure model's noise.
    measured_pressure: FloatArray
    #: Per slot: the slots whose demand `displaced` counts (live, not running, not a VM still
    #: running on its source), for the figures' causes.
    displaced_slots: npt.NDArray[np.bool_]
    #: Cores: wanted by every live slot, not served for stalls, not served for not running.
    demand_total: float = 0.0
    stalled: float = 0.0
    displaced: float = 0.0


@dataclass
class Burst:
    """Pods created together by a `scale` event marked `burst`, for the herd figure."""

    at: float
    pods: set[PodKey]
    schedulable_nodes: int
    #: The most pods of the burst a load-balanced placement puts on one node
    #: (`tas_simulator.fair_share`).
    balanced_most: float
    placed: dict[str, int] = field(default_factory=dict)


@dataclass
class _Failure:
    """A node that failed at `at` (seconds), and how far Kubernetes has answered it."""

    at: float
    not_ready: bool = False
    pods_deleted: bool = False


class _Grow:
    """A numpy array that grows (amortized doubling), for per-slot and per-node values."""

    def __init__(self, fill: float, dtype: type = np.float64) -> None:
        self.fill = fill
        self.data: npt.NDArray[np.generic] = np.full(16, fill, dtype=dtype)
        self.size = 0

    def append(self, value: float) -> None:
        if self.size == len(self.data):
            bigger = np.full(len(self.data) * 2, self.fill, dtype=self.data.dtype)
            bigger[: self.size] = self.data[: self.size]
            self.data = bigger
        self.data[self.size] = value
        self.size += 1

    @property
    def view(self) -> npt.NDArray[np.generic]:
        return self.data[: self.size]


def startup_of(scenario: Scenario, seed: int, slot: int, start: int) -> float:
    """How long this start (1 for a pod's first, counting its replacements) of this slot's pod
    takes to run: the scenario's start-up, or with a range one drawn for each start, the same
    for every contender (a hash of the seed, the slot and the start: no shared random state).
    Real start-ups vary from one start to the next (an image cached or pulled, a cold JVM)."""
    most = scenario.startup_delay_most
    if most is None or most <= scenario.startup_delay:
        return scenario.startup_delay
    share = unit_hash(
        np.array([slot_seed(seed, slot)], dtype=np.uint64), np.array([start], dtype=np.int64)
    )[0]
    return scenario.startup_delay + float(share) * (most - scenario.startup_delay)


class World:
    def __init__(self, scenario: Scenario, *, clock: VirtualClock, seed: int) -> None:
        self.scenario = scenario
        self.clock = clock
        self.seed = seed
        self.cluster = InMemoryCluster(clock=clock)
        # Nodes, by a stable index (a removed node keeps its index, marked absent).
        self.node_names: list[NodeName] = []
        self.node_index: dict[NodeName, int] = {}
        self.cores = _Grow(0.0)
        self.memory = _Grow(0.0)
        self.present = _Grow(0.0)
        #: Per node: the share of its cores it serves (1; less while a set-health `degrade`
        #: holds; 0 once it has failed: `apply`, `_advance_health`).
        self.serving = _Grow(1.0)
        #: Each node's factor on its burstiness under a bursty pressure model (1 otherwise).
        self.pressure_bias = _Grow(1.0)
        self._read_noise = ReadNoise(scenario.pressure_model, seed)
        #: Nodes due to fail (a set-health `fail-after`), by index: when.
        self._fails_at: dict[int, float] = {}
        #: Nodes that failed, by index (a failed node stays failed).
        self.failures: dict[int, _Failure] = {}
        #: Counts changes of what nodes serve outside the scenario's events (a failure), so a
        #: reader that rebuilds on events (the fluid limit) rebuilds on these too.
        self.capacity_version = 0
        #: Node metrics that only events set (health_metric ...): metric -> node -> value.
        self.gauges: dict[str, dict[NodeName, float]] = {}
        # Slots: one usage stream per replica.
        self.cpu_bank = UsageBank()
        self.memory_bank = UsageBank()
        self.slot_workload: list[int] = []
        #: `slot_workload` as an array, for readers that select many slots at once.
        self.slot_workload_index = _Grow(-1, np.int64)
        self.slot_pod: list[str | None] = []
        #: `slot_pod is not None` per slot, kept beside it (the model reads it every step).
        self._slot_live = _Grow(False, np.bool_)
        self.slot_node = _Grow(-1, np.int64)
        self.slot_since = _Grow(math.nan)
        #: When the slot's pod starts using its node: bind + start-up delay, or, for a live
        #: migration's target, bind + memory copy + pause.
        self.slot_ready = _Grow(math.nan)
        #: A VM being live-migrated keeps running on its source node (`slot_ghost_node`) until
        #: its memory is copied (`slot_ghost_until`; infinite while the target is pending).
        self.slot_ghost_node = _Grow(-1, np.int64)
        self.slot_ghost_until = _Grow(-math.inf)
        self.slot_instance = _Grow(0, np.int64)
        #: Pods bound and not yet reported ready: (ready time, slot, instance, namespace, name),
        #: a heap, so each step reports the kubelet's `Ready` for those whose time has come.
        self._starting: list[tuple[float, int, int, str, str]] = []
        self._live = [w.migration == "live" for w in scenario.workloads]
        #: Pods ended outside the Eviction API (kubelet, garbage collector): VMs restart.
        self._killing = False
        self.pod_slot: dict[PodKey, int] = {}
        self.workload_index = {w.name: i for i, w in enumerate(scenario.workloads)}
        self.workload_slots: list[list[int]] = [[] for _ in scenario.workloads]
        self._replicas_made = [0] * len(scenario.workloads)
        self._patterns: dict[int, list[int]] = {}
        #: Per workload and block of replicas, the order its pattern is dealt in.
        self._orders: dict[tuple[int, int], list[int]] = {}
        # Bookkeeping for the figures.
        self.created_at: dict[PodKey, float] = {}
        self.pending_durations: list[float] = []
        self.oom_kills = 0
        self.kubelet_evictions = 0
        #: Per node index: when its memory signal last met the eviction threshold.
        self._memory_pressure_seen: dict[int, float] = {}
        self._next_housekeeping = 0.0
        self.migrations = 0
        self.bursts: list[Burst] = []
        self._events = list(scenario.events)
        self.outages: list[tuple[float, float]] = []
        self.bogus: list[tuple[float, float, str, float, frozenset[str]]] = []
        self.cluster.subscribe(self._on_change)
        for spec in scenario.nodes:
            self.add_node(spec)
        for workload in scenario.workloads:
            self.create_replicas(workload, workload.replicas, 0.0)

    # ------------------------------------------------------------------------ nodes

    def add_node(self, spec: NodeSpec) -> None:
        node = Node(
            name=NodeName(spec.name),
            labels=dict(spec.labels),
            taints=spec.taints,
            allocatable={"cpu": spec.cpu, "memory": spec.memory, "pods": float(spec.pods)},
        )
        self.cluster.add_node(node)
        if node.name in self.node_index:
            i = self.node_index[node.name]
            self.cores.data[i], self.memory.data[i], self.present.data[i] = (
                spec.cpu,
                spec.memory,
                1.0,
            )
            self.serving.data[i] = 1.0
        else:
            self.node_index[node.name] = len(self.node_names)
            self.node_names.append(node.name)
            self.cores.append(spec.cpu)
            self.memory.append(spec.memory)
            self.present.append(1.0)
            self.serving.append(1.0)
            self.pressure_bias.append(
                float(node_biases(self.scenario.pressure_model, self.seed, [node.name])[0])
            )
        for metric, value in spec.metrics.items():
            self.gauges.setdefault(metric, {})[node.name] = value

    def remove_node(self, name: NodeName) -> None:
        # The pod garbage collector deletes pods bound to a node that is gone; owners recreate.
        for pod in self.cluster.list_pods(node=name):
            self._kill(pod.namespace, pod.name)
        self.cluster.remove_node(name)
        i = self.node_index[name]
        self.present.data[i] = 0.0
        # A node that leaves takes its health with it (one of that name joining later is new).
        self._fails_at.pop(i, None)
        self.failures.pop(i, None)
        for column in self.gauges.values():
            column.pop(name, None)

    @property
    def node_count(self) -> int:
        return len(self.node_names)

    # ------------------------------------------------------------------------- pods

    def _owner(self, workload: WorkloadSpec) -> OwnerReference:
        if workload.kind == "StatefulSet":
            return OwnerReference("StatefulSet", workload.name, f"sts-{workload.name}", True)
        digest = hashlib.sha256(workload.name.encode()).hexdigest()[:8]
        return OwnerReference(
            "ReplicaSet", f"{workload.name}-{digest}", f"rs-{workload.name}", controller=True
        )

    def _variant(self, workload: WorkloadSpec, replica: int) -> int:
        """Which usage variant a replica gets: in every block of 64 replicas the shares are met
        (largest remainder), in an order shuffled by the seed, so names say nothing of load."""
        if len(workload.usage) == 1:
            return 0
        w = self.workload_index[workload.name]
        pattern = self._patterns.get(w)
        if pattern is None:
            total = sum(v.share for v in workload.usage)
            quotas = [v.share / total * _BLOCK for v in workload.usage]
            counts = [math.floor(q) for q in quotas]
            by_remainder = sorted(range(len(quotas)), key=lambda i: (counts[i] - quotas[i], i))
            for i in by_remainder[: _BLOCK - sum(counts)]:
                counts[i] += 1
            pattern = self._patterns[w] = [i for i, c in enumerate(counts) for _ in range(c)]
        block, position = divmod(replica, _BLOCK)
        order = self._orders.get((w, block))
        if order is None:
            drawn = np.random.default_rng([self.seed, w, block]).permutation(_BLOCK)
            order = self._orders[(w, block)] = [int(i) for i in drawn]
        return pattern[order[position]]

    def create_replicas(self, workload: WorkloadSpec, count: int, t: float) -> list[Pod]:
        w = self.workload_index[workload.name]
        owner = self._owner(workload)
        requests = dict(workload.requests)
        qos = QoSClass.BURSTABLE if any(requests.values()) else QoSClass.BEST_EFFORT
        made: list[Pod] = []
        for _ in range(count):
            replica = self._replicas_made[w]
            self._replicas_made[w] += 1
            variant = workload.usage[self._variant(workload, replica)]
            slot = len(self.slot_workload)
            seed = slot_seed(self.seed, slot)
            self.cpu_bank.add(variant.cpu, seed=seed)
            self.memory_bank.add(variant.memory, seed=seed ^ 0x5BD1E995)
            self.slot_workload.append(w)
            self.slot_workload_index.append(w)
            self.slot_pod.append(None)
            self._slot_live.append(False)
            self.slot_node.append(-1)
            self.slot_since.append(math.nan)
            self.slot_ready.append(math.nan)
            self.slot_ghost_node.append(-1)
            self.slot_ghost_until.append(-math.inf)
            self.slot_instance.append(0)
            self.workload_slots[w].append(slot)
            name = (
                f"{workload.name}-{replica}"
                if workload.kind == "StatefulSet"
                else f"{owner.name}-r{replica:04d}"
            )
            pod = Pod(
                namespace=Namespace(workload.namespace),
                name=name,
                # A VM's launcher pod carries KubeVirt's label, as in a cluster.
                labels={**workload.labels, **(VIRT_LAUNCHER if self._live[w] else {})},
                annotations={SLOT_ANNOTATION: str(slot)},
                node_name=None,
                phase="Pending",
                owners=(owner,),
                priority=workload.priority,
                qos_class=qos,
                requests=requests,
                node_selector=dict(workload.node_selector),
                required_node_affinity=workload.node_affinity,
                tolerations=workload.tolerations,
            )
            made.append(self.cluster.add_pod(pod))
        return made

    def scale(self, workload: WorkloadSpec, replicas: int, t: float, *, burst: bool) -> None:
        w = self.workload_index[workload.name]
        live = [s for s in self.workload_slots[w] if self.slot_pod[s] is not None]
        if replicas > len(live):
            if not burst:
                self.create_replicas(workload, replicas - len(live), t)
                return
            schedulable = self._schedulable_nodes(workload)
            pods = self.create_replicas(workload, replicas - len(live), t)
            keys = [(str(p.namespace), p.name) for p in pods]
            # In creation order, not a set's: a float sum in hash order differs between runs.
            balanced = self._balanced_most(schedulable, [self.pod_slot[k] for k in keys], t)
            self.bursts.append(Burst(t, set(keys), len(schedulable), balanced))
            return

        # ReplicaSet scale-down deletes unscheduled pods first, then the newest ones
        # (kubernetes controller_utils ActivePods ordering, simplified to these two keys).
        def rank(slot: int) -> tuple[int, float]:
            node = int(self.slot_node.data[slot])
            since = float(self.slot_since.data[slot])
            return (0 if node < 0 else 1, -since if not math.isnan(since) else 0.0)

        for slot in sorted(live, key=rank)[: len(live) - replicas]:
            name = self.slot_pod[slot]
            assert name is not None
            self.cluster.remove_pod(Namespace(workload.namespace), name)

    def _balanced_most(self, nodes: list[NodeName], burst: list[int], t: float) -> float:
        """The load-balanced fair share of the `burst` slots onto `nodes`, by expected CPU use
        at `t` (a bursty pod counts its time average) of the pods bound to each node (running
        or starting) and of the burst's pods, which are not bound yet."""
        expected = self.cpu_bank.expected(t)
        bound = np.asarray(self.slot_node.view, dtype=np.int64)
        live = self._live_slots() & (bound >= 0)
        loads = np.bincount(bound[live], weights=expected[live], minlength=self.node_count)
        indices = [self.node_index[name] for name in nodes]
        return most_pods_when_balanced(
            loads=[float(loads[i]) for i in indices],
            # What each node serves: a degraded node's fair share is of its served cores.
            cores=[float(self.cores.data[i] * self.serving.data[i]) for i in indices],
            pod_cpu=float(expected[burst].mean()),
            pods=len(burst),
        )

    def _live_slots(self) -> npt.NDArray[np.bool_]:
        """Which slots have a pod now (bound or pending)."""
        return np.array(self._slot_live.view, dtype=np.bool_)

    def _schedulable_nodes(self, workload: WorkloadSpec) -> list[NodeName]:
        from tas.fit import matches_node_selection, untolerated_taint

        probe = Pod(
            namespace=Namespace(workload.namespace),
            name="probe",
            node_selector=dict(workload.node_selector),
            required_node_affinity=workload.node_affinity,
            tolerations=workload.tolerations,
        )
        return [
            n.name
            for n in self.cluster.list_nodes()
            if n.ready
            and not n.unschedulable
            and matches_node_selection(probe, n)
            and untolerated_taint(probe, n.taints) is None
        ]

    def _on_change(self, change: ClusterChange) -> None:
        if change.kind is not ResourceKind.POD:
            return
        key = (change.namespace, change.name)
        if change.type is ChangeType.DELETED:
            slot = self.pod_slot.get(key)
            if slot is not None and self.slot_pod[slot] == change.name:
                node = int(self.slot_node.data[slot])
                running = node >= 0 and self.clock.elapsed >= float(self.slot_ready.data[slot])
                if self._live[self.slot_workload[slot]] and running and not self._killing:
                    # KubeVirt answers the eviction of a VM's launcher pod with a live
                    # migration (/work/shared/seeds/001: "that VM is live migrated instead of
                    # being evicted"): the VM runs on where it was until its target is up.
                    self.slot_ghost_node.data[slot] = node
                    self.slot_ghost_until.data[slot] = math.inf
                self.slot_pod[slot] = None
                self._slot_live.data[slot] = False
                self.slot_node.data[slot] = -1
                self.slot_since.data[slot] = math.nan
                self.slot_ready.data[slot] = math.nan
            if key in self.created_at:
                self.pending_durations.append(self.clock.elapsed - self.created_at.pop(key))
            return
        try:
            pod = self.cluster.get_pod(Namespace(change.namespace), change.name)
        except NotFoundError:
            return
        raw = pod.annotations.get(SLOT_ANNOTATION)
        if raw is None:
            return
        slot = int(raw)
        if change.type is ChangeType.ADDED:
            self.pod_slot[key] = slot
            self.slot_pod[slot] = pod.name
            self._slot_live.data[slot] = True
            self.slot_instance.data[slot] += 1
            if pod.node_name is None:
                self.created_at[key] = self.clock.elapsed
        if pod.node_name is not None and int(self.slot_node.data[slot]) < 0:
            now = self.clock.elapsed
            self.slot_node.data[slot] = self.node_index[pod.node_name]
            self.slot_since.data[slot] = now
            start = int(self.slot_instance.data[slot])
            self.slot_ready.data[slot] = now + startup_of(self.scenario, self.seed, slot, start)
            if float(self.slot_ghost_until.data[slot]) == math.inf:
                # The target pod is up: the memory is copied while the VM still runs on the
                # source, then the VM pauses and resumes on the target.
                migration = self.scenario.live_migration
                memory = float(self.memory_bank.values(now)[slot])
                copied = now + memory / migration.bandwidth
                self.slot_ghost_until.data[slot] = copied
                self.slot_ready.data[slot] = copied + migration.pause
                self.migrations += 1
            heapq.heappush(
                self._starting,
                (float(self.slot_ready.data[slot]), slot, start, pod.namespace, pod.name),
            )
            created = self.created_at.pop(key, None)
            if created is not None:
                self.pending_durations.append(self.clock.elapsed - created)
            for burst in self.bursts:
                if key in burst.pods:
                    burst.placed[pod.node_name] = burst.placed.get(pod.node_name, 0) + 1

    def report_ready(self, t: float) -> None:
        """The kubelet's part: each pod whose start-up has ended by `t`, and still runs in its
        slot, turns `Ready` (`InMemoryCluster.mark_ready`), as a cluster shows it."""
        while self._starting and self._starting[0][0] <= t + 1e-9:
            _, slot, instance, namespace, name = heapq.heappop(self._starting)
            if self.slot_pod[slot] == name and int(self.slot_instance.data[slot]) == instance:
                self.cluster.mark_ready(Namespace(namespace), name)

    def pending_count(self) -> int:
        return len(self.created_at)

    def still_pending(self) -> list[float]:
        """How long each pod still pending has waited so far."""
        return [self.clock.elapsed - t for t in self.created_at.values()]

    def slot_of(self, namespace: str, name: str) -> int | None:
        return self.pod_slot.get((namespace, name))

    # ------------------------------------------------------------------------ events

    def due_events(self, t: float) -> list[Event]:
        """The scenario's events due by `t`, to `apply`. What the health effects under way do
        by `t` (a node failing, marked NotReady, its pods deleted) is done first."""
        self._advance_health(t)
        due = [e for e in self._events if e.at <= t]
        self._events = [e for e in self._events if e.at > t]
        return due

    def set_gauge(self, metric: str, node: NodeName, value: float) -> None:
        """A node's gauge (a health value) from now on, as a set-health event sets it."""
        self.gauges.setdefault(metric, {})[node] = value

    def apply(self, event: Event, t: float) -> None:
        kind = event.kind
        if kind is EventKind.SET_HEALTH:
            for name in event.nodes:
                self._set_health(NodeName(name), event, t)
            self._advance_health(t)
        elif kind in (EventKind.TAINT, EventKind.UNTAINT):
            assert event.taint is not None
            for name in event.nodes:
                node = self.cluster.get_node(NodeName(name))
                others = tuple(x for x in node.taints if x.key != event.taint.key)
                taints: tuple[Taint, ...] = (
                    (*others, event.taint) if kind is EventKind.TAINT else others
                )
                self.cluster.set_node_taints(node.name, taints)
        elif kind in (EventKind.CORDON, EventKind.UNCORDON):
            for name in event.nodes:
                node = self.cluster.get_node(NodeName(name))
                self.cluster.update_node(
                    dataclasses.replace(node, unschedulable=kind is EventKind.CORDON)
                )
        elif kind is EventKind.SCALE:
            workload = self.scenario.workloads[self.workload_index[event.workload]]
            self.scale(workload, event.replicas, t, burst=event.burst)
        elif kind is EventKind.ADD_NODES:
            for spec in event.added:
                self.add_node(spec)
        elif kind is EventKind.REMOVE_NODES:
            for name in event.nodes:
                self.remove_node(NodeName(name))
        elif kind is EventKind.METRIC_OUTAGE:
            self.outages.append((t, t + event.lasts))
        else:
            nodes = frozenset(event.nodes)
            self.bogus.append((t, t + event.lasts, event.metric, event.value, nodes))

    # ------------------------------------------------------------------------ health

    def _set_health(self, name: NodeName, event: Event, t: float) -> None:
        """A set-health on one node: its gauge, and its effect from now until the node's next
        set-health, which replaces it (one without an effect ends a degrade and calls off a
        failure still to come). A failed node stays failed: its exporter is gone with it, so
        it has no gauge to set either."""
        i = self.node_index.get(name)
        if i is None or i in self.failures:
            return
        self.set_gauge(event.metric, name, event.value)
        effect = event.effect
        self._fails_at.pop(i, None)
        share = effect.share if effect.kind is HealthEffectKind.DEGRADE else 1.0
        if float(self.serving.data[i]) != share:
            self.serving.data[i] = share
            self.capacity_version += 1
        if effect.kind is HealthEffectKind.FAIL_AFTER:
            self._fails_at[i] = t + effect.delay

    def _advance_health(self, t: float) -> None:
        """What is due by `t` of the failures set off (`NODE_MONITOR_GRACE_PERIOD`): a node
        fails (serves nothing, its pods stop, its metrics stop), is marked NotReady and
        tainted unreachable, and its pods are deleted and replaced."""
        for i, when in sorted(self._fails_at.items(), key=lambda item: (item[1], item[0])):
            if when <= t + 1e-9:
                del self._fails_at[i]
                self._fail(i, when)
        for i, failure in sorted(self.failures.items()):
            name = self.node_names[i]
            if not failure.not_ready and t + 1e-9 >= failure.at + NODE_MONITOR_GRACE_PERIOD:
                failure.not_ready = True
                node = self.cluster.get_node(name)
                others = tuple(x for x in node.taints if x not in UNREACHABLE_TAINTS)
                self.cluster.update_node(
                    dataclasses.replace(node, ready=False, taints=(*others, *UNREACHABLE_TAINTS))
                )
            deleted_at = failure.at + NODE_MONITOR_GRACE_PERIOD + UNREACHABLE_TOLERATION_SECONDS
            if not failure.pods_deleted and t + 1e-9 >= deleted_at:
                failure.pods_deleted = True
                for pod in self.cluster.list_pods(node=name):
                    controller = pod.controller
                    if (controller is not None and controller.kind == "StatefulSet") or any(
                        tol.tolerates(UNREACHABLE_TAINTS[1]) for tol in pod.tolerations
                    ):
                        continue
                    self._kill(pod.namespace, pod.name)

    def _fail(self, i: int, at: float) -> None:
        self.failures[i] = _Failure(at)
        self.serving.data[i] = 0.0
        self.capacity_version += 1
        for column in self.gauges.values():
            column.pop(self.node_names[i], None)

    # ------------------------------------------------------------------------- model

    def model(self, t: float) -> ModelState:
        n = self.node_count
        # What each node serves: a degraded node a share of its cores; a failed one nothing,
        # and it is as good as gone (nothing runs there, nothing is scraped from it).
        serving = np.asarray(self.serving.view, dtype=np.float64)
        cores = np.asarray(self.cores.view, dtype=np.float64) * serving
        capacity = np.asarray(self.memory.view, dtype=np.float64)
        present = (np.asarray(self.present.view) > 0) & (serving > 0)
        slot_cpu = self.cpu_bank.values(t)
        slot_memory = self.memory_bank.values(t)
        nodes = np.asarray(self.slot_node.view, dtype=np.int64)
        ready = np.asarray(self.slot_ready.view, dtype=np.float64)
        live = self._live_slots()
        with np.errstate(invalid="ignore"):
            running = (nodes >= 0) & (t >= ready) & present[np.maximum(nodes, 0)]
        ghost_nodes = np.asarray(self.slot_ghost_node.view, dtype=np.int64)
        ghosts = (
            (ghost_nodes >= 0)
            & (t < np.asarray(self.slot_ghost_until.view))
            & ~running
            & present[np.maximum(ghost_nodes, 0)]
        )
        where = np.concatenate([nodes[running], ghost_nodes[ghosts]])
        demand = np.bincount(
            where, weights=np.concatenate([slot_cpu[running], slot_cpu[ghosts]]), minlength=n
        )[:n].astype(np.float64)
        demand += self._copying_cpu(ghosts, nodes, ghost_nodes, present)
        used = np.bincount(
            where,
            weights=np.concatenate([slot_memory[running], slot_memory[ghosts]]),
            minlength=n,
        )[:n].astype(np.float64)
        safe_cores = np.where(cores > 0, cores, 1.0)
        utilization = np.where(present, np.minimum(demand, cores) / safe_cores, 0.0)
        bias = np.asarray(self.pressure_bias.view, dtype=np.float64)
        pressure = np.where(
            present, pressures(self.scenario.pressure_model, demand, cores, bias), 0.0
        )
        safe_memory = np.where(capacity > 0, capacity, 1.0)
        memory_utilization = np.where(present, np.minimum(used / safe_memory, 1.0), 0.0)
        memory_pressure = np.where(present, memory_pressures(used, capacity), 0.0)
        stalled = float(np.maximum(demand - cores, 0.0)[present].sum())
        # A VM still running on its source node while it migrates is not displaced.
        displaced_slots = live & ~running & ~ghosts
        return ModelState(
            t=t,
            present=present,
            cores=cores,
            demand=demand,
            utilization=utilization,
            pressure=pressure,
            measured_pressure=np.where(
                present,
                self._read_noise.measured(pressure, round(t / self.scenario.step)),
                0.0,
            ),
            memory_used=used,
            memory_utilization=memory_utilization,
            memory_pressure=memory_pressure,
            slot_cpu=slot_cpu,
            slot_memory=slot_memory,
            running=running,
            demand_total=float(slot_cpu[live].sum()),
            stalled=stalled,
            displaced=float(slot_cpu[displaced_slots].sum()),
            displaced_slots=displaced_slots,
        )

    def _copying_cpu(
        self,
        ghosts: npt.NDArray[np.bool_],
        nodes: npt.NDArray[np.int64],
        ghost_nodes: npt.NDArray[np.int64],
        present: npt.NDArray[np.bool_],
    ) -> FloatArray:
        """What live migrations under way take from each node while memory copies (from the
        target pod's binding to the copy's end): the copy's own CPU on the source, beside the
        VM still running there, and on the target."""
        n = self.node_count
        copying = ghosts & np.isfinite(np.asarray(self.slot_ghost_until.view)) & (nodes >= 0)
        if not copying.any():
            return np.zeros(n)
        migration = self.scenario.live_migration
        targets = nodes[copying]
        targets = targets[present[targets]]
        return (
            np.bincount(ghost_nodes[copying], minlength=n)[:n] * migration.source_cores
            + np.bincount(targets, minlength=n)[:n] * migration.target_cores
        ).astype(np.float64)

    def kill_out_of_memory(self, state: ModelState) -> int:
        """A node's memory running out, as Kubernetes handles it: the kubelet's node-pressure
        eviction at each housekeeping pass (condition, taint, one pod evicted in its order),
        and the kernel's OOM killer between passes, when use exceeds the node's memory. Each
        pod ended is recreated by its owner and scheduled like any pod. Returns how many."""
        ended = self._kubelet_memory_eviction(state)
        if ended:
            state = self.model(state.t)
        return ended + self._kernel_oom(state)

    def _kubelet_memory_eviction(self, state: ModelState) -> int:
        t = state.t
        if t + 1e-9 < self._next_housekeeping:
            return 0
        self._next_housekeeping = t + HOUSEKEEPING_INTERVAL
        capacity = np.asarray(self.memory.view, dtype=np.float64)
        met = np.flatnonzero(
            state.present & (capacity - state.memory_used < MEMORY_EVICTION_THRESHOLD)
        )
        for index in met:
            self._memory_pressure_seen[int(index)] = t
        nodes = np.asarray(self.slot_node.view, dtype=np.int64)
        evicted = 0
        for i, seen in sorted(self._memory_pressure_seen.items()):
            name = self.node_names[i]
            condition = bool(state.present[i]) and t - seen < PRESSURE_TRANSITION_PERIOD
            if not condition:
                del self._memory_pressure_seen[i]
            if bool(state.present[i]):
                self._set_memory_pressure_taint(name, condition)
            if seen == t and condition:
                victim = self._kubelet_victim(state, np.flatnonzero(state.running & (nodes == i)))
                if victim is not None:
                    workload = self.scenario.workloads[self.slot_workload[victim]]
                    name_of = self.slot_pod[victim]
                    assert name_of is not None
                    self._kill(Namespace(workload.namespace), name_of)
                    evicted += 1
        self.kubelet_evictions += evicted
        return evicted

    def _kubelet_victim(self, state: ModelState, slots: npt.NDArray[np.intp]) -> int | None:
        """The kubelet's memory eviction order (`rankMemoryPressure`: exceeds requests, then
        priority, then usage above requests); ties by name, for determinism."""
        ranked: list[tuple[bool, int, float, str, int]] = []
        for slot in slots:
            name = self.slot_pod[slot]
            if name is None:
                continue
            workload = self.scenario.workloads[self.slot_workload[slot]]
            used = float(state.slot_memory[slot])
            request = workload.requests.get("memory", 0.0)
            ranked.append((used <= request, workload.priority, request - used, name, int(slot)))
        return min(ranked)[-1] if ranked else None

    def _set_memory_pressure_taint(self, name: NodeName, tainted: bool) -> None:
        node = self.cluster.get_node(name)
        has = any(t.key == MEMORY_PRESSURE_TAINT.key for t in node.taints)
        if has == tainted:
            return
        others = tuple(t for t in node.taints if t.key != MEMORY_PRESSURE_TAINT.key)
        self.cluster.set_node_taints(name, (*others, MEMORY_PRESSURE_TAINT) if tainted else others)

    def _kernel_oom(self, state: ModelState) -> int:
        """Nodes above their memory end their largest pods (recreated by their owners)."""
        kills = 0
        capacity = np.asarray(self.memory.view, dtype=np.float64)
        over = np.flatnonzero(state.present & (state.memory_used > capacity))
        if not len(over):
            return 0
        nodes = np.asarray(self.slot_node.view, dtype=np.int64)
        for i in over:
            slots = np.flatnonzero(state.running & (nodes == i))
            usages = [
                (self.slot_pod[s] or "", float(state.slot_memory[s]))
                for s in slots
                if self.slot_pod[s] is not None
            ]
            for name in oom_victims(usages, float(capacity[i])):
                slot = next(s for s in slots if self.slot_pod[s] == name)
                workload = self.scenario.workloads[self.slot_workload[slot]]
                self._kill(Namespace(workload.namespace), name)
                kills += 1
        self.oom_kills += kills
        return kills

    def _kill(self, namespace: Namespace, name: str) -> None:
        """End a pod outside the Eviction API: a VM among them crashes and restarts."""
        self._killing = True
        try:
            self.cluster.kill_pod(namespace, name)
        finally:
            self._killing = False

    def true_columns(self, state: ModelState, names: Sequence[str]) -> MetricColumns:
        """What a rule would see on true model values, now (no scrape, no lag)."""
        arrays: Mapping[str, FloatArray] = {
            CPU_UTILIZATION: state.utilization,
            CPU_PRESSURE: state.pressure,
            MEMORY_UTILIZATION: state.memory_utilization,
            MEMORY_PRESSURE: state.memory_pressure,
        }
        columns: dict[MetricName, dict[NodeName, float]] = {}
        for name in names:
            if name in arrays:
                values = arrays[name]
                columns[MetricName(name)] = {
                    node: float(values[i])
                    for i, node in enumerate(self.node_names)
                    if state.present[i]
                }
            elif name in self.gauges:
                columns[MetricName(name)] = dict(self.gauges[name])
        return columns


class InformerOrder:
    """The cluster as a descheduler's informer cache lists it: pods in no fixed order.

    The upstream descheduler lists pods from a shared informer's indexer (a map: no order)
    and sorts evictable pods with `sort.Slice` (kubernetes-sigs/descheduler,
    pkg/descheduler/pod/pods.go `SortPodsBasedOnPriorityLowToHigh`; `sort.Slice` is not
    stable), so pods the sort keys cannot tell apart come in no name order. The in-memory
    cluster lists by name, and replacement pods' names sort before the originals', so a
    stable sort over that listing picks the pod that was just moved again first. Here every
    pod listing is shuffled by the run's seeded stream: every descheduler (ours included)
    meets the same order on the same seed, and none meets name order. Everything else is the
    cluster's own.
    """

    def __init__(self, cluster: InMemoryCluster, rng: random.Random) -> None:
        self._cluster = cluster
        self._rng = rng

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]:
        pods = list(self._cluster.list_pods(node=node))
        self._rng.shuffle(pods)
        return tuple(pods)

    def __getattr__(self, name: str) -> Any:
        # Everything but `list_pods` is the cluster's own, so only the pod listing draws from
        # the stream: the same seed meets the same order whatever else is read or written.
        return getattr(self._cluster, name)
