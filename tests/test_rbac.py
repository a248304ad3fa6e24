"""Least privilege, checked against what the code calls: the shipped roles, the real components.

The API emulator loads the shipped manifests (deploy/cluster, rendered as `kubectl apply -k`
sends it: Namespaces, ServiceAccounts, ClusterRoles, Roles and their bindings, and the
ValidatingAdmissionPolicy that limits the controller to its own labels) and enforces RBAC and
that policy on every request as the API server does. Each component runs as a process (`python -m
tas_cli`, the image's entry point) with the command line and environment of its shipped
Deployment (only the metric source, the listen address and what a test cannot mount are
changed), as its own ServiceAccount, through the health-metric demo: node-a at 0, node-b at 1,
node-c at 2, the demo pod on node-c.

Covered, per component:
- the policy controller (with leader election, as deployed) labels node-c `demo-policy=
  violating` and the demo pod `violate=demo-policy`, writes the policy status, emits an Event
  and holds its Lease; SIGTERM stops it cleanly;
- the descheduler (Automatic mode) evicts the demo pod from node-c, records the eviction as an
  Event on the pod and resolves its priority threshold's class through the API, patching no
  node (the default install grants no `nodes: patch`); then, run once with a policy that
  reads what only some configurations read (namespace labels, claims' storage classes, the
  metrics server), it reads them;
- the extender (policies from the cluster, no --policies) filters the demo request with the
  cluster's TASPolicy: node-b and node-c fail, node-a passes; for its recent placements (herd
  control, on by default) it lists and watches pods and nodes (each node's allocatable), and,
  its metrics not coming from Prometheus, lists metrics-server's PodMetrics for the pods'
  usage, never a kubelet through the node proxy;
- the descheduler with MakeRoomForPending (deploy/descheduler/make-room.yaml, one pod a node a
  cycle), deploy/descheduler-taints applied (its `nodes: patch`, fenced by admission to its own
  taints), clears a soft taint an earlier run left on node-b and clears a node for a pending
  pod over two cycles, reserving it with a taint meanwhile and removing the taint once the room
  is made: that grant is used, and every patch admitted;
- no role in any shipped directory grants `nodes/proxy` (nor a wildcard that would);
- each of them once more with `--metrics custom-metrics` under the overlay
  deploy/custom-metrics (TAS's way: its ClusterRole, its command lines), reading
  `health_metric` from the emulator's custom metrics API as prometheus-adapter serves it:
  every read is allowed (under the old `nodes/*` grant every one was refused, so nothing was
  ever labelled, filtered or evicted);
and for each: no request was refused (a refusal fails the test with the API server's message),
and every (verb, resource) its roles grant was used (a wildcard grant: by some call it allows),
so the roles hold nothing the code does not need. What a role must keep although the test
cannot exercise it is listed in `NOT_EXERCISED`, with the reason.

And from the source, without running anything: `GRANTS` lists every verb on every resource the
roles of each install (deploy/cluster, the three profiles, deploy/custom-metrics,
deploy/descheduler-taints) grant each component, with the module and the call that uses it
(`NEEDS` says what each call needs and the adapter calls it goes through, down to the Kubernetes
client's method). A grant missing from the table, a row no role grants, a row whose module no
longer makes its call, and a call in a component's code (its command module and its package)
that its install does not grant each fail; a call only some configurations make (the custom
metrics API, the descheduler's taints) must be granted by the directory that configuration
applies, and not made by the default one. A new request in the cluster adapter or a new cache
kind fails until `NEEDS` names what it needs. The roles shipped to the programs around the
components (the standalone Prometheus, kube-prometheus's reading our ServiceMonitors,
prometheus-adapter, the second kube-scheduler) are listed the same way in `OTHER_GRANTS`, with
what of that program uses each; the standalone Prometheus's are checked against the discovery
its prometheus.yml configures, and kube-prometheus's against the namespaces of our
ServiceMonitors.

And the defect this guards against: the controller watching PodDisruptionBudgets (every cache,
as before) with its shipped role is refused with the Forbidden Status and never syncs.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import kubernetes.client as k8s
import pytest
import yaml

from tas.adapters.cluster.informer import Backoff
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.adapters.metrics.textfile import write_node_series
from tas.cluster.interface import ResourceKind
from tests.deploy.pipeline import rendered
from tests.health_demo import (
    CLUSTER,
    DEMO,
    DEMO_NAMESPACE,
    HEALTH,
    NAMESPACE,
    Document,
    demo_pod,
    manifests,
    node,
    pod_metrics,
    shipped,
)
from tests.k8s_emulator import Access, KubeEmulator
from tests.k8s_emulator.rbac import User, bound_roles, granted
from tests.processes import Process, free_port, tas_command

ROOT = Path(__file__).resolve().parents[1]
#: The descheduler's `nodes: patch` and its admission fence, applied beside deploy/cluster.
TAINTS = ROOT / "deploy" / "descheduler-taints"
#: deploy/cluster with `--metrics custom-metrics` and the RBAC that mode needs.
CUSTOM_METRICS = ROOT / "deploy" / "custom-metrics"
METRICS_API = "/apis/custom.metrics.k8s.io/"
#: The descheduler's soft taint (SoftTainter's default prefix), left by an earlier run.
SOFT_TAINT = {"key": "telemetry.aware.scheduling/overutilized", "value": "true"}
TIMEOUT = 20.0

#: Grants a role keeps although these tests cannot exercise them, per ServiceAccount, each with
#: the reason. Empty: every grant is used on the demo paths below.
NOT_EXERCISED: dict[str, set[Access]] = {
    "tas-policy-controller": set(),
    "tas-descheduler": set(),
    "tas-extender": set(),
}


# --- the shipped manifests ------------------------------------------------------------------


def container(deployment: str, directory: Path = CLUSTER) -> Document:
    spec = shipped("Deployment", deployment, directory)["spec"]["template"]["spec"]
    (only,) = spec["containers"]
    return copy.deepcopy(dict(only))


def command_line(
    deployment: str,
    *,
    replace: Mapping[str, str | None],
    add: Sequence[str] = (),
    directory: Path = CLUSTER,
) -> list[str]:
    """The Deployment's `tas` arguments (as `directory` ships it) with flags replaced (None:
    dropped) and added."""
    args = list(container(deployment, directory)["args"])
    for flag, value in replace.items():
        index = args.index(flag)
        takes_value = index + 1 < len(args) and not args[index + 1].startswith("--")
        del args[index : index + (2 if takes_value else 1)]
        if value is not None:
            args[index:index] = [flag, value]
    return [*args, *add]


def environment(deployment: str, pod_name: str) -> dict[str, str]:
    """The Deployment's container environment, with the downward API filled in."""
    fields = {"metadata.name": pod_name, "metadata.namespace": NAMESPACE}
    env = {}
    for variable in container(deployment).get("env", []):
        if "value" in variable:
            env[variable["name"]] = str(variable["value"])
        elif "configMapKeyRef" in variable["valueFrom"]:
            continue  # PROMETHEUS_URL, the install profile's: these runs replace --metrics
        else:
            env[variable["name"]] = fields[variable["valueFrom"]["fieldRef"]["fieldPath"]]
    return env


