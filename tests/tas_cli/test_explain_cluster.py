"""`tas explain` against a Kubernetes API: the RBAC-enforcing emulator (tests/k8s_emulator)
loaded with the shipped manifests (deploy/cluster) and the health-metric demo, the official
client over real HTTP, `tas explain` as a process, and the extender's decision log from a real
extender application on uvicorn that was asked to place the pod.

The demo: node-a at health 0, node-b at 1, node-c at 2, the demo pod on node-c.

Covered:
- with only the descheduler's shipped ClusterRole (the role docs/explain.md tells users to
  run it with): the pod runs on node-c; the extender removed node-b and node-c with the rule
  and value; the descheduler's shipped policy, run dry, would evict it from node-c
  (TASViolations); the one read that role lacks (listing Events) is named as not explained,
  and it is the only refused request; nothing is written (no label, taint, Event or eviction);
- with a user's own credentials: a node's recent evictions are the descheduler's Events;
- an unreachable extender is named, and the rest is still explained;
- an unknown node exits 1 with the names most like it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry

from extender.app import create_app
from extender.decisions import DecisionLog
from extender.server import ExtenderServer
from extender.settings import ExtenderSettings
from tas.adapters.metrics import open_metric_view
from tas.adapters.metrics.textfile import write_node_series
from tas.policies.files import load_policy_path
from tas.policies.store import PolicyStore
from tas.policies.wanted import want_policy_metrics
from tests.deploy.pipeline import rendered
from tests.health_demo import (
    CLUSTER,
    DEMO,
    DEMO_NAMESPACE,
    HEALTH,
    NAMESPACE,
    demo_pod,
    manifests,
    node,
    shipped,
)
from tests.k8s_emulator import KubeEmulator
from tests.processes import free_port, tas_command

POD = "demo-app-6558d5ffbf-5lw2t"
ACCOUNT = "tas-descheduler"


@dataclass
class Cluster:
    api: KubeEmulator
    tmp: Path
    metrics: Path
    policy: Path
    extender: str

    def kubeconfig(self, account: str | None) -> Path:
        """A ServiceAccount's kubeconfig, or the test's own (a user's admin) without one."""
        token = self.api.token_for(NAMESPACE, account) if account else None
        return self.api.write_kubeconfig(self.tmp / f"{account or 'user'}.kubeconfig", token=token)

    def explain(
        self, *args: str, account: str | None = ACCOUNT, extender: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        flags = [
            *("--kubeconfig", str(self.kubeconfig(account))),
            *("--metrics", f"textfile:{self.metrics}"),
            *("--descheduler-config", str(self.policy)),
            *("--extender", extender or self.extender),
        ]
        return subprocess.run(
            tas_command("explain", *args, *flags),
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture
def cluster(kube_emulator: KubeEmulator, tmp_path: Path) -> Iterator[Cluster]:
    api = kube_emulator
    api.apply(rendered(CLUSTER))
    api.apply(manifests(DEMO))  # the demo Namespace and TASPolicy
    for name in HEALTH:
        api.create("nodes", node(name))
    api.create("pods", demo_pod(POD, "node-c"))
    metrics = tmp_path / "metrics"
    for name, value in HEALTH.items():
        write_node_series(metrics, name, {"node_health_metric": value})
    policy = tmp_path / "descheduler-policy.yaml"  # the ConfigMap the Deployment mounts
    policy.write_text(shipped("ConfigMap", "tas-descheduler-policy")["data"]["policy.yaml"])

    # The extender, asked to place the pod as kube-scheduler asks it (filter, prioritize).
    store = PolicyStore()
    store.replace(load_policy_path(DEMO / "health-policy.yaml").policies)
    view = open_metric_view(f"textfile:{metrics}")
    want_policy_metrics(store, view)
    view.refresh_once()
    app = create_app(
        store=store,
        metrics=view,
        settings=ExtenderSettings(),
        registry=CollectorRegistry(),
        decisions=DecisionLog(),
    )
    server = ExtenderServer(app, port=0, log_level="warning")
    server.start()
    stored = api.get("pods", POD, namespace=DEMO_NAMESPACE)
    assert stored is not None
    pod = {
        "metadata": {key: stored["metadata"][key] for key in ("name", "namespace", "uid", "labels")}
    }
    with httpx.Client(base_url=server.url, timeout=10) as client:
        kept = client.post("/scheduler/filter", json={"Pod": pod, "NodeNames": list(HEALTH)})
        assert kept.json()["NodeNames"] == ["node-a"]
        client.post("/scheduler/prioritize", json={"Pod": pod, "NodeNames": ["node-a"]})
    try:
        yield Cluster(api, tmp_path, metrics, policy, server.url)
    finally:
        server.stop(5)


def test_with_the_descheduler_role_a_pod_is_explained_and_nothing_is_written(
    cluster: Cluster,
) -> None:
    api = cluster.api
    api.clear_requests()
    result = cluster.explain("pod", f"{DEMO_NAMESPACE}/{POD}")
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "runs on: node-c (phase Running)" in text
    assert "deschedule: violates on node-c: demo-policy: health_metric Equals 2 (value 2)" in text
    assert "node-a: kept; score 10; health_metric 0" in text
    assert "node-b: filtered out; demo-policy: health_metric Equals 1 (value 1)" in text
    assert "node-c: filtered out; demo-policy: health_metric Equals 2 (value 2)  <- runs here" in (
        text
    )
    assert "Would the descheduler move it now? yes: TASViolations would evict it from node-c" in (
        text
    )
    assert "node node-c violates policy demo-policy: health_metric Equals 2 (value 2)" in text
    # The one read the role lacks is said, not hidden; it is the only request refused.
    assert "Not explained (could not be read):" in text
    assert (
        'recent evictions (Events): events is forbidden: User "system:serviceaccount:'
        'telemetry-aware-scheduling:tas-descheduler" cannot list resource "events"'
    ) in text
    assert "(the descheduler's role does not list Events: docs/explain.md)" in text
    assert [(d.method, d.path) for d in api.denials] == [("GET", "/api/v1/events")], [
        str(d) for d in api.denials
    ]
    assert api.writes() == []
    assert api.get("pods", POD, namespace=DEMO_NAMESPACE) is not None
    assert "demo-policy" not in (api.get("nodes", "node-c") or {})["metadata"].get("labels", {})


def test_with_a_users_credentials_a_node_lists_the_descheduler_evictions_from_it(
    cluster: Cluster,
) -> None:
    # What the descheduler's evictor records on each pod it evicts (descheduler.evictor).
    cluster.api.create(
        "events",
        {
            "metadata": {"name": f"{POD}.evicted", "namespace": DEMO_NAMESPACE},
            "involvedObject": {"kind": "Pod", "name": POD, "namespace": DEMO_NAMESPACE},
            "reason": "TASViolations",
            "message": "pod eviction from node-c node by telemetry-aware-scheduling descheduler: "
            "node node-c violates policy demo-policy: health_metric Equals 2 (value 2)",
            "type": "Normal",
            "lastTimestamp": "2026-01-01T00:00:00Z",
        },
        namespace=DEMO_NAMESPACE,
    )
    result = cluster.explain("node", "node-c", account=None)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert "health_metric: 2 (" in text
    assert f"{DEMO_NAMESPACE}/demo-policy deschedule: violates: demo-policy: health_metric " in text
    assert f"2026-01-01 00:00:00 UTC {DEMO_NAMESPACE}/{POD} (TASViolations): pod eviction " in text
    assert "Not explained" not in text


def test_an_unreachable_extender_is_named_and_the_rest_still_explained(cluster: Cluster) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    result = cluster.explain("pod", f"{DEMO_NAMESPACE}/{POD}", account=None, extender=nobody)
    assert result.returncode == 0, result.stderr
    assert f"the extender's verdicts: {nobody}/debug/decisions" in result.stdout
    assert "no decision for this pod in the extender's log" in result.stdout
    assert "Would the descheduler move it now? yes" in result.stdout


def test_an_unknown_node_names_the_nodes_it_may_mean(cluster: Cluster) -> None:
    result = cluster.explain("node", "node-x", account=None)
    assert result.returncode == 1
    assert "tas explain: no node named node-x; did you mean node-" in result.stderr
