"""Per-pod usage from the kubelets' `/metrics/resource`, through the API server's node proxy.

The pages are served by the API emulator at `/api/v1/nodes/<node>/proxy/metrics/resource` and
read by the real `KubernetesCluster.read_node_proxy` (a real HTTP request, the path sent with
its slashes), the clock is a fake one. Covered:
- CPU: each container's counter becomes a rate over the samples' own timestamps, summed per
  pod; memory: the working set gauge, summed per pod;
- a counter that goes down (a restarted container) starts over instead of a negative rate;
- container-level pressure (`container_pressure_*_waiting_seconds_total`, what KubeletPSI
  exports) is used when a page read carries it, as a 0..1 rate;
- a node that cannot be read keeps its last values until they go stale; a pod missing from a
  good answer is gone; with no fresh CPU value left and a failing node, fetch raises; the
  failure is logged once as it starts and once as it ends, not at every read;
- a node not in the cluster is a 404, a kubelet without the page a 503 (`MetricFetchError`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

import pytest

from tas.cluster.interface import ClusterError
from tas.cluster.kubernetes import KubernetesCluster
from tas.metrics.errors import MetricFetchError
from tas.metrics.kubelet import CADVISOR_PATH, RESOURCE_PATH, KubeletPodUsage
from tests.builders import ManualClock
from tests.k8s_emulator import KubeEmulator

T0 = 1_700_000_000.0
NAMESPACE = "shop"


def page(at: float, counters: Mapping[tuple[str, str], float], *, memory: float = 0.0) -> str:
    """A `/metrics/resource` page: per (pod, container) the CPU counter, sampled at `at`."""
    stamp = int(at * 1000)
    lines = ["# TYPE container_cpu_usage_seconds_total counter"]
    for (pod, container), seconds in counters.items():
        labels = f'container="{container}",namespace="{NAMESPACE}",pod="{pod}"'
        lines.append(f"container_cpu_usage_seconds_total{{{labels}}} {seconds} {stamp}")
    lines.append("# TYPE container_memory_working_set_bytes gauge")
    for pod, container in counters:
        labels = f'container="{container}",namespace="{NAMESPACE}",pod="{pod}"'
        lines.append(f"container_memory_working_set_bytes{{{labels}}} {memory} {stamp}")
    lines += [f"node_cpu_usage_seconds_total 99 {stamp}", "resource_scrape_error 0"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def cluster(kube_emulator: KubeEmulator) -> KubernetesCluster:
    for name in ("node-a", "node-b"):
        kube_emulator.create("nodes", {"metadata": {"name": name}})
    return KubernetesCluster(kube_emulator.api_client())


def source(
    cluster: KubernetesCluster, clock: ManualClock, *, paths: tuple[str, ...] = (RESOURCE_PATH,)
) -> KubeletPodUsage:
    def read(node: str, path: str) -> str:
        try:
            return cluster.read_node_proxy(node, path)
        except ClusterError as error:
            raise MetricFetchError(str(error)) from error

    return KubeletPodUsage(
        read, lambda: ["node-a", "node-b"], max_age=60.0, rate_window=60.0, paths=paths, clock=clock
    )


def test_cpu_is_each_containers_rate_summed_per_pod_and_memory_its_working_set(
    kube_emulator: KubeEmulator, cluster: KubernetesCluster
) -> None:
    clock = ManualClock(T0)
    usage = source(cluster, clock)
    kube_emulator.set_kubelet_page("node-b", "metrics/resource", page(T0, {}))
    counters = {("web-1", "app"): 100.0, ("web-1", "sidecar"): 10.0, ("db-1", "db"): 50.0}
    kube_emulator.set_kubelet_page("node-a", "metrics/resource", page(T0 - 5, counters, memory=1e6))
    first = usage.fetch()  # one sample: no rate yet, the working set already
    assert first == {(NAMESPACE, "web-1"): {"memory": 2e6}, (NAMESPACE, "db-1"): {"memory": 1e6}}
    later = {("web-1", "app"): 115.0, ("web-1", "sidecar"): 11.5, ("db-1", "db"): 50.5}
    kube_emulator.set_kubelet_page("node-a", "metrics/resource", page(T0 + 5, later, memory=2e6))
    clock.epoch = T0 + 10
    found = usage.fetch()
    assert found[(NAMESPACE, "web-1")] == pytest.approx({"cpu": 1.65, "memory": 4e6})
    assert found[(NAMESPACE, "db-1")] == pytest.approx({"cpu": 0.05, "memory": 2e6})
    paths = {r.path for r in kube_emulator.requests}
    assert "/api/v1/nodes/node-a/proxy/metrics/resource" in paths


def test_a_restarted_container_starts_over_instead_of_a_negative_rate(
    kube_emulator: KubeEmulator, cluster: KubernetesCluster
) -> None:
    clock = ManualClock(T0)
    usage = source(cluster, clock)
    kube_emulator.set_kubelet_page("node-b", "metrics/resource", page(T0, {}))
    for at, seconds in ((T0, 500.0), (T0 + 10, 2.0), (T0 + 20, 12.0)):
        kube_emulator.set_kubelet_page(
            "node-a", "metrics/resource", page(at, {("p", "c"): seconds})
        )
        clock.epoch = at
        found = usage.fetch()
    assert found[(NAMESPACE, "p")]["cpu"] == pytest.approx(1.0)


def test_container_pressure_is_used_where_a_page_read_carries_it(
    kube_emulator: KubeEmulator, cluster: KubernetesCluster
) -> None:
    clock = ManualClock(T0)
    usage = source(cluster, clock, paths=(RESOURCE_PATH, CADVISOR_PATH))
    for node in ("node-a", "node-b"):
        kube_emulator.set_kubelet_page(node, "metrics/resource", page(T0, {}))
        kube_emulator.set_kubelet_page(node, "metrics/cadvisor", "")
    labels = f'container="app",namespace="{NAMESPACE}",pod="web-1"'
    for at, waited in ((T0, 10.0), (T0 + 10, 14.0)):
        kube_emulator.set_kubelet_page(
            "node-a",
            "metrics/cadvisor",
            f"container_pressure_cpu_waiting_seconds_total{{{labels}}} {waited} {int(at * 1000)}\n"
            f'container_pressure_cpu_waiting_seconds_total{{id="/",container="",pod=""}} 1 1\n',
        )
        clock.epoch = at
        found = usage.fetch()
    assert found == {(NAMESPACE, "web-1"): {"cpu_pressure": pytest.approx(0.4)}}


def test_a_failing_node_keeps_its_values_until_stale_and_a_pod_gone_from_a_good_answer_is_gone(
    kube_emulator: KubeEmulator, cluster: KubernetesCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tas.metrics.kubelet")
    clock = ManualClock(T0)
    usage = source(cluster, clock)
    kube_emulator.set_kubelet_page("node-b", "metrics/resource", page(T0, {}))
    for at, seconds in ((T0, 0.0), (T0 + 10, 5.0)):
        kube_emulator.set_kubelet_page(
            "node-a", "metrics/resource", page(at, {("p", "c"): seconds})
        )
        clock.epoch = at
        usage.fetch()
    kube_emulator.fail_next(r"/nodes/node-a/proxy", status=503, times=2)
    clock.epoch = T0 + 30
    assert usage.fetch()[(NAMESPACE, "p")]["cpu"] == pytest.approx(0.5)  # kept
    clock.epoch = T0 + 71  # the last sample (T0 + 10) is now older than max_age
    with pytest.raises(MetricFetchError, match="no fresh per-pod CPU usage"):
        usage.fetch()
    kube_emulator.set_kubelet_page("node-a", "metrics/resource", page(T0 + 80, {}))
    clock.epoch = T0 + 80
    assert usage.fetch() == {}
    # Two failed reads, one warning; one line again when it recovers.
    assert [(r.levelname, r.getMessage().split(":")[0]) for r in caplog.records] == [
        ("WARNING", "Kubelet metrics of node-a"),
        ("INFO", "Kubelet metrics of node-a recovered"),
    ]


@pytest.mark.parametrize(
    ("node", "status"),
    [
        pytest.param("node-z", "404", id="a node not in the cluster"),
        pytest.param("node-a", "503", id="a kubelet the API server cannot reach"),
    ],
)
def test_a_page_that_cannot_be_read_is_an_error_naming_the_status(
    cluster: KubernetesCluster, node: str, status: str
) -> None:
    with pytest.raises(ClusterError, match=status):
        cluster.read_node_proxy(node, RESOURCE_PATH)