# --- the demo cluster -----------------------------------------------------------------------


@dataclass
class Demo:
    api: KubeEmulator
    tmp: Path
    metrics: Path
    directory: Path  # what was applied: deploy/cluster or the custom-metrics overlay

    def metric_source(self) -> dict[str, str]:
        """The `--metrics` replacement: the textfile source, except under the custom-metrics
        overlay, where the shipped `--metrics custom-metrics` stays."""
        return {} if self.directory == CUSTOM_METRICS else {"--metrics": f"textfile:{self.metrics}"}

    def kubeconfig(self, account: str) -> Path:
        token = self.api.token_for(NAMESPACE, account)
        return self.api.write_kubeconfig(self.tmp / f"{account}.kubeconfig", token=token)

    def labels(self, plural: str, name: str, namespace: str | None = None) -> dict[str, str]:
        found = self.api.get(plural, name, namespace=namespace)
        return dict(((found or {}).get("metadata") or {}).get("labels") or {})

    def unused(self, account: str) -> set[Access]:
        used = self.api.accesses(NAMESPACE, account)
        granted = self.api.grants(NAMESPACE, account) - NOT_EXERCISED[account]
        return {grant for grant in granted if not any(grant.covers(call) for call in used)}

    def problems(self, account: str) -> str:
        denied = "\n".join(f"  {d}" for d in self.api.denials) or "  none"
        unused = ", ".join(map(str, sorted(self.unused(account)))) or "none"
        return f"refused requests:\n{denied}\ngranted to {account} but never used: {unused}"

    def check_least_privilege(self, account: str) -> None:
        assert not self.api.denials, self.problems(account)
        assert not self.unused(account), self.problems(account)
        if self.directory == CUSTOM_METRICS:  # every metric was read, and every read allowed
            user = f"system:serviceaccount:{NAMESPACE}:{account}"
            reads = [
                (r.path, r.status)
                for r in self.api.requests
                if r.user == user and r.path.startswith(METRICS_API)
            ]
            assert (f"{METRICS_API}v1beta1/nodes/*/health_metric", 200) in reads, reads
            assert {status for _, status in reads} == {200}, reads


@pytest.fixture
def demo(request: pytest.FixtureRequest, kube_emulator: KubeEmulator, tmp_path: Path) -> Demo:
    """The demo under deploy/cluster, or under the directory a test passes (`indirect`)."""
    directory: Path = getattr(request, "param", CLUSTER)
    api = kube_emulator
    api.apply(rendered(directory))
    api.apply(manifests(DEMO))  # the demo Namespace and TASPolicy (the app is a Deployment)
    api.create("nodes", node("node-a"))
    api.create("nodes", node("node-b"))
    api.create("nodes", node("node-c"))
    api.create("pods", demo_pod("demo-app-6558d5ffbf-5lw2t", "node-c"))
    api.create(
        "podmetrics", pod_metrics("demo-app-6558d5ffbf-5lw2t", "42m"), namespace=DEMO_NAMESPACE
    )
    metrics = tmp_path / "metrics"
    for name, value in HEALTH.items():
        write_node_series(metrics, name, {"node_health_metric": value})
    # What prometheus-adapter serves for `node_health_metric` (TAS's rule drops `node_`), and
    # for the recording rules' node_cpu_pressure and node_cpu_utilization (deploy/monitoring),
    # which the extender's herd control reads whatever the policies name.
    api.set_custom_metric("health_metric", HEALTH)
    api.set_custom_metric("cpu_pressure", dict.fromkeys(HEALTH, 0.0))
    api.set_custom_metric("cpu_utilization", dict.fromkeys(HEALTH, 10.0))
    return Demo(api, tmp_path, metrics, directory)


#: Each component under both ways of reading metrics: deploy/cluster with the textfile source,
#: and the custom-metrics overlay as shipped.
BOTH_SOURCES = pytest.mark.parametrize(
    "demo", [CLUSTER, CUSTOM_METRICS], ids=["textfile", "custom-metrics"], indirect=True
)


# --- running a component --------------------------------------------------------------------


@contextlib.contextmanager
def component(args: list[str], log: Path, env: Mapping[str, str]) -> Iterator[Process]:
    """A component as its Deployment runs it (started; stopped at the end)."""
    with Process(tas_command(*args), "", None, log, env=env) as process:
        process.start()
        yield process


# --- the components -------------------------------------------------------------------------


@BOTH_SOURCES
def test_the_policy_controller_labels_the_violating_node_with_only_its_shipped_role(
    demo: Demo,
) -> None:
    account, pod_name = "tas-policy-controller", "tas-policy-controller-7d9c-x1"
    port = free_port()
    args = command_line(
        account,
        replace={
            **demo.metric_source(),
            "--listen": f"127.0.0.1:{port}",
            "--sync-period": "200ms",
        },
        add=["--kubeconfig", str(demo.kubeconfig(account))],
        directory=demo.directory,
    )
    assert args[0] == "controller"
    assert "--leader-elect" in args
    api = demo.api

    def done() -> bool:
        status = (api.get("taspolicies", "demo-policy", namespace=DEMO_NAMESPACE) or {}).get(
            "status"
        ) or {}
        lease = api.get("leases", "tas-policy-controller", namespace=NAMESPACE) or {}
        events = [e for e in api.objects("events") if e.get("reason") == "TASPolicyViolated"]
        pod_labels = demo.labels("pods", "demo-app-6558d5ffbf-5lw2t", DEMO_NAMESPACE)
        return (
            demo.labels("nodes", "node-c").get("demo-policy") == "violating"
            and "demo-policy" not in demo.labels("nodes", "node-a")
            and pod_labels.get("violate") == "demo-policy"
            and status.get("compliance") == "Violating"
            and bool(events)
            and (lease.get("spec") or {}).get("holderIdentity") == pod_name
            # The Lease is renewed (read, then replaced) every 2 s: wait for one renewal.
            and not demo.unused(account)
        )

    with component(args, demo.tmp / "controller.log", environment(account, pod_name)) as process:
        process.eventually(done, "labels and lease", TIMEOUT, state=lambda: demo.problems(account))
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            assert client.get("/readyz").status_code == 200
        assert process.terminate() == 0, process.output()
    assert "Traceback" not in process.output(), process.output()
    demo.check_least_privilege(account)


