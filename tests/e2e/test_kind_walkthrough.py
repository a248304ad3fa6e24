"""scripts/e2e-kind.sh (`make e2e-kind`), run step by step against the API emulator on every run.

The script runs unchanged under bash, with stand-ins for kind, docker and kubectl first on PATH
(tests/e2e/kind_stand_ins.py): they send what the script applies to the emulator, which refuses
what an API server refuses, a namespaced object before its namespace included (NamespaceLifecycle
admission). What a cluster would do by itself is `World`: it establishes CRDs, rolls workloads
out, schedules the demo pod (through the real extender, a `tas extender` process reading the
nodes' health, when kube-scheduler is wired to it), labels nodes at health 2 and evicts from them
once the descheduler is switched to Automatic, as the policy controller and the descheduler would.

Covered:
- the whole walkthrough passes, its steps in the order of docs/deploy.md: the CRD on its own
  (crds: deploy/cluster no longer carries it), then the standalone profile's namespaces (before
  the Secrets that go into them) and the profile; every object of them, the demo's and the
  Secrets exist at the end; the descheduler's JSON patch (its `test`
  ops) still matches the shipped arguments;
- the image built and loaded into the nodes is the one every component's rendered Deployment
  names (deploy/cluster/kustomization.yaml's `images`), so no node pulls it from a registry;
- the "extender was called" check needs a line only a filter request writes: with a
  kube-scheduler that never calls the extender, the extender's log still names demo-policy (the
  policy store's line), and the script fails at that check.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tas.adapters.metrics.textfile import write_node_series
from tests.deploy.kustomize import render
from tests.e2e.kind_stand_ins import StandIns
from tests.k8s_emulator import RESOURCES, KubeEmulator
from tests.processes import Process, free_port, tas_command

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "e2e-kind.sh"
DEMO = ROOT / "deploy" / "health-metric-demo"
DEMO_NAMESPACE = "health-metric-demo"
CLUSTER = "tas-e2e"
SCHEDULER_CONFIG = "--config=/etc/kubernetes/tas/scheduler-config.yaml"

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("openssl") is None,
    reason="the walkthrough needs bash, and openssl for scripts/gen-certs.sh",
)


def labels(obj: dict[str, Any]) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("labels") or {})


class World(contextlib.AbstractContextManager["World"]):
    """The cluster's own behaviour, every 50 ms, in place of its controllers and kubelets."""

    def __init__(
        self, api: KubeEmulator, state: Path, metrics: Path, extender: str, *, wired: bool
    ) -> None:
        self.api, self.state, self.metrics, self.extender = api, state, metrics, extender
        self.wired = wired  # whether kube-scheduler calls the extender when it is configured to
        self.filters: list[list[str]] = []  # the candidates of every filter call made
        self.health: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self.errors: list[BaseException] = []

    def __enter__(self) -> World:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.step()
            except Exception as error:  # shown by the test, never a silent hang
                self.errors.append(error)
                return

    def step(self) -> None:
        api = self.api
        for crd in api.objects("customresourcedefinitions"):
            if not (crd.get("status") or {}).get("conditions"):
                established = {"conditions": [{"type": "Established", "status": "True"}]}
                api.merge(
                    "customresourcedefinitions",
                    crd["metadata"]["name"],
                    {"status": established},
                    status=True,
                )
        nodes = [n["metadata"]["name"] for n in api.objects("nodes")]
        for daemonset in api.objects("daemonsets"):
            wanted = {"desiredNumberScheduled": len(nodes), "numberReady": len(nodes)}
            self._set_status("daemonsets", daemonset, wanted)
        self._read_health(nodes)
        pods = api.objects("pods", namespace=DEMO_NAMESPACE)
        for deployment in api.objects("deployments"):
            meta = deployment["metadata"]
            available = (deployment.get("spec") or {}).get("replicas", 1)
            if meta["namespace"] == DEMO_NAMESPACE:
                selector = deployment["spec"]["selector"]["matchLabels"]
                mine = [p for p in pods if selector.items() <= labels(p).items()]
                if not mine:
                    self._schedule(deployment)
                available = len(mine)
            wanted = {
                "observedGeneration": meta.get("generation", 1),
                "availableReplicas": available,
            }
            self._set_status("deployments", deployment, wanted)

    def _set_status(self, plural: str, obj: dict[str, Any], wanted: dict[str, int]) -> None:
        if wanted.items() <= (obj.get("status") or {}).items():
            return
        meta = obj["metadata"]
        self.api.merge(
            plural, meta["name"], {"status": wanted}, namespace=meta["namespace"], status=True
        )

    def _read_health(self, nodes: list[str]) -> None:
        """node-exporter and Prometheus to the components: each node's textfile, as written by
        `set-health.sh --docker`; then the policy controller's label and the descheduler."""
        for node in nodes:
            textfile = self.state / "nodes" / node / "tmp" / "node-metrics" / "text.prom"
            if not textfile.exists():
                continue
            value = textfile.read_text(encoding="utf-8").split()[-1]
            if self.health.get(node) != value:
                self.health[node] = value
                write_node_series(self.metrics, node, {"node_health_metric": float(value)})
            violating = labels(self.api.get("nodes", node) or {}).get("demo-policy") == "violating"
            if (value == "2") != violating:
                label = "violating" if value == "2" else None
                self.api.merge("nodes", node, {"metadata": {"labels": {"demo-policy": label}}})
        descheduler = self.api.get(
            "deployments", "tas-descheduler", namespace="telemetry-aware-scheduling"
        )
        (container,) = (descheduler or {"spec": {"template": {"spec": {"containers": [{}]}}}})[
            "spec"
        ]["template"]["spec"]["containers"]
        args = container.get("args") or []
        if "--mode" in args and args[args.index("--mode") + 1] == "Automatic":
            for pod in self.api.objects("pods", namespace=DEMO_NAMESPACE):
                node = pod["spec"].get("nodeName")
                if self.health.get(node) == "2":
                    self.api.delete("pods", pod["metadata"]["name"], namespace=DEMO_NAMESPACE)

    def _schedule(self, deployment: dict[str, Any]) -> None:
        """kube-scheduler: a worker the pod's node affinity allows, through the extender's filter
        when kube-scheduler runs with the TAS configuration."""
        candidates = [
            n["metadata"]["name"]
            for n in self.api.objects("nodes")
            if "node-role.kubernetes.io/control-plane" not in labels(n)
            and labels(n).get("demo-policy") != "violating"
        ]
        template = deployment["spec"]["template"]
        name = f"{deployment['metadata']['name']}-6558d5ffbf-{os.urandom(3).hex()[:5]}"
        pod = {
            "metadata": {
                "name": name,
                "namespace": DEMO_NAMESPACE,
                "labels": template["metadata"]["labels"],
            },
            "spec": dict(template["spec"]),
        }
        scheduler = self.api.objects("pods", namespace="kube-system")
        configured = any(
            SCHEDULER_CONFIG in p["spec"]["containers"][0].get("args", []) for p in scheduler
        )
        if configured and self.wired:
            self.filters.append(candidates)
            body = {"Pod": pod, "Nodes": None, "NodeNames": candidates}
            answer = httpx.post(f"{self.extender}/scheduler/filter", json=body, timeout=5)
            candidates = answer.json()["NodeNames"] or []
        if candidates:
            pod["spec"]["nodeName"] = candidates[0]
            pod["status"] = {"phase": "Running"}
            self.api.create("pods", pod, namespace=DEMO_NAMESPACE)


