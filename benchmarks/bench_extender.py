"""Extender speed over real loopback HTTP, each figure next to a floor measured in this run.

- The latency the extender adds to scheduling one pod: `NodeNames` with 500 candidates (what
  kube-scheduler sends an extender with `nodeCacheCapable: true` at 5,000 nodes, where its
  default `percentageOfNodesToScore` scores 10%), one request at a time as kube-scheduler's
  scheduling cycle makes them: p50 and p99 of filter and of prioritize, each against the same
  quantile of the same work in-process (goals: p50 <= 3 ms, p99 <= 10 ms). Alone:
  `python -m benchmarks.bench_extender latency`.
- `NodeNames` with 500 candidates: median filter and prioritize latency (goal <= 3 ms), also
  with recent placements (herd control) on 10% of the cluster's nodes, filtering on estimates
  too (goal <= 3 ms), and a
  load generator (several keep-alive connections, mixed filter and prioritize, bounded to a few
  seconds) for throughput (goal >= 1,400 requests/s) and p99 latency (goal <= 20 ms).
- Full `Nodes`, 5,000 nodes built from the example Node objects (about 22 MB): median filter
  latency against the in-process codec floor (decode keeping nodes as raw bytes and validating
  every byte, decide, re-emit the kept ones; goal <= 1.5x) and against a naive full parse and
  re-serialisation with the standard json module (goal <= 0.25x).

The server runs in a child process (uvicorn, log level warning so the per-decision info lines
are not written) and the clients speak raw HTTP/1.1 over sockets, as kube-scheduler's Go client
does, so the client's own cost stays small. Both share the machine's cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.report import Figure, print_figure

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "shared" / "examples"
NAMESPACE = "bench"
POLICY = f"""
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata: {{name: bench-policy, namespace: {NAMESPACE}}}
spec:
  strategies:
    dontschedule:
      rules:
        - {{metricname: health_metric, operator: Equals, target: 1}}
        - {{metricname: health_metric, operator: Equals, target: 2}}
    scheduleonmetric:
      rules:
        - {{metricname: cpu_utilization, operator: LessThan}}
"""
_T = TypeVar("_T")
CLUSTER_NODES = 5000
CANDIDATES = 500
LOAD_SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "5"))
LOAD_CONNECTIONS = 8


def node_name(index: int) -> str:
    return f"node-{index:05d}"


def metric_values() -> dict[str, dict[str, float]]:
    """One node in ten violates dontschedule; cpu utilization spreads over 0..1."""
    names = [node_name(i) for i in range(CLUSTER_NODES)]
    return {
        "health_metric": {n: 1.0 if i % 10 == 3 else 0.0 for i, n in enumerate(names)},
        "cpu_utilization": {n: (i * 37 % 100) / 100 for i, n in enumerate(names)},
    }


def example_pod() -> dict[str, Any]:
    pod: dict[str, Any] = json.loads((EXAMPLES / "extender-filter-nodes.json").read_text())["Pod"]
    pod["metadata"]["namespace"] = NAMESPACE
    pod["metadata"]["labels"]["telemetry-policy"] = "bench-policy"
    return pod


def names_body(count: int) -> bytes:
    names = [node_name(i * (CLUSTER_NODES // count)) for i in range(count)]
    return json.dumps({"Pod": example_pod(), "Nodes": None, "NodeNames": names}).encode()


def nodes_body(count: int) -> bytes:
    """A NodeList as kube-scheduler sends it (compact Go JSON) from the example Node objects."""
    example = json.loads((EXAMPLES / "extender-filter-nodes.json").read_text())
    templates = example["Nodes"]["items"]
    items = []
    for index in range(count):
        node = copy.deepcopy(templates[index % len(templates)])
        name = node_name(index)
        node["metadata"]["name"] = name
        node["metadata"]["labels"]["kubernetes.io/hostname"] = name
        # Real nodes carry JSON inside annotation strings (CSI node ids): brackets in strings.
        node["metadata"]["annotations"]["csi.volume.kubernetes.io/nodeid"] = json.dumps(
            {"csi.example.com": name}
        )
        items.append(node)
    document = {"Pod": example_pod(), "Nodes": {"metadata": {}, "items": items}, "NodeNames": None}
    return json.dumps(document, separators=(",", ":")).encode()


# -- the server, in a child process --------------------------------------------------------


#: Recent placements: one pod bound just now on every tenth node of the cluster.
PLACED_SHARE = 10


def placement_estimates() -> Callable[[], Any]:
    """What `tas extender` wires with recent placements on: a tracker fed with the pods, read
    against the nodes' sample times (all older than the binds, so every estimate counts)."""
    from tas.cluster.model import OwnerReference, Pod
    from tas.types import MetricName, Namespace, NodeName
    from tas_herd.placements import PlacementTracker

    now = time.time()
    tracker = PlacementTracker(default_capacity={"cpu": 16.0, "memory": 64.0 * 1024**3})
    for index in range(0, CLUSTER_NODES, PLACED_SHARE):
        tracker.observe(
            Pod(
                namespace=Namespace(NAMESPACE),
                name=f"burst-{index}",
                node_name=NodeName(node_name(index)),
                requests={"cpu": 0.5, "memory": 512.0 * 1024**2},
                owners=(OwnerReference("ReplicaSet", "burst", controller=True),),
            ),
            now=now,
        )
    sampled = dict.fromkeys((node_name(i) for i in range(CLUSTER_NODES)), now - 10.0)
    times = {MetricName(m): {NodeName(n): t for n, t in sampled.items()} for m in metric_values()}

    def estimates() -> Any:
        return tracker.estimates(sample_times=times, now=time.time())

    return estimates