#: A policy that reads everything the descheduler's role grants for some configurations only.
DESCHEDULER_READS = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: reads
    pluginConfig:
      - name: DefaultEvictor
        args:
          namespaceLabelSelector:
            matchLabels: {kubernetes.io/metadata.name: health-metric-demo}
          podProtections:
            extraEnabled: [PodsWithPVC]
            config: {PodsWithPVC: {protectedStorageClasses: [{name: standard}]}}
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 20, memory: 20, pods: 20}
          targetThresholds: {cpu: 50, memory: 50, pods: 50}
          metricsUtilization: {source: KubernetesMetrics}
    plugins:
      balance: {enabled: [LowNodeUtilization]}
"""


@BOTH_SOURCES
def test_the_descheduler_evicts_the_demo_pod_with_only_its_shipped_role(demo: Demo) -> None:
    account = "tas-descheduler"
    policy = demo.tmp / "descheduler-policy.yaml"  # the ConfigMap the Deployment mounts
    policy.write_text(
        shipped("ConfigMap", "tas-descheduler-policy", demo.directory)["data"]["policy.yaml"]
    )
    args = command_line(
        account,
        replace={
            "--policy-config-file": str(policy),
            **demo.metric_source(),
            "--mode": "Automatic",
            "--listen-metrics": "127.0.0.1:0",  # loopback, any free port
        },
        add=["--kubeconfig", str(demo.kubeconfig(account))],
        directory=demo.directory,
    )
    assert args[0] == "descheduler"
    api = demo.api

    def evicted_with_an_event() -> bool:
        node_a = api.get("nodes", "node-a") or {}
        events = [
            e
            for e in api.objects("events", namespace=DEMO_NAMESPACE)
            if e.get("reason") == "TASViolations"
        ]
        return (
            api.get("pods", "demo-app-6558d5ffbf-5lw2t", namespace=DEMO_NAMESPACE) is None
            and not (node_a.get("spec") or {}).get("taints")
            and bool(events)
        )

    with component(args, demo.tmp / "descheduler.log", environment(account, "d-1")) as process:
        process.eventually(
            evicted_with_an_event, "the eviction", TIMEOUT, state=lambda: demo.problems(account)
        )
        assert process.terminate() == 0, process.output()
    evictions = [
        r.path for r in api.requests if r.method == "POST" and r.path.endswith("/eviction")
    ]
    assert evictions == [
        f"/api/v1/namespaces/{DEMO_NAMESPACE}/pods/demo-app-6558d5ffbf-5lw2t/eviction"
    ]
    assert api.get("pods", "demo-app-6558d5ffbf-5lw2t", namespace=DEMO_NAMESPACE) is None
    (event,) = list(api.objects("events", namespace=DEMO_NAMESPACE))
    assert event["involvedObject"]["name"] == "demo-app-6558d5ffbf-5lw2t"
    assert event["message"].startswith("pod eviction from node-c node by")

    # Once more, run once, with a policy that reads what the role grants for it alone: node-a
    # is busy by the metrics server's account, and its pod could move.
    for name, cpu in {"node-a": "3500m", "node-b": "100m", "node-c": "100m"}.items():
        api.create(
            "nodemetrics", {"metadata": {"name": name}, "usage": {"cpu": cpu, "memory": "1Mi"}}
        )
    busy = demo_pod("demo-app-6558d5ffbf-busy1", "node-a")
    api.create("pods", busy, namespace=DEMO_NAMESPACE)
    api.create(
        "podmetrics",
        {
            "metadata": {"name": busy["metadata"]["name"], "namespace": DEMO_NAMESPACE},
            "containers": [{"name": "app", "usage": {"cpu": "3", "memory": "1Mi"}}],
        },
        namespace=DEMO_NAMESPACE,
    )
    reads = demo.tmp / "descheduler-reads.yaml"
    reads.write_text(DESCHEDULER_READS)
    once = command_line(
        account,
        replace={
            "--policy-config-file": str(reads),
            "--metrics": None,
            "--mode": "Predictive",
            "--descheduling-interval": "0",
            "--listen-metrics": None,
        },
        add=["--kubeconfig", str(demo.kubeconfig(account))],
    )
    with component(once, demo.tmp / "descheduler-once.log", environment(account, "d-2")) as run:
        assert run.popen is not None
        assert run.popen.wait(timeout=TIMEOUT) == 0, run.output()
    assert "Traceback" not in run.output(), run.output()
    assert 'Evicted pod in dry run mode pod="health-metric-demo/demo-app-6558d5ffbf-busy1"' in (
        run.output()
    )
    demo.check_least_privilege(account)


MAKE_ROOM = ROOT / "deploy" / "descheduler" / "make-room.yaml"


def batch_pod(
    name: str, cpu: str, node_name: str | None, *, created: str, priority: int = 0
) -> Document:
    """A pod of its own ReplicaSet in the demo namespace requesting `cpu` at `priority`: bound
    to `node_name`, or pending, found unschedulable by kube-scheduler, when that is None."""
    pod: Document = {
        "metadata": {
            "name": name,
            "namespace": DEMO_NAMESPACE,
            "creationTimestamp": created,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{name}-rs",
                    "uid": f"{name}-rs-uid",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "containers": [
                {"name": "app", "image": "app", "resources": {"requests": {"cpu": cpu}}}
            ],
            "priority": priority,
        },
        "status": {"phase": "Running"},
    }
    if node_name is not None:
        pod["spec"]["nodeName"] = node_name
    else:
        pod["status"] = {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
    return pod


def test_the_descheduler_makes_room_for_a_pending_pod_with_only_its_shipped_role(
    demo: Demo,
) -> None:
    """MakeRoomForPending as deploy/descheduler/make-room.yaml ships it (one pod a node a
    cycle, so the room takes two cycles): a pod of 3.5 cores pending for 10 minutes, every
    node of 4 cores holding pods of 1 core, node-a's two the only ones of no higher priority.
    They leave, one a cycle, and
    node-a is reserved for the pending pod meanwhile (its taint written, then removed). With
    deploy/descheduler-taints applied: its grant is used, its fence admits every patch, and a
    soft taint an earlier run left on node-b goes (SoftTainter is not enabled)."""
    account = "tas-descheduler"
    api = demo.api
    api.apply(rendered(TAINTS))
    api.merge(
        "nodes", "node-b", {"spec": {"taints": [{**SOFT_TAINT, "effect": "PreferNoSchedule"}]}}
    )
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 600))
    api.create("pods", batch_pod("small-a1", "1", "node-a", created=created))
    api.create("pods", batch_pod("small-a2", "1", "node-a", created=created))
    # Of a higher priority than the pending pod: they stay, so only node-a can be cleared.
    api.create("pods", batch_pod("small-b", "1", "node-b", created=created, priority=1000))
    api.create("pods", batch_pod("small-c", "1", "node-c", created=created, priority=1000))
    api.create("pods", batch_pod("large", "3500m", None, created=created))
    policy = yaml.safe_load(MAKE_ROOM.read_text(encoding="utf-8"))
    policy["maxNoOfPodsToEvictPerNode"] = 1
    path = demo.tmp / "make-room.yaml"
    path.write_text(yaml.safe_dump(policy))
    args = command_line(
        account,
        replace={
            "--policy-config-file": str(path),
            **demo.metric_source(),
            "--mode": "Automatic",
            "--descheduling-interval": "1s",
            "--listen-metrics": None,
        },
        add=["--kubeconfig", str(demo.kubeconfig(account))],
    )
    reserved = "telemetry.aware.scheduling/reserved"

    def room_made() -> bool:
        gone = [api.get("pods", n, namespace=DEMO_NAMESPACE) for n in ("small-a1", "small-a2")]
        taints = ((api.get("nodes", "node-a") or {}).get("spec") or {}).get("taints") or []
        return gone == [None, None] and not any(t["key"] == reserved for t in taints)

    with component(args, demo.tmp / "make-room.log", environment(account, "d-3")) as process:
        process.eventually(room_made, "the room", TIMEOUT, state=lambda: demo.problems(account))
        assert process.terminate() == 0, process.output()
    output = process.output()
    assert "Traceback" not in output, output
    evicted = [r.path for r in api.requests if r.method == "POST" and r.path.endswith("/eviction")]
    assert sorted(evicted) == [
        f"/api/v1/namespaces/{DEMO_NAMESPACE}/pods/{name}/eviction"
        for name in ("small-a1", "small-a2")
    ]
    patches = [r for r in api.requests if r.method == "PATCH" and r.path == "/api/v1/nodes/node-a"]
    assert patches, "node-a was never reserved: the room was made in one cycle"
    assert "(then 1 more, the node reserved)" in output, output
    assert api.get("pods", "large", namespace=DEMO_NAMESPACE) is not None
    assert not ((api.get("nodes", "node-b") or {}).get("spec") or {}).get("taints")
    assert not api.denials, demo.problems(account)
    user = f"system:serviceaccount:{NAMESPACE}:{account}"
    patched = {r.path for r in api.requests if r.method == "PATCH" and r.user == user}
    assert patched == {"/api/v1/nodes/node-a", "/api/v1/nodes/node-b"}


@BOTH_SOURCES
def test_the_extender_filters_with_the_clusters_policy_with_only_its_shipped_role(
    demo: Demo,
) -> None:
    account = "tas-extender"
    port = free_port()
    # No certificates here: plain HTTP instead of the mounted TLS Secret.
    args = command_line(
        account,
        replace={
            **demo.metric_source(),
            "--listen": f"127.0.0.1:{port}",
            "--cert": None,
            "--key": None,
            "--cacert": None,
            "--client-cert-names": None,
        },
        add=["--insecure-http", "--kubeconfig", str(demo.kubeconfig(account))],
        directory=demo.directory,
    )
    assert args[0] == "extender"
    assert "--policies" not in args
    request = json.loads((DEMO / "filter-request.json").read_text(encoding="utf-8"))

    with (
        component(args, demo.tmp / "extender.log", environment(account, "e-1")) as process,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client,
    ):

        def ready() -> bool:
            with contextlib.suppress(httpx.TransportError):
                return client.get("/readyz").status_code == 200
            return False

        process.eventually(ready, "/readyz", TIMEOUT, state=lambda: demo.problems(account))
        answer = client.post("/scheduler/filter", json=request)
        assert answer.status_code == 200, answer.text
        assert answer.json()["NodeNames"] == ["node-a"]
        assert set(answer.json()["FailedAndUnresolvableNodes"]) == {"node-b", "node-c"}
        process.eventually(
            lambda: not demo.unused(account),
            "every grant used",
            TIMEOUT,
            state=lambda: demo.problems(account),
        )
        assert process.terminate() == 0, process.output()
    demo.check_least_privilege(account)
    user = f"system:serviceaccount:{NAMESPACE}:{account}"
    usage_reads = {
        (r.path, r.status)
        for r in demo.api.requests
        if r.user == user and "metrics.k8s.io" in r.path
    }
    assert ("/apis/metrics.k8s.io/v1beta1/pods", 200) in usage_reads
    assert not [r.path for r in demo.api.requests if "/proxy" in r.path]


def test_no_shipped_role_grants_the_node_proxy() -> None:
    """`nodes/proxy` reaches the whole kubelet API of every node (its exec is a WebSocket GET):
    no component needs it, and no overlay ships it."""
    overlays = [CLUSTER, *(p.parent for p in (ROOT / "deploy").glob("*/kustomization.yaml"))]
    for directory in overlays:
        for document in rendered(directory):
            if document.get("kind") not in ("ClusterRole", "Role"):
                continue
            for rule in document.get("rules") or ():
                core = set(rule.get("apiGroups") or ()) & {"", "*"}
                resources = set(rule.get("resources") or ())
                name = f"{directory.name}: {document['kind']} {document['metadata']['name']}"
                assert not (core and resources & {"nodes/proxy", "*", "nodes/*"}), name


# --- the defect -----------------------------------------------------------------------------


def test_a_controller_watching_pdbs_is_refused_by_its_shipped_role_and_never_syncs(
    demo: Demo,
) -> None:
    token = demo.api.token_for(NAMESPACE, "tas-policy-controller")
    # Every cache, as the controller built its cluster before it named what it watches.
    cluster = KubernetesCluster(
        demo.api.api_client(token=token),
        watch_timeout=2.0,
        backoff=lambda: Backoff(initial=0.05, maximum=0.2, jitter=0),
    )
    cluster.start()
    try:
        assert not cluster.wait_synced(2.0)
        unsynced = [i.name for i in cluster.informers if not i.synced.is_set()]
    finally:
        cluster.stop()
    assert unsynced == ["poddisruptionbudgets"]
    message = (
        "poddisruptionbudgets.policy is forbidden: User "
        f'"system:serviceaccount:{NAMESPACE}:tas-policy-controller" cannot list resource '
        '"poddisruptionbudgets" in API group "policy" at the cluster scope'
    )
    assert {d.message for d in demo.api.denials} == {message}

    budgets = k8s.PolicyV1Api(demo.api.api_client(token=token))
    with pytest.raises(k8s.ApiException) as refused:
        budgets.list_pod_disruption_budget_for_all_namespaces()
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "{}") == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": {"group": "policy", "kind": "poddisruptionbudgets"},
        "code": 403,
    }


# --- every grant, and the code path that uses it (read from the source) ---------------------

#: The accounts the components run as, and the code each runs: its command module and its
#: package. What they call of the API is found there (`referenced`), by the names below.
COMPONENT_CODE: dict[str, tuple[str, ...]] = {
    "tas-policy-controller": ("tas_cli/controller.py", "policy_controller"),
    "tas-descheduler": ("tas_cli/descheduler.py", "descheduler"),
    "tas-extender": ("tas_cli/extender.py", "extender"),
}
KUBERNETES = "tas/adapters/cluster/kubernetes.py"
INFORMER = "tas/adapters/cluster/informer.py"
LEADER = "tas/adapters/cluster/leader.py"
CUSTOM_METRICS_SOURCE = "tas/adapters/metrics/custom_metrics.py"
#: A node metric as prometheus-adapter serves it (the name is the policy's: any name).
A_CUSTOM_METRIC = Access("get", "custom.metrics.k8s.io", "nodes/health_metric")


def list_and_watch(group: str, resource: str) -> frozenset[Access]:
    return frozenset({Access("list", group, resource), Access("watch", group, resource)})


@dataclass(frozen=True)
class Need:
    """What calling a name needs of the API, and the calls that make the request: (module,
    name) pairs down to the Kubernetes client's method."""

    accesses: frozenset[Access]
    through: tuple[tuple[str, str], ...]


