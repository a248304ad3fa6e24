"""The descheduler waits for its caches as long as the API server takes, as the extender and
the controller do, instead of exiting (and crash-looping) after a fixed time.

Against the API emulator with the pod list held (an API server slow to list 150,000 pods):
- the process keeps running, /healthz answers 200 and /readyz 503 while pods are listing, and
  /readyz turns 200 once the list comes, with no restart;
- the extender and the controller, with `--policies` files, serve the files' policies at once
  and wait for the caches the same way (`tas.runtime.startup.wait_for_caches`), naming them;
- the wait itself (`descheduler.runtime._wait_for_caches`) never gives up: every warning
  interval it warns, naming the cache still listing (pods, not nodes), holds liveness meanwhile
  (however long the wait, the first cycle's allowance counts from when the caches are full),
  returns True once the list comes, and False at once when stopped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from descheduler.liveness import CycleLiveness
from descheduler.runtime import _wait_for_caches
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.cluster.interface import ResourceKind
from tests.builders import ManualClock
from tests.k8s_emulator import KubeEmulator
from tests.processes import Process, free_port, tas_command
from tests.waiting import eventually

POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: tas
    plugins:
      deschedule: {enabled: [TASViolations]}
"""


def status(url: str) -> int | None:
    try:
        return httpx.get(url, timeout=1.0).status_code
    except httpx.HTTPError:
        return None


def test_a_slow_pod_list_keeps_the_descheduler_unready_not_gone(
    kube_emulator: KubeEmulator, tmp_path: Path
) -> None:
    api = kube_emulator
    api.create("nodes", {"metadata": {"name": "node-a"}})
    api.hold_lists("pods")
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    args = tas_command(
        "descheduler", "--policy-config-file", str(policy),
        "--kubeconfig", str(api.write_kubeconfig(tmp_path / "kubeconfig")),
        "--mode", "Predictive", "--descheduling-interval", "1s",
        "--listen-metrics", f"127.0.0.1:{port}",
    )  # fmt: skip
    with Process(args, base, None, tmp_path / "descheduler.log") as process:
        process.start()
        process.eventually(lambda: status(base + "/healthz") == 200, "/healthz", 20)
        for _ in range(30):  # 3 s with the list held: alive, not ready
            assert process.running, process.output()
            assert status(base + "/readyz") == 503
            time.sleep(0.1)
        api.release_lists("pods")
        process.eventually(
            lambda: status(base + "/readyz") == 200, "/readyz after the list came", 20
        )
        assert process.running, process.output()
        assert process.terminate() == 0
    assert "did not fill" not in process.output()


@pytest.fixture
def cluster(kube_emulator: KubeEmulator) -> Iterator[KubernetesCluster]:
    kube_emulator.create("nodes", {"metadata": {"name": "node-a"}})
    kube_emulator.hold_lists("pods")
    cluster = KubernetesCluster(
        kube_emulator.api_client(),
        watched=[ResourceKind.NODE, ResourceKind.POD],
        watch_timeout=2.0,
    )
    cluster.start()
    yield cluster
    kube_emulator.release_lists("pods")
    cluster.stop()


def test_the_wait_never_gives_up_names_what_is_listing_and_holds_liveness(
    kube_emulator: KubeEmulator, cluster: KubernetesCluster, caplog: pytest.LogCaptureFixture
) -> None:
    clock = ManualClock()
    liveness = CycleLiveness(interval=1.0, cron=None, clock=clock)
    stop = threading.Event()
    result: list[bool] = []
    waiter = threading.Thread(
        target=lambda: result.append(
            _wait_for_caches(cluster, stop, liveness=liveness, warn_seconds=0.5)
        )
    )
    with caplog.at_level(logging.WARNING, logger="descheduler"):
        waiter.start()
        time.sleep(2.0)  # four warning intervals, far past any allowance of the clock below
        clock.advance(3600)
        time.sleep(0.5)
        assert waiter.is_alive()
        assert liveness.live()  # listing is progress: the probe does not restart us
        warnings = [r.getMessage() for r in caplog.records if "still listing" in r.getMessage()]
        assert len(warnings) >= 3
        assert all("still listing: pods" in w for w in warnings), warnings
        assert not any("nodes" in w for w in warnings), warnings
        kube_emulator.release_lists("pods")
        waiter.join(10)
    assert result == [True]


def test_the_wait_ends_at_once_when_stopped(cluster: KubernetesCluster) -> None:
    stop = threading.Event()
    stop.set()
    liveness = CycleLiveness(interval=1.0, cron=None, clock=ManualClock())
    started = time.monotonic()
    assert _wait_for_caches(cluster, stop, liveness=liveness) is False
    assert time.monotonic() - started < 2.0


def test_policies_from_files_are_served_while_the_caches_fill_and_the_wait_is_named(
    kube_emulator: KubeEmulator,
    cluster: KubernetesCluster,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The extender and the controller with `--policies` files: the files' policies are in the
    store at once, and the caches (pods held) are waited for as the descheduler waits, with a
    warning naming what is still listing, until they fill."""
    from tas.policies.store import PolicyStore
    from tas.runtime.process import Lifetime
    from tas.runtime.startup import follow_policies

    monkeypatch.setattr("tas.runtime.startup.CACHE_SYNC_WARN_SECONDS", 0.5)
    files = tmp_path / "policies"
    files.mkdir()
    (files / "demo.yaml").write_text(
        "apiVersion: telemetry.intel.com/v1alpha1\nkind: TASPolicy\n"
        "metadata: {name: demo, namespace: default}\n"
        "spec:\n  strategies:\n    dontschedule:\n      rules:\n"
        "        - {metricname: health_metric, operator: Equals, target: 1}\n"
    )
    store = PolicyStore()
    life = Lifetime("test", shutdown_seconds=2.0)
    with life, caplog.at_level(logging.INFO, logger="tas"):
        follow_policies(files, store, life, cluster=cluster, poll_seconds=1.0)
        assert [key.name for key in store.snapshot().policies] == ["demo"]
        eventually(
            lambda: any("still listing: pods" in r.getMessage() for r in caplog.records),
            20,
            what="a warning naming the pods cache",
            poll=0.1,
        )
        kube_emulator.release_lists("pods")
        eventually(
            lambda: any("Cluster caches filled" in r.getMessage() for r in caplog.records),
            20,
            what="the wait's end",
            poll=0.1,
        )
        life.stop.set()
