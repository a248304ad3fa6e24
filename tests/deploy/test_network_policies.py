"""Who may reach the components: the NetworkPolicies of deploy/cluster, read as a network plugin
would apply them to the rendered Deployments.

Covered:
- every component's pods are selected by exactly one policy, which isolates them for ingress;
- the policy controller's and the descheduler's port (their /metrics and probes) admit only
  pods of the namespace `monitoring`, where the shipped Prometheus runs
  (deploy/metrics-pipeline), and no other port is opened;
- the extender's port admits any source (kube-scheduler runs on the host network; mTLS guards
  the port), and only that port;
- each port a policy opens is the port its container listens on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.pipeline import rendered

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "cluster"
PROMETHEUS = ROOT / "deploy" / "metrics-pipeline" / "prometheus"

Document = dict[str, Any]


def _deployments() -> dict[str, Document]:
    return {d["metadata"]["name"]: d for d in rendered(CLUSTER) if d["kind"] == "Deployment"}


def _policies() -> list[Document]:
    return [d for d in rendered(CLUSTER) if d["kind"] == "NetworkPolicy"]


def _selecting(deployment: Document) -> list[Document]:
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    namespace = deployment["metadata"]["namespace"]
    return [
        policy
        for policy in _policies()
        if policy["metadata"]["namespace"] == namespace
        and all(labels.get(k) == v for k, v in policy["spec"]["podSelector"]["matchLabels"].items())
    ]


def _container_ports(deployment: Document) -> set[int]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {port["containerPort"] for port in container["ports"]}


@pytest.mark.parametrize("name", ["tas-extender", "tas-policy-controller", "tas-descheduler"])
def test_each_component_is_isolated_by_one_policy_opening_only_its_own_port(name: str) -> None:
    deployment = _deployments()[name]
    (policy,) = _selecting(deployment)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    opened = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
    assert opened == _container_ports(deployment)


@pytest.mark.parametrize("name", ["tas-policy-controller", "tas-descheduler"])
def test_metrics_and_probes_admit_only_the_monitoring_namespace(name: str) -> None:
    (policy,) = _selecting(_deployments()[name])
    (rule,) = policy["spec"]["ingress"]
    assert rule["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}
    ]
    shipped = {
        d["metadata"].get("namespace") for d in rendered(PROMETHEUS) if d["kind"] == "Deployment"
    }
    assert shipped == {"monitoring"}  # where the shipped Prometheus scrapes from


def test_the_extenders_port_admits_any_source() -> None:
    (policy,) = _selecting(_deployments()["tas-extender"])
    (rule,) = policy["spec"]["ingress"]
    assert "from" not in rule  # kube-scheduler is on the host network; mTLS guards the port