#: Every name a component calls that reaches the API server, and what it needs there. A cache
#: (`ResourceKind.<X>` in the `watched` a command passes to `startup.open_cluster`) lists, then
#: watches; the direct calls are `KubernetesCluster`'s; leader election is `process.
#: elect_leader`; `startup.open_view` reads the custom metrics API only under `--metrics
#: custom-metrics` (deploy/custom-metrics).
NEEDS: dict[str, Need] = {
    "ResourceKind.NODE": Need(
        list_and_watch("", "nodes"), ((KUBERNETES, "list_node"), (INFORMER, "watch"))
    ),
    "ResourceKind.POD": Need(
        list_and_watch("", "pods"),
        ((KUBERNETES, "list_pod_for_all_namespaces"), (INFORMER, "watch")),
    ),
    "ResourceKind.POLICY": Need(
        list_and_watch("telemetry.intel.com", "taspolicies"),
        ((KUBERNETES, "list_cluster_custom_object"), (INFORMER, "watch")),
    ),
    "ResourceKind.PDB": Need(
        list_and_watch("policy", "poddisruptionbudgets"),
        ((KUBERNETES, "list_pod_disruption_budget_for_all_namespaces"), (INFORMER, "watch")),
    ),
    "patch_node_labels": Need(
        frozenset({Access("patch", "", "nodes")}), ((KUBERNETES, "patch_node"),)
    ),
    "set_node_taints": Need(
        frozenset({Access("patch", "", "nodes")}), ((KUBERNETES, "patch_node"),)
    ),
    "patch_pod_labels": Need(
        frozenset({Access("patch", "", "pods")}), ((KUBERNETES, "patch_namespaced_pod"),)
    ),
    "update_policy_status": Need(
        frozenset({Access("patch", "telemetry.intel.com", "taspolicies/status")}),
        ((KUBERNETES, "patch_namespaced_custom_object_status"),),
    ),
    "emit_event": Need(
        frozenset({Access("create", "", "events")}), ((KUBERNETES, "create_namespaced_event"),)
    ),
    "evict_pod": Need(
        frozenset({Access("create", "", "pods/eviction")}),
        ((KUBERNETES, "create_namespaced_pod_eviction"),),
    ),
    "get_priority_class_value": Need(
        frozenset({Access("get", "scheduling.k8s.io", "priorityclasses")}),
        ((KUBERNETES, "read_priority_class"),),
    ),
    "list_namespaces": Need(
        frozenset({Access("list", "", "namespaces")}), ((KUBERNETES, "list_namespace"),)
    ),
    "list_persistent_volume_claims": Need(
        frozenset({Access("list", "", "persistentvolumeclaims")}),
        ((KUBERNETES, "list_persistent_volume_claim_for_all_namespaces"),),
    ),
    "list_node_metrics": Need(
        frozenset({Access("list", "metrics.k8s.io", "nodes")}),
        ((KUBERNETES, "_metrics"), (KUBERNETES, "list_cluster_custom_object")),
    ),
    "list_pod_metrics": Need(
        frozenset({Access("list", "metrics.k8s.io", "pods")}),
        ((KUBERNETES, "_metrics"), (KUBERNETES, "list_cluster_custom_object")),
    ),
    "open_resource_metrics_pod_usage": Need(
        frozenset({Access("list", "metrics.k8s.io", "pods")}),
        (
            ("tas/runtime/startup.py", "list_pod_metrics"),
            (KUBERNETES, "list_cluster_custom_object"),
        ),
    ),
    "list_events": Need(
        frozenset({Access("list", "", "events")}),
        ((KUBERNETES, "list_event_for_all_namespaces"),),
    ),
    "elect_leader": Need(
        frozenset(
            Access(verb, "coordination.k8s.io", "leases") for verb in ("get", "create", "update")
        ),
        (
            ("tas/runtime/process.py", "LeaderElector"),
            (LEADER, "read_namespaced_lease"),
            (LEADER, "create_namespaced_lease"),
            (LEADER, "replace_namespaced_lease"),
        ),
    ),
    "open_view": Need(
        frozenset({A_CUSTOM_METRIC}),
        (
            ("tas/adapters/metrics/spec.py", "CustomMetricsSource"),
            (CUSTOM_METRICS_SOURCE, "call_api"),
        ),
    ),
}