def serve_child(port: int, placements: bool = False) -> None:
    """Entry point of the child process: the real app on uvicorn, static metric values."""
    from prometheus_client import CollectorRegistry

    from extender.app import create_app
    from extender.server import ExtenderServer, tune_allocator
    from extender.settings import ExtenderSettings
    from tas.metrics.static import StaticMetricView
    from tas.policies.model import load_policies_text
    from tas.policies.store import PolicyStore
    from tas_herd.readings import HerdReadings

    store = PolicyStore()
    store.replace(load_policies_text(POLICY).policies)
    view = StaticMetricView(metric_values())
    settings = ExtenderSettings(
        filter_estimate_policies=frozenset({"bench-policy"}) if placements else frozenset()
    )
    app = create_app(
        store=store,
        metrics=view,
        settings=settings,
        registry=CollectorRegistry(),
        herd=HerdReadings(placement_estimates()) if placements else None,
    )
    tune_allocator()  # as `tas extender` does
    ExtenderServer(app, host="127.0.0.1", port=port, log_level="warning").run()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(*, placements: bool = False) -> Iterator[int]:
    """The server started (`start_server`), its port, and stopped after."""
    process, port = start_server(placements=placements)
    try:
        yield port
    finally:
        process.terminate()
        process.wait(10)


def _tuned() -> None:
    """Say the cores, and tune the allocator as the server does, so the in-process floors are
    not inflated by page faults the server does not pay."""
    from extender.server import tune_allocator

    print(f"  cores: {os.cpu_count()} (shared by the server process and the clients)")
    print(f"  allocator tuned for large bodies: {tune_allocator()}")


def start_server(*, placements: bool = False) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    code = f"from benchmarks.bench_extender import serve_child; serve_child({port}, {placements})"
    process = subprocess.Popen([sys.executable, "-c", code], cwd=Path(__file__).parent.parent)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, port
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the extender did not start")


# -- a minimal keep-alive HTTP/1.1 client ----------------------------------------------------


def request_bytes(path: str, body: bytes) -> bytes:
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        if line[:15].lower() == b"content-length:":
            return int(line[15:])
    raise RuntimeError(f"no Content-Length in {head!r}")


class BlockingClient:
    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray(64 * 1024 * 1024)

    def call(self, request: bytes) -> memoryview:
        """Send one request; the answer's body, valid until the next call (never copied)."""
        self.sock.sendall(request)
        view = memoryview(self.buffer)
        size = 0
        while True:
            got = self.sock.recv_into(view[size:])
            if not got:
                raise RuntimeError("connection closed")
            size += got
            end = self.buffer.find(b"\r\n\r\n", 0, size)
            if end >= 0:
                break
        total = end + 4 + _content_length(bytes(self.buffer[:end]))
        while size < total:
            got = self.sock.recv_into(view[size:])
            if not got:
                raise RuntimeError("connection closed")
            size += got
        status = bytes(self.buffer[9:12])
        if status != b"200":
            raise RuntimeError(f"status {status!r}: {bytes(self.buffer[:200])!r}")
        return view[end + 4 : total]

    def close(self) -> None:
        self.sock.close()


