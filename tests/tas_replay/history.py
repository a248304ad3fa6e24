"""Recorded history for the replay tests: OpenMetrics with known series, backfilled with
`promtool tsdb create-blocks-from openmetrics`, and a real Prometheus serving that storage.

The story, one hour from `T0` (every series sampled every 15 s from `T0 - 5m`, times are
seconds after `T0`):

- `node_health_metric` on node-a..node-d is 0, except node-a at 1 in [600, 1200) (a threshold
  crossed at known times) and node-b at 1 in [1400, 1500) followed by no samples at all until
  1800 (a scrape gap: Prometheus would carry the 1 forward for five minutes); every node at 1
  in [2400, 2700) (a fleet-wide jump: the breaker's case).
- pods (kube-state-metrics): web-1 (labelled `telemetry-policy: health`) and other-1 (no label)
  on node-a all along; web-2 (labelled) on node-c all along; web-3 (labelled) placed on node-a
  at 900, while node-a violates. web-* are owned by ReplicaSet web-abc; other-1 by none.
- for a scenario: each node's allocatable (4 cores, 8 GiB, 110 pods), requests, and cAdvisor
  usage (0.25 cores and 100 MB per pod).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.processes import Process, free_port
from tests.tas.adapters.metrics.processes import binary

NODES = ("node-a", "node-b", "node-c", "node-d")
SCRAPE = 15
#: Whole hours, so the blocks promtool cuts (2 h, aligned) hold the whole story.
T0 = (int(time.time()) // 7200) * 7200 - 4 * 3600
END = 3600


def _health(node: str, at: int) -> float | None:
    if node == "node-b" and 1500 <= at < 1800:
        return None
    if 2400 <= at < 2700:
        return 1.0
    if node == "node-a" and 600 <= at < 1200:
        return 1.0
    if node == "node-b" and 1400 <= at < 1500:
        return 1.0
    return 0.0


#: pod -> (node, labelled, first second on the node, started at)
PODS = {
    "web-1": ("node-a", True, -300, -400),
    "other-1": ("node-a", False, -300, -400),
    "web-2": ("node-c", True, -300, -400),
    "web-3": ("node-a", True, 900, 895),
}


def _family(
    lines: list[str], name: str, series: Callable[[int], Iterator[tuple[str, float]]]
) -> None:
    """One metric family: every sample of every labelled series, series by series."""
    by_labels: dict[str, list[tuple[int, float]]] = {}
    for at in range(-300, END + 1, SCRAPE):
        for labels, value in series(at):
            by_labels.setdefault(labels, []).append((at, value))
    for labels, points in by_labels.items():
        lines.extend(f"{name}{{{labels}}} {value} {T0 + at}" for at, value in points)


def openmetrics() -> str:
    lines: list[str] = []

    def health(at: int) -> Iterator[tuple[str, float]]:
        for node in NODES:
            value = _health(node, at)
            if value is not None:
                yield f'instance="{node}",job="node"', value

    def on_node(at: int) -> Iterator[tuple[str, str]]:
        for pod, (node, _, since, _) in PODS.items():
            if at >= since:
                yield pod, node

    def info(at: int) -> Iterator[tuple[str, float]]:
        for pod, node in on_node(at):
            yield f'namespace="default",pod="{pod}",node="{node}",uid="{pod}-uid"', 1.0

    def labels(at: int) -> Iterator[tuple[str, float]]:
        for pod, _ in on_node(at):
            label = ',label_telemetry_policy="health"' if PODS[pod][1] else ""
            yield f'namespace="default",pod="{pod}"{label}', 1.0

    def owner(at: int) -> Iterator[tuple[str, float]]:
        for pod, _ in on_node(at):
            kind, name = (
                ("ReplicaSet", "web-abc") if pod.startswith("web") else ("<none>", "<none>")
            )
            yield f'namespace="default",pod="{pod}",owner_kind="{kind}",owner_name="{name}"', 1.0

    def started(at: int) -> Iterator[tuple[str, float]]:
        for pod, _ in on_node(at):
            yield f'namespace="default",pod="{pod}"', float(T0 + PODS[pod][3])

    def allocatable(at: int) -> Iterator[tuple[str, float]]:
        for node in NODES:
            yield f'node="{node}",resource="cpu",unit="core"', 4.0
            yield f'node="{node}",resource="memory",unit="byte"', 8.0 * 2**30
            yield f'node="{node}",resource="pods",unit="integer"', 110.0

    def requests(at: int) -> Iterator[tuple[str, float]]:
        for pod, _ in on_node(at):
            yield f'namespace="default",pod="{pod}",container="app",resource="cpu",unit="core"', 0.5
            yield (
                f'namespace="default",pod="{pod}",container="app",resource="memory",unit="byte"',
                2.0**28,
            )

    def cpu(at: int) -> Iterator[tuple[str, float]]:
        for pod, _ in on_node(at):
            since = PODS[pod][2]
            yield f'namespace="default",pod="{pod}",container="app"', 0.25 * (at - since)

    def memory(at: int) -> Iterator[tuple[str, float]]:
        for pod, _ in on_node(at):
            yield f'namespace="default",pod="{pod}",container="app"', 1e8

    _family(lines, "node_health_metric", health)
    _family(lines, "kube_pod_info", info)
    _family(lines, "kube_pod_labels", labels)
    _family(lines, "kube_pod_owner", owner)
    _family(lines, "kube_pod_start_time", started)
    _family(lines, "kube_node_status_allocatable", allocatable)
    _family(lines, "kube_pod_container_resource_requests", requests)
    _family(lines, "container_cpu_usage_seconds_total", cpu)
    _family(lines, "container_memory_working_set_bytes", memory)
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def backfilled_prometheus(workdir: Path) -> Process:
    """A Prometheus (not started) whose storage holds `openmetrics()`, scraping nothing."""
    source = workdir / "history.om"
    source.write_text(openmetrics())
    data = workdir / "data"
    done = subprocess.run(
        [binary("promtool"), "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    config = workdir / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 1m\n")
    port = free_port()
    args = [
        binary("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={data}",
        # The backfilled blocks are hours old: keep them (the default would too, but say it).
        "--storage.tsdb.retention.time=30d",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    return Process(args, f"http://127.0.0.1:{port}", "/-/ready", workdir / "prometheus.log")
