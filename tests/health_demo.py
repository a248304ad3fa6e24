"""The health-metric demo on the shipped manifests, as an API server holds it: the directories
applied (deploy/cluster, deploy/health-metric-demo), the manifests of a directory, one rendered
object, and the demo's nodes (node-a at 0, node-b at 1, node-c at 2: `HEALTH`), pods and their
metrics-server usage. For the tests that run the components on their shipped roles
(tests/test_rbac.py) and `tas explain` against such a cluster
(tests/tas_cli/test_explain_cluster.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.pipeline import rendered

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "deploy" / "cluster"
DEMO = ROOT / "deploy" / "health-metric-demo"
NAMESPACE = "telemetry-aware-scheduling"
DEMO_NAMESPACE = "health-metric-demo"
HEALTH = {"node-a": 0, "node-b": 1, "node-c": 2}

Document = dict[str, Any]


def manifests(directory: Path) -> list[Document]:
    return [
        document
        for path in sorted(directory.glob("*.yaml"))
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8"))
        if isinstance(document, dict)
    ]


def shipped(kind: str, name: str, directory: Path = CLUSTER) -> Document:
    (found,) = [
        d for d in rendered(directory) if d.get("kind") == kind and d["metadata"]["name"] == name
    ]
    return found


def node(name: str, *, taints: Sequence[Mapping[str, str]] = ()) -> Document:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": [{**t, "effect": "PreferNoSchedule"} for t in taints]},
        "status": {
            "conditions": [{"type": "Ready", "status": "True"}],
            "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        },
    }


def pod_metrics(name: str, cpu: str) -> Document:
    """A PodMetrics as metrics-server serves it (metrics.k8s.io/v1beta1), for a demo pod."""
    return {
        "metadata": {"name": name, "namespace": DEMO_NAMESPACE},
        "timestamp": "2026-11-01T08:00:00Z",
        "window": "15s",
        "containers": [{"name": "app", "usage": {"cpu": cpu, "memory": "12Mi"}}],
    }


def demo_pod(name: str, node_name: str) -> Document:
    """A pod of the demo Deployment (deploy/health-metric-demo), as its ReplicaSet makes it."""
    documents = yaml.safe_load_all((DEMO / "demo-app.yaml").read_text(encoding="utf-8"))
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    return {
        "metadata": {
            "name": name,
            "namespace": DEMO_NAMESPACE,
            "labels": template["metadata"]["labels"],
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "demo-app-6558d5ffbf",
                    "uid": "0b7e7d3c-0000-4000-8000-000000000001",
                    "controller": True,
                }
            ],
        },
        "spec": {**template["spec"], "nodeName": node_name},
        "status": {"phase": "Running"},
    }
