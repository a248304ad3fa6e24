"""The shipped metrics pipeline, run with real binaries on 127.0.0.1.

`start_pipeline` starts one real node-exporter per pretend node with the command line of the
shipped DaemonSet (deploy/metrics-pipeline/node-exporter; only the listen address, the host
paths and the textfile directory are local), and a real Prometheus with the shipped
prometheus.yml and the rule files it names (recording rules, alerts), where only what needs a
cluster is replaced: each `kubernetes_sd_configs` becomes static targets carrying the
`__meta_kubernetes_*` labels the Kubernetes discovery would attach, so the shipped relabelling
runs unchanged, and the intervals are 1 s. Each job also gets a decoy target that its
relabelling must drop.
"""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.deploy.kustomize import Document, render
from tests.processes import Process, free_port
from tests.tas.adapters.metrics.processes import NODE_EXPORTER, PROMETHEUS, binary

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PIPELINE = DEPLOY / "metrics-pipeline"
PROMETHEUS_DIR = PIPELINE / "prometheus"
PROMETHEUS_YML = PROMETHEUS_DIR / "prometheus.yml"
RULES_YML = PROMETHEUS_DIR / "tas-recording-rules.yml"
ALERTS_YML = PROMETHEUS_DIR / "tas-alerts.yml"
ADAPTER_CONFIG = PIPELINE / "prometheus-adapter" / "config.yaml"
#: The nodes of the pretend cluster and their health_metric.
HEALTH = {"node-a": 0.0, "node-b": 2.0}
#: The pod each job's target stands for: (app label, container port name) per job.
JOB_PODS = {
    "node-exporter": ("tas-node-exporter", "metrics"),
    "tas-policy-controller": ("tas-policy-controller", "http"),
    "tas-descheduler": ("tas-descheduler", "metrics"),
    "tas-extender": ("tas-extender", "https"),
}


@functools.cache
def _rendered(directory: Path) -> tuple[Document, ...]:
    return tuple(render(directory))


def rendered(directory: Path) -> list[Document]:
    """`kubectl kustomize directory`, as a fresh copy."""
    return copy.deepcopy(list(_rendered(directory.resolve())))


def find(objects: list[Document], kind: str, name: str) -> Document:
    (found,) = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def node_exporter_daemonset() -> Document:
    return find(rendered(PIPELINE / "node-exporter"), "DaemonSet", "tas-node-exporter")


def local_node_exporter_args(args: list[str], *, port: int, textfile_dir: Path) -> list[str]:
    """The DaemonSet's arguments for a node-exporter running here instead of in a pod."""
    local = {
        "--web.listen-address": f"127.0.0.1:{port}",
        "--path.procfs": "/proc",
        "--path.sysfs": "/sys",
        "--collector.textfile.directory": str(textfile_dir),
    }
    out = []
    for arg in args:
        flag, equals, _ = arg.partition("=")
        out.append(f"{flag}={local[flag]}" if equals and flag in local else arg)
    return out


def local_prometheus_config(
    shipped: Document, *, exporters: dict[str, str], closed_port: int
) -> Document:
    """The shipped configuration with static targets in place of Kubernetes discovery."""
    config = copy.deepcopy(shipped)
    config["global"]["scrape_interval"] = "1s"
    config["global"]["evaluation_interval"] = "1s"
    for job in config["scrape_configs"]:
        name = job["job_name"]
        app, port_name = JOB_PODS[name]
        (discovery,) = job.pop("kubernetes_sd_configs")
        (namespace,) = discovery["namespaces"]["names"]
        job["scrape_interval"] = "1s"

        if name == "node-exporter":
            targets = [
                _target(address, namespace, node, f"tas-node-exporter-{node}", app, port_name)
                for node, address in exporters.items()
            ]
        else:
            closed = f"127.0.0.1:{closed_port}"
            targets = [_target(closed, namespace, "node-a", f"{app}-0", app, port_name)]
        # Decoys: another app's pod, and this app's pod on another port.
        closed = f"127.0.0.1:{closed_port}"
        targets.append(
            _target(closed, namespace, "node-a", "decoy-app", "something-else", port_name)
        )
        targets.append(_target(closed, namespace, "node-a", "decoy-port", app, "not-" + port_name))
        job["static_configs"] = targets
    return config


def _target(address: str, namespace: str, node: str, pod: str, app: str, port: str) -> Document:
    """A static target with the labels Kubernetes pod discovery would give it."""
    return {
        "targets": [address],
        "labels": {
            "__meta_kubernetes_namespace": namespace,
            "__meta_kubernetes_pod_name": pod,
            "__meta_kubernetes_pod_node_name": node,
            "__meta_kubernetes_pod_label_app_kubernetes_io_name": app,
            "__meta_kubernetes_pod_container_port_name": port,
        },
    }


