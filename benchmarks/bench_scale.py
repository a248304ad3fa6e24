"""The components at a real cluster's size: 5,000 nodes and 150,000 pods, as a cluster serves them.

Each component runs as its real process (`tas extender`, `tas controller`, and `tas descheduler`
in Predictive mode with the shipped LoadAware policy, deploy/descheduler/load-aware.yaml)
against the API emulator (tests/k8s_emulator), which pages its lists as the API server does and
serves realistic objects (tests/k8s_emulator/realistic.py: pods of about 6 KB of JSON with
managedFields, probes, a projected token volume and a full status; nodes of about 13 KB with
conditions and 50 images). 10% of the pods are linked to a TASPolicy. Node telemetry comes from
textfiles (one per node; one node in ten hot). Each component runs twice: on the full world,
and on the same nodes with no pod, and is stopped between runs.

Figures, per component:
- time to ready: from the process's start to its /readyz answering 200 (every cache listed).
  Goal: 60 s;
- RSS after sync (settled, at the end of the run) and peak RSS (the kernel's high-water mark,
  VmHWM, over the whole run: the first list included). Goal: peak at most 1.3x the steady RSS;
- RSS per pod: the steady RSS above the same component's with no pod, over 150,000 pods.
  Goals (issue 42): the extender and the controller at most 1 KiB, the descheduler 2.5 KiB;
- CPU per 1,000 pod watch events at a steady churn: the process's CPU time (utime + stime)
  while the emulator sends `CHURN_EVENTS` status updates of pods it watches (the Ready condition
  flipping, as a kubelet writes it; for the controller, of linked pods: its label selector),
  less the CPU the same process spends idle (measured before and after) over as long. Floor:
  parsing 1,000 such event lines with the standard library's `json.loads` in this process, right
  after (what any Python client does with a line, before it converts anything). Goal: at most
  3x. When not every event reached the component (its watch broke and it listed again), the
  figure is said not to be measured;
- the descheduler's cycle: the CPU time of one steady LoadAware cycle at 150,000 pods (its
  `tas_descheduler_cycle_cpu_seconds`: the cycle thread's own), next to the in-memory
  benchmark's floor (one pass over every node and pod, each node's requested CPU in a dict
  keyed by node) on the same world. Goal: at most 200x, the goal bench_descheduler sets at
  50,000 pods.

The sizing table of docs/deploy.md ("Sizing") is read off these figures; the shipped requests
and limits follow it. `python -m benchmarks scale` runs this alone (about 10 minutes);
`SCALE_PODS_PER_NODE=6 python -m benchmarks scale` a fifth of it, for a quick look.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

from benchmarks.report import Figure, print_figure
from benchmarks.timing import median_cpu_seconds
from tas.adapters.metrics.textfile import write_node_series
from tas.cluster.convert import node_from_api, pod_from_api
from tas.cluster.sharing import SharedValues
from tas.vocabulary import POLICY_LABEL
from tests.k8s_emulator import KubeEmulator, realistic
from tests.k8s_emulator.resources import BY_PLURAL

ROOT = Path(__file__).resolve().parents[1]
NODES = 5_000
PODS_PER_NODE = int(os.environ.get("SCALE_PODS_PER_NODE", "30"))
#: Replicas per workload (Deployment): 500 workloads at 30 pods a node.
REPLICAS = 300
NAMESPACES = 40
#: One workload in ten is linked to the policy, in the policy's namespace.
LINKED_EVERY = 10
HOT_EVERY = 10
POLICY_NAMESPACE = "health-metric-demo"
POLICY_NAME = "demo-policy"
CHURN_EVENTS = 10_000
KiB = 1024
MiB = 1024 * KiB

READY_GOAL_SECONDS = 60.0
PEAK_MAX_RATIO = 1.3
EVENT_MAX_RATIO = 3.0
CYCLE_MAX_RATIO = 200.0
PER_POD_GOAL_KIB = {"extender": 1.0, "controller": 1.0, "descheduler": 2.5}
#: The descheduler's interval: long enough that the churn is measured between two cycles.
DESCHEDULING_INTERVAL = 45


@dataclass
class World:
    """An emulator serving the cluster, the node textfiles, a kubeconfig pointing at it."""

    api: KubeEmulator
    metrics: Path
    kubeconfig: Path
    pods: int
    linked: list[tuple[str, str]] = field(default_factory=list)
    others: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Run:
    """What one run of one component measured."""

    ready_seconds: float
    steady_rss: int
    peak_rss: int
    event_cpu_ms: float | None = None  # CPU per 1,000 events received
    event_floor_ms: float | None = None  # json.loads of 1,000 such lines, right after
    cycle_seconds: float | None = None
    log: str = ""


@dataclass(frozen=True)
class Component:
    name: str
    command: Callable[[World, int, Path], list[str]]
    #: Which pods it watches: all of them, or only the linked ones (its label selector).
    receives_all: bool = True


def _cluster_args(world: World) -> list[str]:
    """What every component is told of the world: its API, its node telemetry, the sync."""
    return [
        "--kubeconfig", str(world.kubeconfig), "--metrics", f"textfile:{world.metrics}",
        "--sync-period", "5s",
    ]  # fmt: skip


def _extender(world: World, port: int, state: Path) -> list[str]:
    return ["extender", *_cluster_args(world), "--listen", f"127.0.0.1:{port}", "--insecure-http"]


def _controller(world: World, port: int, state: Path) -> list[str]:
    return ["controller", *_cluster_args(world), "--listen", f"127.0.0.1:{port}"]


def _descheduler(world: World, port: int, state: Path) -> list[str]:
    return [
        "descheduler", *_cluster_args(world),
        "--policy-config-file", str(ROOT / "deploy" / "descheduler" / "load-aware.yaml"),
        "--mode", "Predictive", "--descheduling-interval", f"{DESCHEDULING_INTERVAL}s",
        "--listen-metrics", f"127.0.0.1:{port}", "--log-level", "warning",
    ]  # fmt: skip


COMPONENTS = (
    Component("extender", _extender),
    Component("controller", _controller, receives_all=False),
    Component("descheduler", _descheduler),
)


# ---------------------------------------------------------------- the world


def _policy() -> dict[str, Any]:
    path = ROOT / "deploy" / "health-metric-demo" / "health-policy.yaml"
    document: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return document


def _pods(count: int) -> Iterator[tuple[dict[str, Any], bool]]:
    """`count` realistic pods over the nodes, PODS_PER_NODE each, and whether it is linked."""
    for index in range(count):
        workload = index // REPLICAS
        linked = workload % LINKED_EVERY == 0
        namespace = POLICY_NAMESPACE if linked else f"team-{workload % NAMESPACES}"
        app = f"app-{workload}"
        yield (
            realistic.pod(
                f"{app}-{index:06d}",
                namespace=namespace,
                app=app,
                node=f"node-{index % NODES:05d}",
                labels={POLICY_LABEL: POLICY_NAME} if linked else None,
                cpu="100m",
                memory="128Mi",
                seed=index,
            ),
            linked,
        )


def _build(directory: Path, *, pods: bool) -> World:
    api = KubeEmulator(history_window=4 * CHURN_EVENTS).start()
    api.create("namespaces", {"metadata": {"name": POLICY_NAMESPACE}})
    api.create("taspolicies", _policy(), namespace=POLICY_NAMESPACE)
    names = [f"node-{i:05d}" for i in range(NODES)]
    api.load("nodes", (realistic.node(name, seed=i) for i, name in enumerate(names)))
    metrics = directory / "metrics"
    metrics.mkdir()
    for index, name in enumerate(names):
        hot = index % HOT_EVERY == 0
        write_node_series(
            metrics,
            name,
            {
                "health_metric": 0.0,
                "cpu_utilization": 0.97 if hot else 0.35 + (index % 7) / 100,
                "cpu_pressure": 0.45 if hot else 0.01,
                "memory_utilization": 0.4,
            },
        )
    world = World(api, metrics, api.write_kubeconfig(directory / "kubeconfig"), 0)
    if pods:
        objects = []
        for obj, linked in _pods(NODES * PODS_PER_NODE):
            objects.append(obj)
            key = (obj["metadata"]["namespace"], obj["metadata"]["name"])
            (world.linked if linked else world.others).append(key)
        world.pods = api.load("pods", objects)
    return world


# ---------------------------------------------------------------- the process


def _proc_status(pid: int, field_name: str) -> int:
    """A VmRSS-like line of /proc/<pid>/status, in bytes."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) * KiB
    raise LookupError(field_name)


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def _fresh_textfiles(world: World, period: float = 10.0) -> Iterator[None]:
    """Touch every node's textfile every `period`, as a node's writer rewrites it: a sample is
    as old as its file (tas.adapters.metrics.textfile), and a stale one counts as missing."""
    stop = threading.Event()

    def touch() -> None:
        while not stop.wait(period):
            for path in world.metrics.glob("*.prom"):
                os.utime(path)

    thread = threading.Thread(target=touch, name="textfiles", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def _running(component: Component, world: World, state: Path) -> Iterator[tuple[Any, int]]:
    port = _free_port()
    log_path = state / f"{component.name}.log"
    with log_path.open("wb") as log:
        popen = subprocess.Popen(
            [sys.executable, "-m", "tas_cli", *component.command(world, port, state)],
            cwd=ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        yield popen, port
    finally:
        popen.send_signal(signal.SIGTERM)
        try:
            popen.wait(10)
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()


def _log_tail(state: Path, component: Component) -> str:
    text = (state / f"{component.name}.log").read_text(encoding="utf-8", errors="replace")
    return text[-3000:]


def _wait_ready(popen: Any, port: int, *, timeout: float = 300.0) -> float:
    started = time.monotonic()
    with httpx.Client(timeout=2) as client:
        while time.monotonic() - started < timeout:
            if popen.poll() is not None:
                raise RuntimeError(f"exited with {popen.returncode}")
            try:
                if client.get(f"http://127.0.0.1:{port}/readyz").status_code == 200:
                    return time.monotonic() - started
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
    raise RuntimeError(f"not ready in {timeout:.0f} s")


def _scrape(port: int, name: str) -> float:
    """The sum of every sample of `name` on the component's /metrics (0 when absent)."""
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    pattern = re.compile(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", re.MULTILINE)
    return sum(float(value) for value in pattern.findall(text))


def _wait_cycles(port: int, count: float, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _scrape(port, "tas_descheduler_cycle_duration_seconds_count") < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"fewer than {count} cycles in {timeout:.0f} s")
        time.sleep(0.5)


def _churn(world: World, keys: Sequence[tuple[str, str]], *, stamp: int) -> None:
    """A status update per pod, as a kubelet writes it: Ready and ContainersReady flip."""
    status = "False" if stamp % 2 else "True"
    when = f"2026-11-02T{stamp // 3600 % 24:02d}:{stamp // 60 % 60:02d}:{stamp % 60:02d}Z"
    conditions = [
        {
            "type": kind,
            "status": status if kind in ("Ready", "ContainersReady") else "True",
            "lastProbeTime": None,
            "lastTransitionTime": when,
        }
        for kind in (
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        )
    ]
    for namespace, name in keys:
        world.api.merge(
            "pods", name, {"status": {"conditions": conditions}}, namespace=namespace, status=True
        )


def _settle(pid: int, *, idle_rate: float, limit: float = 120.0) -> None:
    """Wait until the process's CPU rate is back near its idle rate (events consumed)."""
    deadline = time.monotonic() + limit
    quiet = 0
    last = _cpu_seconds(pid)
    while time.monotonic() < deadline and quiet < 3:
        time.sleep(0.5)
        now = _cpu_seconds(pid)
        quiet = quiet + 1 if now - last <= max(0.02, 2 * idle_rate * 0.5) else 0
        last = now


def _event_cpu(popen: Any, world: World, component: Component, rng: random.Random) -> float:
    """CPU ms per 1,000 pod watch events received (see the module docstring): the churn is of
    pods the component watches (the linked ones for the controller), and the idle rate is
    measured before and after it, so periodic work (metric refreshes, reconciles) cancels."""
    pid = popen.pid
    pool = (world.linked + world.others) if component.receives_all else world.linked
    keys = rng.sample(pool, min(CHURN_EVENTS, len(pool)))
    before = _idle_rate(pid)
    sent = world.api.sent("pods")
    started_cpu, started = _cpu_seconds(pid), time.monotonic()
    # A stamp of its own: a status written as it already is would be no change (no event).
    _churn(world, keys, stamp=next(_STAMPS))
    deadline = time.monotonic() + 120
    while world.api.sent("pods") - sent < len(keys):  # every event out to the component
        if time.monotonic() > deadline:
            raise _NotMeasuredError(
                f"only {world.api.sent('pods') - sent} of {len(keys)} events reached it"
            )
        time.sleep(0.2)
    _settle(pid, idle_rate=before)
    spent, elapsed = _cpu_seconds(pid) - started_cpu, time.monotonic() - started
    idle = (before + _idle_rate(pid)) / 2
    busy = max(0.0, spent - idle * elapsed)
    print(
        f"  {component.name}: {len(keys):,} events in {elapsed:.1f} s, {spent:.2f} CPU-s "
        f"(idle {idle * 1000:.0f} ms/s)",
        flush=True,
    )
    return busy / len(keys) * 1000 * 1000


_STAMPS = itertools.count(1)


class _NotMeasuredError(Exception):
    """A figure this run could not measure (said, and the others still printed)."""


def _idle_rate(pid: int, window: float = 10.0) -> float:
    before = _cpu_seconds(pid)
    time.sleep(window)
    return (_cpu_seconds(pid) - before) / window


def _run(component: Component, world: World, state: Path, *, measure: bool) -> Run:
    rng = random.Random(42)
    with _fresh_textfiles(world), _running(component, world, state) as (popen, port):
        try:
            ready = _wait_ready(popen, port)
            run = Run(ready_seconds=ready, steady_rss=0, peak_rss=0)
            if component.name == "descheduler":
                _wait_cycles(port, 1, timeout=600)
            if measure:
                try:
                    run.event_cpu_ms = _event_cpu(popen, world, component, rng)
                    run.event_floor_ms = _event_floor_ms(world, rng)
                except _NotMeasuredError as error:
                    print(f"  {component.name}: CPU per event not measured: {error}", flush=True)
            if measure and component.name == "descheduler":
                done = _scrape(port, "tas_descheduler_cycle_cpu_seconds_count")
                spent = _scrape(port, "tas_descheduler_cycle_cpu_seconds_sum")
                _wait_cycles(port, done + 1, timeout=DESCHEDULING_INTERVAL * 3 + 600)
                cycles = _scrape(port, "tas_descheduler_cycle_cpu_seconds_count") - done
                total = _scrape(port, "tas_descheduler_cycle_cpu_seconds_sum") - spent
                run.cycle_seconds = total / cycles
            time.sleep(3)
            run.steady_rss = _proc_status(popen.pid, "VmRSS")
            run.peak_rss = _proc_status(popen.pid, "VmHWM")
            return run
        except RuntimeError as error:
            raise RuntimeError(
                f"{component.name}: {error}\n{_log_tail(state, component)}"
            ) from error


# ---------------------------------------------------------------- the floors


def _event_floor_ms(world: World, rng: random.Random) -> float:
    """CPU ms to `json.loads` 1,000 pod watch event lines as the emulator sends them."""
    keys = rng.sample(world.linked + world.others, 1000)
    lines = [
        orjson.dumps({"type": "MODIFIED", "object": world.api.get("pods", name, namespace=ns)})
        for ns, name in keys
    ]

    def parse() -> None:
        for line in lines:
            json.loads(line)

    return median_cpu_seconds(parse, runs=5, prepare=gc.collect) * 1000


def _cycle_floor_seconds(world: World) -> float:
    """bench_descheduler's floor on this world: one pass over every node and pod."""
    shared = SharedValues()
    store = world.api.store
    nodes = [node_from_api(raw, shared) for raw in store.list(BY_PLURAL["nodes"], None)[0]]
    pods = [pod_from_api(raw, shared) for raw in store.list(BY_PLURAL["pods"], None)[0]]

    def one_pass() -> None:
        requested = dict.fromkeys((node.name for node in nodes), 0.0)
        for pod in pods:
            if pod.node_name is not None:
                requested[pod.node_name] += pod.requests.get("cpu", 0.0)

    return median_cpu_seconds(one_pass, runs=5, prepare=gc.collect)


# ---------------------------------------------------------------- main


def main() -> None:
    pods = NODES * PODS_PER_NODE
    with tempfile.TemporaryDirectory(prefix="tas-scale-") as scratch:
        root = Path(scratch)
        (root / "empty").mkdir()
        (root / "full").mkdir()
        started = time.monotonic()
        empty = _build(root / "empty", pods=False)
        full = _build(root / "full", pods=True)
        print(
            f"  world: {NODES:,} nodes, {full.pods:,} pods ({len(full.linked):,} linked to "
            f"{POLICY_NAME}), built in {time.monotonic() - started:.0f} s",
            flush=True,
        )
        try:
            cycle_floor = _cycle_floor_seconds(full)
            gc.collect()
            rows = []
            for component in COMPONENTS:
                alone = _run(component, empty, root / "empty", measure=False)
                loaded = _run(component, full, root / "full", measure=True)
                rows.append((component, alone, loaded))
                _report(component, alone, loaded, pods, cycle_floor)
            _sizing(rows, pods)
        finally:
            empty.api.stop()
            full.api.stop()


def _report(
    component: Component,
    alone: Run,
    loaded: Run,
    pods: int,
    cycle_floor: float,
) -> None:
    name = component.name
    print(
        f"  {name}: RSS {alone.steady_rss / MiB:.0f} MiB with no pod, "
        f"{loaded.steady_rss / MiB:.0f} MiB with {pods:,} (peak {loaded.peak_rss / MiB:.0f} MiB)",
        flush=True,
    )
    print_figure(Figure(f"{name} ready", loaded.ready_seconds, "s", max_value=READY_GOAL_SECONDS))
    print_figure(
        Figure(
            f"{name} peak RSS",
            loaded.peak_rss / MiB,
            "MiB",
            floor=loaded.steady_rss / MiB,
            floor_name="RSS after sync",
            max_ratio=PEAK_MAX_RATIO,
        )
    )
    print_figure(
        Figure(
            f"{name} RSS per pod",
            (loaded.steady_rss - alone.steady_rss) / pods / KiB,
            "KiB",
            max_value=PER_POD_GOAL_KIB[name],
        )
    )
    if loaded.event_cpu_ms is not None:
        print_figure(
            Figure(
                f"{name} CPU per 1,000 pod watch events",
                loaded.event_cpu_ms,
                "ms",
                floor=loaded.event_floor_ms,
                floor_name="json.loads of the lines",
                max_ratio=EVENT_MAX_RATIO,
            )
        )
    if loaded.cycle_seconds is not None:
        print_figure(
            Figure(
                f"{name} LoadAware cycle CPU at {pods:,} pods",
                loaded.cycle_seconds,
                "s",
                floor=cycle_floor,
                floor_name="one pass over nodes and pods",
                max_ratio=CYCLE_MAX_RATIO,
            )
        )


def _sizing(rows: Sequence[tuple[Component, Run, Run]], pods: int) -> None:
    """The figures docs/deploy.md's sizing table is read from: per component, the memory
    with no pod, per 10,000 pods, and the CPU of 10,000 pod events."""
    print("  sizing (docs/deploy.md): memory = base + per 10,000 pods; CPU per 10,000 events")
    for component, alone, loaded in rows:
        per_10k = (loaded.steady_rss - alone.steady_rss) / pods * 10_000 / MiB
        events = (loaded.event_cpu_ms or 0.0) * 10 / 1000
        print(
            f"    {component.name}: base {alone.steady_rss / MiB:.0f} MiB, "
            f"+{per_10k:.1f} MiB per 10,000 pods, peak {loaded.peak_rss / MiB:.0f} MiB at "
            f"{pods:,}; {events:.2f} CPU-seconds per 10,000 pod events",
            flush=True,
        )