@dataclass(frozen=True)
class Grant:
    """One (verb, resource) a role grants an account, where it is shipped, and the code that
    uses it: `call`, a name in NEEDS, made in `module`."""

    account: str
    access: Access
    shipped_in: str  # the directory under deploy/ whose roles grant it
    module: str
    call: str


def grants(
    account: str, shipped_in: str, rows: Sequence[tuple[str, str, str, str, str]]
) -> list[Grant]:
    return [
        Grant(account, Access(verb, group, resource), shipped_in, module, call)
        for verb, group, resource, module, call in rows
    ]


#: The components' processes, which their commands (`tas_cli/`) run.
CONTROLLER_RUNTIME = "policy_controller/runtime.py"
EXTENDER_RUNTIME, DESCHEDULER_RUNTIME = ("extender/runtime.py", "descheduler/runtime.py")
RECONCILER = "policy_controller/reconciler.py"
EVICTOR = "descheduler/evictor.py"
DEFAULT_EVICTOR = "descheduler/plugins/default_evictor.py"
USAGE = "descheduler/usage.py"

#: Every verb on every resource the shipped roles grant the components, and the code path
#: that uses it. The tests below fail on a grant missing here (unused, or unexplained), on a
#: row no role grants, on a row whose module no longer makes its call, and on a call in a
#: component's code that no role of its install grants.
GRANTS: list[Grant] = [
    *grants(
        "tas-policy-controller",
        "cluster",
        [
            ("list", "", "nodes", CONTROLLER_RUNTIME, "ResourceKind.NODE"),
            ("watch", "", "nodes", CONTROLLER_RUNTIME, "ResourceKind.NODE"),
            ("patch", "", "nodes", RECONCILER, "patch_node_labels"),
            ("list", "", "pods", CONTROLLER_RUNTIME, "ResourceKind.POD"),
            ("watch", "", "pods", CONTROLLER_RUNTIME, "ResourceKind.POD"),
            ("patch", "", "pods", RECONCILER, "patch_pod_labels"),
            (
                "list",
                "telemetry.intel.com",
                "taspolicies",
                CONTROLLER_RUNTIME,
                "ResourceKind.POLICY",
            ),
            (
                "watch",
                "telemetry.intel.com",
                "taspolicies",
                CONTROLLER_RUNTIME,
                "ResourceKind.POLICY",
            ),
            (
                "patch",
                "telemetry.intel.com",
                "taspolicies/status",
                RECONCILER,
                "update_policy_status",
            ),
            ("create", "", "events", RECONCILER, "emit_event"),
            ("get", "coordination.k8s.io", "leases", CONTROLLER_RUNTIME, "elect_leader"),
            ("create", "coordination.k8s.io", "leases", CONTROLLER_RUNTIME, "elect_leader"),
            ("update", "coordination.k8s.io", "leases", CONTROLLER_RUNTIME, "elect_leader"),
        ],
    ),
    *grants(
        "tas-descheduler",
        "cluster",
        [
            ("list", "", "nodes", DESCHEDULER_RUNTIME, "ResourceKind.NODE"),
            ("watch", "", "nodes", DESCHEDULER_RUNTIME, "ResourceKind.NODE"),
            ("list", "", "pods", DESCHEDULER_RUNTIME, "ResourceKind.POD"),
            ("watch", "", "pods", DESCHEDULER_RUNTIME, "ResourceKind.POD"),
            ("create", "", "pods/eviction", EVICTOR, "evict_pod"),
            ("list", "policy", "poddisruptionbudgets", DESCHEDULER_RUNTIME, "ResourceKind.PDB"),
            ("watch", "policy", "poddisruptionbudgets", DESCHEDULER_RUNTIME, "ResourceKind.PDB"),
            (
                "list",
                "telemetry.intel.com",
                "taspolicies",
                DESCHEDULER_RUNTIME,
                "ResourceKind.POLICY",
            ),
            (
                "watch",
                "telemetry.intel.com",
                "taspolicies",
                DESCHEDULER_RUNTIME,
                "ResourceKind.POLICY",
            ),
            ("create", "", "events", EVICTOR, "emit_event"),
            (
                "get",
                "scheduling.k8s.io",
                "priorityclasses",
                DEFAULT_EVICTOR,
                "get_priority_class_value",
            ),
            ("list", "", "namespaces", DEFAULT_EVICTOR, "list_namespaces"),
            (
                "list",
                "",
                "persistentvolumeclaims",
                DEFAULT_EVICTOR,
                "list_persistent_volume_claims",
            ),
            ("list", "metrics.k8s.io", "nodes", USAGE, "list_node_metrics"),
            ("list", "metrics.k8s.io", "pods", USAGE, "list_pod_metrics"),
            ("get", "coordination.k8s.io", "leases", DESCHEDULER_RUNTIME, "elect_leader"),
            ("create", "coordination.k8s.io", "leases", DESCHEDULER_RUNTIME, "elect_leader"),
            ("update", "coordination.k8s.io", "leases", DESCHEDULER_RUNTIME, "elect_leader"),
        ],
    ),
    *grants(
        "tas-extender",
        "cluster",
        [
            ("list", "telemetry.intel.com", "taspolicies", EXTENDER_RUNTIME, "ResourceKind.POLICY"),
            (
                "watch",
                "telemetry.intel.com",
                "taspolicies",
                EXTENDER_RUNTIME,
                "ResourceKind.POLICY",
            ),
            ("list", "", "pods", EXTENDER_RUNTIME, "ResourceKind.POD"),
            ("watch", "", "pods", EXTENDER_RUNTIME, "ResourceKind.POD"),
            ("list", "", "nodes", EXTENDER_RUNTIME, "ResourceKind.NODE"),
            ("watch", "", "nodes", EXTENDER_RUNTIME, "ResourceKind.NODE"),
            ("list", "metrics.k8s.io", "pods", EXTENDER_RUNTIME, "open_resource_metrics_pod_usage"),
        ],
    ),
    # The custom metrics API, read by all three under `--metrics custom-metrics`.
    *grants(
        "tas-policy-controller",
        "custom-metrics",
        [("get", "custom.metrics.k8s.io", "*", CONTROLLER_RUNTIME, "open_view")],
    ),
    *grants(
        "tas-descheduler",
        "custom-metrics",
        [("get", "custom.metrics.k8s.io", "*", DESCHEDULER_RUNTIME, "open_view")],
    ),
    *grants(
        "tas-extender",
        "custom-metrics",
        [("get", "custom.metrics.k8s.io", "*", EXTENDER_RUNTIME, "open_view")],
    ),
    # SoftTainter's and MakeRoomForPending's taints, fenced by admission to the two it owns.
    *grants(
        "tas-descheduler",
        "descheduler-taints",
        [("patch", "", "nodes", "descheduler/tainter.py", "set_node_taints")],
    ),
]