def median_seconds(action: Callable[[], object], *, repeat: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        action()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def median_pair(
    first: Callable[[], object], second: Callable[[], object], *, repeat: int, warmup: int = 2
) -> tuple[float, float]:
    """Median times of two actions run alternately."""
    first_times, second_times = quantiles_pair(first, second, repeat=repeat, warmup=warmup)
    return statistics.median(first_times), statistics.median(second_times)


def quantiles_pair(
    first: Callable[[], object], second: Callable[[], object], *, repeat: int, warmup: int = 20
) -> tuple[list[float], list[float]]:
    """Every timing of two actions run alternately, sorted: the floor and the figure see the
    same moments of a noisy machine."""
    times: tuple[list[float], list[float]] = ([], [])
    for round_ in range(warmup + repeat):
        for action, kept in ((first, times[0]), (second, times[1])):
            started = time.perf_counter()
            action()
            if round_ >= warmup:
                kept.append(time.perf_counter() - started)
    return sorted(times[0]), sorted(times[1])


def quantile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


#: Requests per verb for the latency quantiles: enough for a p99 of 20 timings above it.
LATENCY_REPEAT = 2000


def scheduling_latency(port: int) -> None:
    """p50 and p99 of one filter and one prioritize with 500 `NodeNames` over loopback HTTP,
    one request at a time, each next to the same quantile of the same work in-process."""
    body = names_body(CANDIDATES)
    client = BlockingClient(port)
    try:
        for verb in ("filter", "prioritize"):
            request = request_bytes(f"/scheduler/{verb}", body)
            floor, latency = quantiles_pair(
                in_process(verb, body),
                functools.partial(client.call, request),
                repeat=LATENCY_REPEAT,
            )
            for name, q, goal in (("p50", 0.5, 3.0), ("p99", 0.99, 10.0)):
                print_figure(
                    Figure(
                        f"NodeNames x{CANDIDATES} {verb} {name} latency, one at a time "
                        "(loopback HTTP, uvicorn)",
                        quantile(latency, q) * 1000,
                        "ms",
                        floor=quantile(floor, q) * 1000,
                        floor_name=f"in-process {verb} {name}",
                        max_value=goal,
                    )
                )
    finally:
        client.close()


# -- load ------------------------------------------------------------------------------------


async def _load_connection(
    port: int, requests: list[bytes], until: float, latencies: list[float]
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        index = 0
        while time.perf_counter() < until:
            started = time.perf_counter()
            writer.write(requests[index % len(requests)])
            index += 1
            head = await reader.readuntil(b"\r\n\r\n")
            await reader.readexactly(_content_length(head))
            if head[9:12] != b"200":
                raise RuntimeError(f"status {head[:40]!r}")
            latencies.append(time.perf_counter() - started)
    finally:
        writer.close()


async def _load(port: int, requests: list[bytes]) -> tuple[float, list[float]]:
    latencies: list[float] = []
    started = time.perf_counter()
    until = started + LOAD_SECONDS
    await asyncio.gather(
        *(_load_connection(port, requests, until, latencies) for _ in range(LOAD_CONNECTIONS))
    )
    return time.perf_counter() - started, latencies


def _run_async(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """uvloop when installed (uvicorn[standard] brings it): the client's cost stays small."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coroutine)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(coroutine)


# -- in-process floors -----------------------------------------------------------------------


def in_process(verb: str, body: bytes) -> Callable[[], bytes]:
    """The work of one request without HTTP: decode (nodes kept as raw bytes, validated),
    decide through the extender's own service (recorded and counted as the app does), encode."""
    from prometheus_client import CollectorRegistry

    from extender.decisions import DecisionLog
    from extender.self_metrics import ExtenderMetrics
    from extender.service import DecisionReporter, ExtenderService
    from extender.settings import ExtenderSettings
    from extender.wire import decode_args, encode_filter_result, encode_priorities
    from tas.metrics.static import StaticMetricView
    from tas.policies.model import load_policies_text
    from tas.policies.store import PolicyStore

    store = PolicyStore()
    store.replace(load_policies_text(POLICY).policies)
    settings = ExtenderSettings()
    reporter = DecisionReporter(
        DecisionLog(settings.decision_log_size), ExtenderMetrics(CollectorRegistry())
    )
    service = ExtenderService(
        store=store,
        metrics=StaticMetricView(metric_values()),
        settings=settings,
        record=reporter.record,
    )

    def run_filter() -> bytes:
        args = decode_args(body)
        decision = service.filter(args.pod, args.candidates)
        return encode_filter_result(args=args, failed=decision.failed, unresolvable=True)

    def run_prioritize() -> bytes:
        args = decode_args(body)
        return encode_priorities(service.prioritize(args.pod, args.candidates).scores)

    return run_filter if verb == "filter" else run_prioritize


def naive_filter(body: bytes) -> Callable[[], bytes]:
    """The naive codec: parse everything with json, drop violating nodes, serialise it all."""
    violating = {n for n, v in metric_values()["health_metric"].items() if v in (1.0, 2.0)}

    def run() -> bytes:
        document = json.loads(body)
        items = document["Nodes"]["items"]
        kept = [item for item in items if item["metadata"]["name"] not in violating]
        failed = {
            item["metadata"]["name"]: "violating"
            for item in items
            if item["metadata"]["name"] in violating
        }
        result = {
            "Nodes": {**document["Nodes"], "items": kept},
            "NodeNames": None,
            "FailedNodes": {},
            "FailedAndUnresolvableNodes": failed,
            "Error": "",
        }
        return json.dumps(result).encode()

    return run


def _placements_figures(filter_request: bytes, prioritize_request: bytes) -> None:
    with serving(placements=True) as port:
        client = BlockingClient(port)
        for verb, request in (("filter", filter_request), ("prioritize", prioritize_request)):
            latency = median_seconds(functools.partial(client.call, request), repeat=300)
            print_figure(
                Figure(
                    f"NodeNames x{CANDIDATES} {verb} median latency, recent placements on "
                    f"{100 // PLACED_SHARE}% of nodes",
                    latency * 1000,
                    "ms",
                    max_value=3.0,
                )
            )
        client.close()


def main() -> None:
    _tuned()
    with serving() as port:
        small = names_body(CANDIDATES)
        filter_small = request_bytes("/scheduler/filter", small)
        prioritize_small = request_bytes("/scheduler/prioritize", small)
        client = BlockingClient(port)
        for verb, request in (("filter", filter_small), ("prioritize", prioritize_small)):
            floor = median_seconds(in_process(verb, small), repeat=200)
            latency = median_seconds(functools.partial(client.call, request), repeat=300)
            print_figure(
                Figure(
                    f"NodeNames x{CANDIDATES} {verb} median latency (loopback HTTP)",
                    latency * 1000,
                    "ms",
                    floor=floor * 1000,
                    floor_name=f"in-process {verb}",
                    max_value=3.0,
                )
            )
        client.close()
        scheduling_latency(port)
        _placements_figures(filter_small, prioritize_small)
        elapsed, latencies = _run_async(_load(port, [filter_small, prioritize_small]))
        latencies.sort()
        print_figure(
            Figure(
                f"load: {LOAD_CONNECTIONS} connections, mixed filter+prioritize, "
                f"{elapsed:.1f} s, throughput",
                len(latencies) / elapsed,
                "requests/s",
                min_value=1400,
            )
        )
        print_figure(
            Figure(
                "load: p99 latency",
                latencies[int(len(latencies) * 0.99)] * 1000,
                "ms",
                max_value=20.0,
            )
        )

        big = nodes_body(CLUSTER_NODES)
        print(f"  Nodes body: {CLUSTER_NODES} nodes, {len(big) / 1e6:.1f} MB")
        naive_big = median_seconds(naive_filter(big), repeat=3, warmup=0)
        client = BlockingClient(port)
        # Interleaved, so the floor and the HTTP figure see the same moments of a noisy machine.
        floor_big, latency_big = median_pair(
            in_process("filter", big),
            functools.partial(client.call, request_bytes("/scheduler/filter", big)),
            repeat=11,
        )
        client.close()
        print_figure(
            Figure(
                f"Nodes x{CLUSTER_NODES} filter median latency (loopback HTTP)",
                latency_big * 1000,
                "ms",
                floor=floor_big * 1000,
                floor_name="in-process scan + validate + re-emit",
                max_ratio=1.5,
            )
        )
        print_figure(
            Figure(
                f"Nodes x{CLUSTER_NODES} filter median latency (loopback HTTP)",
                latency_big * 1000,
                "ms",
                floor=naive_big * 1000,
                floor_name="naive json parse + dump, in-process",
                max_ratio=0.25,
            )
        )


def latency_only() -> None:
    """`python -m benchmarks.bench_extender latency`: the scheduling latency case alone."""
    _tuned()
    with serving() as port:
        scheduling_latency(port)


if __name__ == "__main__":
    if sys.argv[1:] == ["latency"]:
        latency_only()
    else:
        main()
