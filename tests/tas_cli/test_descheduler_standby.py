"""Two descheduler replicas with `--leader-elect`: one leads and evicts, the other stands by.

Both run as real processes against the API emulator, in Automatic mode every second, with a
TASPolicy whose deschedule rule node-c violates and one demo pod on it. Covered:
- the pod is evicted once in all: only the leader runs cycles (and spends the eviction budget);
  the other says it stands by, and its /healthz stays healthy (a standby is not a stopped
  schedule);
- when the leader stops (SIGTERM releases its Lease), the standby leads within seconds.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tas.adapters.metrics.textfile import write_node_series
from tests.builders import policy_document, rule
from tests.k8s_emulator import KubeEmulator
from tests.processes import Process, free_port, tas_command
from tests.waiting import eventually

NAMESPACE = "health-metric-demo"
POLICY = policy_document(
    "demo-policy", namespace=NAMESPACE, deschedule=[rule("health_metric", "Equals", 2)]
)
DESCHEDULER_POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: tas
    pluginConfig:
      - {name: DefaultEvictor, args: {nodeFit: false}}
      - {name: TASViolations, args: {violationSource: Metrics}}
    plugins:
      deschedule: {enabled: [TASViolations]}
"""


def node(name: str) -> dict[str, object]:
    return {
        "metadata": {"name": name},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        },
    }


def demo_pod() -> dict[str, object]:
    return {
        "metadata": {
            "name": "demo-app-1",
            "namespace": NAMESPACE,
            "labels": {"app": "demo", "telemetry-policy": "demo-policy"},
            "ownerReferences": [
                {"kind": "ReplicaSet", "name": "demo-app", "uid": "rs", "controller": True}
            ],
        },
        "spec": {"nodeName": "node-c", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": "Running"},
    }


@pytest.fixture
def replicas(kube_emulator: KubeEmulator, tmp_path: Path) -> Iterator[list[Process]]:
    api = kube_emulator
    for name in ("node-a", "node-b", "node-c"):
        api.create("nodes", node(name))
    api.create("taspolicies", POLICY, namespace=NAMESPACE)
    api.create("pods", demo_pod(), namespace=NAMESPACE)
    metrics = tmp_path / "metrics"
    for name, value in {"node-a": 0.0, "node-b": 0.0, "node-c": 2.0}.items():
        write_node_series(metrics, name, {"node_health_metric": value})
    policy = tmp_path / "policy.yaml"
    policy.write_text(DESCHEDULER_POLICY)
    kubeconfig = api.write_kubeconfig(tmp_path / "kubeconfig")
    started = []
    for name in ("one", "two"):
        port = free_port()
        args = tas_command(
            "descheduler", "--policy-config-file", str(policy), "--kubeconfig", str(kubeconfig),
            "--metrics", f"textfile:{metrics}", "--mode", "Automatic",
            "--descheduling-interval", "1s", "--sync-period", "500ms", "--leader-elect",
            "--lease-namespace", "default", "--listen-metrics", f"127.0.0.1:{port}",
        )  # fmt: skip
        process = Process(
            args,
            f"http://127.0.0.1:{port}",
            "/readyz",
            tmp_path / f"{name}.log",
            env={"POD_NAME": f"tas-descheduler-{name}"},
        )
        process.start(timeout=30)
        started.append(process)
    yield started
    for process in started:
        process.stop()


def _evictions(api: KubeEmulator) -> list[int]:
    """Every eviction asked for, by either replica: a second one would be a 404 or a 429."""
    return [r.status for r in api.requests if r.path.endswith("/eviction")]


def test_only_the_leader_evicts_and_the_standby_says_so(
    kube_emulator: KubeEmulator, replicas: list[Process]
) -> None:
    eventually(
        lambda: _evictions(kube_emulator) == [201], 30, what="the demo pod evicted", poll=0.1
    )
    eventually(
        lambda: (
            sum("Standby: another replica holds the Lease" in p.output() for p in replicas) == 1
        ),
        30,
        what="one replica standing by",
        poll=0.1,
    )
    time.sleep(2)  # two more cycles of each: still one eviction (the pod is gone anyway)
    assert _evictions(kube_emulator) == [201]
    assert sum("Leading: cycles run here" in p.output() for p in replicas) == 1
    for process in replicas:
        assert httpx.get(process.url + "/healthz", timeout=2).status_code == 200


def test_the_standby_leads_once_the_leader_stops(replicas: list[Process]) -> None:
    eventually(
        lambda: sum("Leading: cycles run here" in p.output() for p in replicas) == 1,
        30,
        what="one leader",
        poll=0.1,
    )
    (leader,) = [p for p in replicas if "Leading: cycles run here" in p.output()]
    (standby,) = [p for p in replicas if p is not leader]
    assert leader.terminate() == 0
    standby.eventually(
        lambda: "Leading: cycles run here" in standby.output(), "the standby leads", 20
    )