#: Every install directory, and the directories of GRANTS' rows its roles hold.
INSTALLS: dict[str, tuple[str, ...]] = {
    "cluster": ("cluster",),
    "profiles/standalone": ("cluster",),
    "profiles/kube-prometheus": ("cluster",),
    "profiles/kube-prometheus-stack": ("cluster",),
    "custom-metrics": ("cluster", "custom-metrics"),
    "descheduler-taints": ("descheduler-taints",),
}
#: Calls a component makes only in a configuration its own directory grants: (account, the
#: access) -> that directory, and what makes the component call.
OPTIONAL: dict[tuple[str, Access], tuple[str, str]] = {
    ("tas-descheduler", Access("patch", "", "nodes")): (
        "descheduler-taints",
        "a policy enabling SoftTainter or MakeRoomForPending",
    ),
    **{
        (account, A_CUSTOM_METRIC): ("custom-metrics", "--metrics custom-metrics")
        for account in COMPONENT_CODE
    },
}


def role_grants(directory: Path, account: str) -> set[Access]:
    """What the roles of `kubectl kustomize directory` grant the ServiceAccount, anywhere."""
    documents = rendered(directory)
    stored = {
        (d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]): d
        for d in documents
        if d.get("kind") in ("Role", "ClusterRole")
    }

    def role(plural: str, namespace: str | None, name: str) -> Mapping[str, Any] | None:
        kind = "ClusterRole" if plural == "clusterroles" else "Role"
        return stored.get((kind, namespace, name))

    roles = bound_roles(
        User.service_account(NAMESPACE, account),
        cluster_bindings=[d for d in documents if d.get("kind") == "ClusterRoleBinding"],
        namespace_bindings=[d for d in documents if d.get("kind") == "RoleBinding"],
        role=role,
    )
    return granted(roles)