# --------------------------------------------------------------------------- running it


def extender(state: Path, metrics: Path) -> Process:
    """The real extender with the demo's policy, reading the nodes' health; its log is what
    `kubectl logs -l app.kubernetes.io/name=tas-extender` prints."""
    (state / "logs").mkdir(parents=True)
    port = free_port()
    args = tas_command(
        "extender", "--policies", str(DEMO / "health-policy.yaml"),
        "--metrics", f"textfile:{metrics}", "--sync-period", "200ms", "--insecure-http",
        "--listen", f"127.0.0.1:{port}",
    )  # fmt: skip
    return Process(args, f"http://127.0.0.1:{port}", "/readyz", state / "logs" / "tas-extender.log")


@contextlib.contextmanager
def walkthrough(tmp_path: Path, *, wired: bool) -> Iterator[tuple[KubeEmulator, World, Path]]:
    state, metrics = tmp_path / "state", tmp_path / "metrics"
    metrics.mkdir()
    with (
        KubeEmulator(namespace_lifecycle=True) as api,
        extender(state, metrics) as process,
    ):
        process.start()
        with World(api, state, metrics, process.url, wired=wired) as world:
            yield api, world, state


def run_script(api: KubeEmulator, state: Path, timeout: int) -> tuple[int, str, list[list[str]]]:
    """Run the script with the stand-ins first on PATH: (exit code, stderr, the tools' calls)."""
    with StandIns(state, emulator_url=api.url, emulator_token=api.admin_token) as stand_ins:
        stand_ins.install(state / "bin")
        env = {
            **os.environ,
            "PATH": f"{state / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
            "TAS_KIND_TIMEOUT": str(timeout),
        }
        for variable in ("TAS_KIND_KEEP", "TAS_KIND_CLUSTER", "KIND_NODE_IMAGE", "KUBECONFIG"):
            env.pop(variable, None)
        bash = shutil.which("bash")
        assert bash is not None
        result = subprocess.run(
            [bash, str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
        return result.returncode, result.stderr, list(stand_ins.calls)


def identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace") or "", meta["name"]


def test_the_walkthrough_applies_in_the_documented_order_and_passes(tmp_path: Path) -> None:
    with walkthrough(tmp_path, wired=True) as (api, world, state):
        code, stderr, calls = run_script(api, state, timeout=20)
        assert not world.errors, world.errors
        assert code == 0, stderr[-4000:]
        assert "e2e-kind: PASSED" in stderr

        applied = [c[2:] for c in calls if c[:2] == ["kubectl", "apply"]]
        assert applied[:3] == [
            ["-k", "crds"],
            [
                "-f",
                "deploy/cluster/namespace.yaml",
                "-f",
                "deploy/metrics-pipeline/node-exporter/namespace.yaml",
            ],
            ["-k", "deploy/profiles/standalone"],
        ]
        stored = {identity(o) for r in RESOURCES for o in api.objects(r.key)}
        for directory in (ROOT / "crds", ROOT / "deploy" / "profiles" / "standalone"):
            for obj in render(directory):
                assert identity(obj) in stored, identity(obj)
        images = {
            container["image"]
            for obj in render(ROOT / "deploy" / "cluster")
            if obj["kind"] == "Deployment"
            for container in obj["spec"]["template"]["spec"]["containers"]
        }
        (image,) = images
        assert ["docker", "build", "-t", image, "."] in calls
        assert ["kind", "load", "docker-image", image, "--name", CLUSTER] in calls
        for path in ("namespace.yaml", "health-policy.yaml", "demo-app.yaml"):
            for obj in yaml.safe_load_all((DEMO / path).read_text(encoding="utf-8")):
                assert identity(obj) in stored, identity(obj)
        assert {
            ("Secret", "telemetry-aware-scheduling", "tas-extender-tls"),
            ("Secret", "tas-monitoring", "tas-extender-scrape-tls"),
        } <= stored
        # kube-scheduler called the extender for the demo pod, and again for its replacement,
        # which the violating node was no candidate for.
        assert len(world.filters) == 2, world.filters
        assert len(world.filters[1]) == 1
        descheduler = api.get(
            "deployments", "tas-descheduler", namespace="telemetry-aware-scheduling"
        )
        assert descheduler is not None
        args = descheduler["spec"]["template"]["spec"]["containers"][0]["args"]
        assert args[args.index("--mode") + 1] == "Automatic"
    log = (state / "logs" / "tas-extender.log").read_text(encoding="utf-8")
    assert (
        "Filtered nodes available for demo-policy: " in log
        or ": filter health-metric-demo/demo-app-" in log
    )


def test_the_walkthrough_fails_when_kube_scheduler_never_calls_the_extender(
    tmp_path: Path,
) -> None:
    with walkthrough(tmp_path, wired=False) as (api, world, state):
        code, stderr, _ = run_script(api, state, timeout=2)
        assert not world.errors, world.errors
    assert world.filters == []
    log = (state / "logs" / "tas-extender.log").read_text(encoding="utf-8")
    # The policy store's own line names the policy: a check for "demo-policy" passed on it.
    assert "Policy health-metric-demo/demo-policy added" in log
    assert code == 1
    assert "e2e-kind: FAILED: kube-scheduler calls the extender for the demo pod" in stderr