@dataclass
class Pipeline:
    """The running pipeline: its Prometheus, its exporters and the pretend nodes."""

    prometheus: Process
    exporters: dict[str, Process]
    textfile_dirs: dict[str, Path]
    workdir: Path
    has_scrape_certs: bool
    client: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=5.0))

    def api(self, path: str, **params: Any) -> Any:
        response = self.client.get(f"{self.prometheus.url}/api/v1/{path}", params=params)
        body = response.json()
        if body.get("status") != "success":
            raise AssertionError(f"{path} {params}: {body}")
        return body["data"]

    def query(self, expr: str) -> list[Document]:
        data = self.api("query", query=expr)
        result: list[Document] = data["result"]
        return result

    def parse_error(self, expr: str) -> str | None:
        """Prometheus's error for `expr`, or None when it parses (and evaluates)."""
        body = self.client.get(f"{self.prometheus.url}/api/v1/query", params={"query": expr}).json()
        return None if body.get("status") == "success" else str(body.get("error"))

    def wait_for(self, expr: str, count: int, *, timeout: float = 45.0) -> list[Document]:
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if len(result) >= count:
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{expr}: {len(result)} series, wanted {count}: {result}")
            time.sleep(0.5)


def start_pipeline(workdir: Path) -> Iterator[Pipeline]:
    """Start the exporters and Prometheus; yields once every node's health is recorded."""
    started: list[Process] = []
    try:
        daemonset = node_exporter_daemonset()
        (container,) = daemonset["spec"]["template"]["spec"]["containers"]
        exporters: dict[str, Process] = {}
        textfile_dirs: dict[str, Path] = {}
        for node, health in HEALTH.items():
            textfile = workdir / node / "node-metrics"
            textfile.mkdir(parents=True)
            (textfile / "text.prom").write_text(f"node_health_metric {health:g}\n")
            port = free_port()
            args = [
                binary(NODE_EXPORTER),
                *local_node_exporter_args(container["args"], port=port, textfile_dir=textfile),
            ]
            exporter = Process(
                args, f"http://127.0.0.1:{port}", "/metrics", workdir / f"{node}.log"
            )
            exporter.start()
            started.append(exporter)
            exporters[node] = exporter
            textfile_dirs[node] = textfile
        config_dir = workdir / "prometheus" / "config"
        config_dir.mkdir(parents=True)
        shipped = yaml.safe_load(PROMETHEUS_YML.read_text(encoding="utf-8"))
        for rule_file in shipped["rule_files"]:
            shutil.copy(PROMETHEUS_DIR / rule_file, config_dir / rule_file)
        config = local_prometheus_config(
            shipped,
            exporters={n: e.url.removeprefix("http://") for n, e in exporters.items()},
            closed_port=free_port(),
        )
        has_scrape_certs = write_extender_scrape_files(workdir / "prometheus")
        (config_dir / "prometheus.yml").write_text(yaml.safe_dump(config))
        port = free_port()
        prometheus = Process(
            [
                binary(PROMETHEUS),
                f"--config.file={config_dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={workdir / 'prometheus' / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            f"http://127.0.0.1:{port}",
            "/-/ready",
            workdir / "prometheus.log",
        )
        prometheus.start()
        started.append(prometheus)
        pipeline = Pipeline(prometheus, exporters, textfile_dirs, workdir, has_scrape_certs)
        pipeline.wait_for("node_health_metric", len(HEALTH))
        yield pipeline
        pipeline.client.close()
    finally:
        for process in reversed(started):
            process.stop()


def write_extender_scrape_files(prometheus_dir: Path) -> bool:
    """The Secret tas-extender-scrape-tls where the pod mounts it (../extender-scrape), made
    by scripts/gen-certs.sh; False (placeholders: the job gets no client) without openssl."""
    scrape = prometheus_dir / "extender-scrape"
    scrape.mkdir(parents=True, exist_ok=True)
    made = prometheus_dir / "certs"
    if shutil.which("openssl") is not None:
        subprocess.run(
            [str(ROOT / "scripts" / "gen-certs.sh"), str(made)],
            check=True,
            capture_output=True,
            timeout=60,
        )
        for source, target in (("ca.crt", "ca.crt"), ("scraper.crt", "tls.crt")):
            shutil.copy(made / source, scrape / target)
        shutil.copy(made / "scraper.key", scrape / "tls.key")
        return True
    for name in ("ca.crt", "tls.crt", "tls.key"):
        (scrape / name).write_text("placeholder: the Secret tas-extender-scrape-tls\n")
    return False