def referenced(path: Path) -> set[str]:
    """The names a module's code refers to (not its comments or strings): `name`, `attr`,
    `Name.attr` for an attribute of a plain name (`ResourceKind.NODE`), and keywords passed
    (`watch=True`)."""
    found: set[str] = set()
    for item in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(item, ast.Name):
            found.add(item.id)
        elif isinstance(item, ast.Attribute):
            found.add(item.attr)
            if isinstance(item.value, ast.Name):
                found.add(f"{item.value.id}.{item.attr}")
        elif isinstance(item, ast.FunctionDef | ast.ClassDef):
            found.add(item.name)
        elif isinstance(item, ast.keyword) and item.arg:
            found.add(item.arg)
    return found


def component_modules(account: str) -> list[Path]:
    command, package = COMPONENT_CODE[account]
    return [ROOT / command, *sorted((ROOT / package).rglob("*.py"))]


def used(account: str) -> dict[Access, list[str]]:
    """Every access the component's code may need, with the modules and names needing it."""
    found: dict[Access, list[str]] = {}
    for module in component_modules(account):
        names = referenced(module)
        for name, need in NEEDS.items():
            if name in names:
                for access in need.accesses:
                    found.setdefault(access, []).append(f"{module.relative_to(ROOT)}: {name}")
    return found


@pytest.mark.parametrize("install", list(INSTALLS))
@pytest.mark.parametrize("account", list(COMPONENT_CODE))
def test_every_grant_of_an_install_is_listed_with_the_code_that_uses_it(
    install: str, account: str
) -> None:
    listed = {
        g.access for g in GRANTS if g.account == account and g.shipped_in in INSTALLS[install]
    }
    granted_there = role_grants(ROOT / "deploy" / install, account)
    assert granted_there - listed == set(), f"granted in deploy/{install}, no use listed"
    assert listed - granted_there == set(), f"listed for deploy/{install}, not granted there"


@pytest.mark.parametrize("grant", GRANTS, ids=lambda g: f"{g.account} {g.access}")
def test_each_listed_use_is_made_where_the_table_says(grant: Grant) -> None:
    need = NEEDS[grant.call]
    assert any(grant.access.covers(access) for access in need.accesses), (
        f"{grant.call} needs {sorted(map(str, need.accesses))}, not {grant.access}"
    )
    assert grant.call in referenced(ROOT / grant.module), f"{grant.module} no longer calls it"
    assert ROOT / grant.module in component_modules(grant.account), "not the component's code"
    for module, name in need.through:
        assert name in referenced(ROOT / module), f"{module} no longer calls {name}"


@pytest.mark.parametrize("account", list(COMPONENT_CODE))
def test_every_call_a_component_makes_is_granted_by_its_install(account: str) -> None:
    """Each access the component's code needs is granted by deploy/cluster, or, for a call
    only some configurations make, by the directory that configuration applies."""
    base = role_grants(CLUSTER, account)
    for access, where in used(account).items():
        optional = OPTIONAL.get((account, access))
        granted_by = role_grants(ROOT / "deploy" / optional[0], account) if optional else base
        assert any(grant.covers(access) for grant in granted_by), (
            f"{access}, needed by {where}, is not granted in "
            f"deploy/{optional[0] if optional else 'cluster'}"
        )


def test_the_calls_only_some_configurations_make_are_not_made_by_the_default_install() -> None:
    """deploy/cluster grants neither: no Deployment of it reads the custom metrics API, and the
    descheduler's shipped policy enables neither plugin that taints."""
    for account in COMPONENT_CODE:
        assert "custom-metrics" not in container(account)["args"], account
        assert container(account, CUSTOM_METRICS)["args"].count("custom-metrics") == 1, account
    policy = shipped("ConfigMap", "tas-descheduler-policy")["data"]["policy.yaml"]
    assert "SoftTainter" not in policy
    assert "MakeRoomForPending" not in policy


def api_calling_methods() -> set[str]:
    """The public methods of KubernetesCluster that send a request (directly, or through a
    private helper of its own), found in its source."""
    tree = ast.parse((ROOT / KUBERNETES).read_text(encoding="utf-8"))
    (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "KubernetesCluster"]
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    clients = {"_core", "_custom", "_policy_api"}

    def direct(method: ast.FunctionDef) -> bool:
        for item in ast.walk(method):
            if isinstance(item, ast.Name) and item.id in ("_api_call", "scheduling"):
                return True
            if isinstance(item, ast.Attribute) and item.attr in clients:
                return True
        return False

    def helpers(method: ast.FunctionDef) -> set[str]:
        return {
            n.attr
            for n in ast.walk(method)
            if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"
            and n.attr in methods
        }

    calling = {name for name, method in methods.items() if direct(method)}
    while True:
        more = {n for n, m in methods.items() if n not in calling and helpers(m) & calling}
        if not more:
            break
        calling |= more
    return {name for name in calling if not name.startswith("_")}


