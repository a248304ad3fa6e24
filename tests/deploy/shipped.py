"""What deploy/ ships, read as files (no kustomize): every YAML document under deploy/ and the
TASPolicy CRD, the Kubernetes objects among them, our Deployments and their containers, and
docker-compose.yml, the Secrets a set of objects reads; and the one way the deployment tests
run a shipped script.

Shared by the deployment tests that read the files as written (test_manifests.py,
test_command_lines.py, ...); what `kubectl apply -k` sends is tests/deploy/kustomize.py's.
"""

from __future__ import annotations

import copy
import functools
import subprocess
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, ROOT

NAMESPACE = "telemetry-aware-scheduling"
#: The image's name in the three Deployments: a placeholder that deploy/cluster/kustomization.yaml
#: replaces with the published name and tag (`images`; tests/deploy/test_kustomize.py checks it).
IMAGE_PLACEHOLDER = "telemetry-aware-scheduling"
#: The image docker-compose builds locally and runs.
IMAGE = f"{IMAGE_PLACEHOLDER}:0.1.0"
GEN_CERTS = ROOT / "scripts" / "gen-certs.sh"
SET_HEALTH = DEPLOY / "health-metric-demo" / "set-health.sh"
#: The kinds whose pod template runs pods.
WORKLOADS = ("Deployment", "DaemonSet", "StatefulSet")


def yaml_files() -> list[Path]:
    return sorted(p for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml"))


def load_documents(path: Path) -> list[Document]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def kubernetes_objects() -> list[tuple[Path, Document]]:
    """Every Kubernetes object shipped (a fresh copy: tests may change what they get)."""
    return copy.deepcopy(_kubernetes_objects())


@functools.cache
def _kubernetes_objects() -> list[tuple[Path, Document]]:
    found = []
    for path in [*yaml_files(), ROOT / "crds" / "taspolicy.yaml"]:
        for document in load_documents(path):
            if "apiVersion" in document and "kind" in document and "metadata" in document:
                found.append((path, document))
    return found


def objects_of(kind: str) -> list[Document]:
    return [d for _, d in kubernetes_objects() if d["kind"] == kind]


def the_object(kind: str, name: str) -> Document:
    (found,) = [d for d in objects_of(kind) if d["metadata"]["name"] == name]
    return found


def deployments() -> list[Document]:
    """The Deployments of this project (not the demo app's)."""
    return [d for d in objects_of("Deployment") if d["metadata"]["namespace"] == NAMESPACE]


def every_deployment() -> list[Document]:
    """Ours and the demo app: what a user applies runs unprivileged too (TAS's demo did)."""
    return objects_of("Deployment")


def containers(deployment: Document) -> list[Document]:
    spec = deployment["spec"]["template"]["spec"]
    return [*spec.get("initContainers", []), *spec["containers"]]


def tas_containers() -> list[tuple[str, Document]]:
    return [
        (d["metadata"]["name"], c)
        for d in deployments()
        for c in containers(d)
        if c["image"].split(":")[0] == IMAGE_PLACEHOLDER
    ]


def secrets_read(objects: list[Document]) -> set[tuple[str, str, str]]:
    """(namespace, Secret, reader) for every Secret a pod mounts or a ServiceMonitor reads."""
    found: set[tuple[str, str, str]] = set()
    for obj in objects:
        namespace = obj["metadata"].get("namespace", "")
        reader = f"{obj['kind']} {obj['metadata']['name']}"
        if obj["kind"] in WORKLOADS:
            for volume in obj["spec"]["template"]["spec"].get("volumes") or []:
                if "secret" in volume:
                    found.add((namespace, volume["secret"]["secretName"], reader))
        if obj["kind"] == "ServiceMonitor":
            for endpoint in obj["spec"]["endpoints"]:
                tls = endpoint.get("tlsConfig") or {}
                for ref in (tls.get("ca", {}).get("secret"), tls.get("cert", {}).get("secret"),
                            tls.get("keySecret")):  # fmt: skip
                    if ref:
                        found.add((namespace, ref["name"], reader))
    return found


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def compose_file() -> Document:
    """docker-compose.yml, parsed."""
    document: Document = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    return document


def run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """A shipped script (or git, docker) run to its end, its output captured as text."""
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False, **kwargs)