def test_every_call_to_the_api_server_has_its_need_listed() -> None:
    """A new request in the adapter, or a new cache kind, fails here until NEEDS says what it
    needs, so the component tests above see it."""
    assert api_calling_methods() == set(NEEDS) - {
        f"ResourceKind.{kind.name}" for kind in ResourceKind
    } - {"elect_leader", "open_view", "open_resource_metrics_pod_usage"}
    assert {f"ResourceKind.{kind.name}" for kind in ResourceKind} <= set(NEEDS)
    # Outside the cluster adapters, a library module sends requests for a component only in a
    # function NEEDS names (the components' scan sees it called, as the wiring's
    # `open_resource_metrics_pod_usage`).
    calling = api_calling_methods()
    for module in sorted((ROOT / "tas").rglob("*.py")):
        if module.parent.name == "cluster":
            continue
        tree = ast.parse(module.read_text(encoding="utf-8"))
        accounted = [
            n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name in NEEDS
        ]
        inside = {id(n) for function in accounted for n in ast.walk(function)}
        calls = {
            n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and id(n) not in inside
        }
        assert not calls & calling, f"{module.relative_to(ROOT)}: {sorted(calls & calling)}"


# --- the roles of the programs around the components ------------------------------------------

#: Every grant shipped to an account that is not a component's: the programs around them (the
#: standalone Prometheus, kube-prometheus's Prometheus reading our ServiceMonitors,
#: prometheus-adapter, the second kube-scheduler), whose code is not ours. Per account
#: (`namespace/name`), each grant (`<namespace of the Role, or cluster>: <verb> <resource>`,
#: or a built-in role bound by name) and what of that program uses it.
SD = "its Kubernetes service discovery lists and watches"
OPERATOR_SD = (
    "the Prometheus Operator's discovery for our ServiceMonitors lists and watches the Services, "
    "their Endpoints (or EndpointSlices, with serviceDiscoveryRole: EndpointSlice) and the Pods "
    "behind them; `get` as kube-prometheus grants it in its own namespaces"
)
ADAPTER = "prometheus-adapter maps each series' labels to the object it names"
OTHER_GRANTS: dict[str, dict[str, str]] = {
    "tas-monitoring/tas-prometheus": {
        f"{namespace}: {verb} pods": f"prometheus.yml: {SD} pods here (role: pod)"
        for namespace in ("tas-monitoring", NAMESPACE)
        for verb in ("list", "watch")
    },
    "monitoring/prometheus-k8s": {
        f"{namespace}: {verb} {resource}": OPERATOR_SD
        for namespace in ("tas-monitoring", NAMESPACE)
        for verb in ("get", "list", "watch")
        for resource in ("services", "endpoints", "pods", "endpointslices.discovery.k8s.io")
    },
    "monitoring/tas-prometheus-adapter": {
        **{
            f"cluster: {verb} {resource}": ADAPTER
            for verb in ("get", "list", "watch")
            for resource in ("nodes", "namespaces", "pods", "services")
        },
        "cluster: built-in ClusterRole system:auth-delegator": (
            "an aggregated API server: TokenReviews and SubjectAccessReviews of its callers"
        ),
        "kube-system: built-in Role extension-apiserver-authentication-reader": (
            "an aggregated API server: reads the ConfigMap of the front proxy's client CA"
        ),
    },
    f"{NAMESPACE}/tas-scheduler": {
        "cluster: built-in ClusterRole system:kube-scheduler": "kube-scheduler, as kubeadm's",
        "cluster: built-in ClusterRole system:volume-scheduler": "its volume binding",
        "kube-system: built-in Role extension-apiserver-authentication-reader": (
            "its secure serving: reads the ConfigMap of the front proxy's client CA"
        ),
        **{
            f"{NAMESPACE}: {verb} leases.coordination.k8s.io": (
                "its leader election, under its own lease name (system:kube-scheduler covers "
                "only `kube-scheduler`'s)"
            )
            for verb in ("get", "create", "update")
        },
    },
}


def everything_shipped() -> list[Document]:
    """Every object of every kustomization under deploy/ and of deploy/scheduler's files, once."""
    found: dict[tuple[str, str, str], Document] = {}
    directories = [p.parent for p in sorted((ROOT / "deploy").rglob("kustomization.yaml"))]
    documents = [d for directory in directories for d in rendered(directory)]
    documents += manifests(ROOT / "deploy" / "scheduler")
    for d in documents:
        metadata = d.get("metadata") or {}
        found[(d["kind"], metadata.get("namespace", ""), metadata.get("name", ""))] = d
    return list(found.values())


def other_grants() -> dict[str, set[str]]:
    """What the shipped bindings grant each ServiceAccount that is not a component's."""
    documents = everything_shipped()
    roles = {
        (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
        for d in documents
        if d["kind"] in ("Role", "ClusterRole")
    }
    found: dict[str, set[str]] = {}
    for binding in documents:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        scope = binding["metadata"].get("namespace", "") or "cluster"
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], scope if ref["kind"] == "Role" else "", ref["name"]))
        if role is None:
            grants_here = {f"{scope}: built-in {ref['kind']} {ref['name']}"}
        else:
            grants_here = {
                f"{scope}: {Access(verb, group, resource)}"
                for rule in role["rules"]
                for verb in rule["verbs"]
                for group in rule["apiGroups"]
                for resource in rule["resources"]
            }
        for subject in binding["subjects"]:
            account = f"{subject.get('namespace', scope)}/{subject['name']}"
            if subject["kind"] == "ServiceAccount" and account.split("/")[1] not in (
                COMPONENT_CODE
            ):
                found.setdefault(account, set()).update(grants_here)
    return found


def test_every_grant_to_a_program_around_the_components_is_listed_with_its_use() -> None:
    shipped_grants = other_grants()
    assert set(shipped_grants) == set(OTHER_GRANTS)
    for account, listed in OTHER_GRANTS.items():
        assert shipped_grants[account] - set(listed) == set(), f"{account}: no use listed"
        assert set(listed) - shipped_grants[account] == set(), f"{account}: not granted"


def test_the_standalone_prometheus_may_discover_exactly_where_it_scrapes() -> None:
    """Its Roles against its prometheus.yml: `role: pod` discovery in each namespace named."""
    config = yaml.safe_load(
        (ROOT / "deploy/metrics-pipeline/prometheus/prometheus.yml").read_text(encoding="utf-8")
    )
    needed = {
        f"{namespace}: {verb} {sd['role']}s"
        for job in config["scrape_configs"]
        for sd in job.get("kubernetes_sd_configs") or ()
        for namespace in sd["namespaces"]["names"]
        for verb in ("list", "watch")
    }
    assert needed == other_grants()["tas-monitoring/tas-prometheus"]


def test_kube_prometheus_s_prometheus_may_discover_in_each_namespace_of_our_monitors() -> None:
    monitors = [
        d
        for d in rendered(ROOT / "deploy/profiles/kube-prometheus")
        if d["kind"] == "ServiceMonitor"
    ]
    namespaces = {m["metadata"]["namespace"] for m in monitors}
    granted_in = {g.split(":")[0] for g in other_grants()["monitoring/prometheus-k8s"]}
    assert granted_in == namespaces
