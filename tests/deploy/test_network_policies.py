"""Who may reach the components: the NetworkPolicies of deploy/cluster, read as a network plugin
would apply them to the rendered Deployments, in deploy/cluster and in each install profile.

Covered:
- every component's pods are selected by exactly one policy, which isolates them for ingress,
  and the ports it opens on them, named ports resolved against the pod's own container ports
  as a network plugin does, are exactly the ports the pod listens on;
- the policy controller's and the descheduler's ports (their /metrics and probes) admit nobody
  in deploy/cluster alone (its placeholder peer names no namespace), and in each profile only
  one peer, in a namespace it names by name (where the profile's Prometheus is: which pods,
  tests/deploy/test_stack_fixtures.py checks against each stack's objects);
- the extender's port admits any source (kube-scheduler runs on the host network; mTLS guards
  the port), and only that port.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.pipeline import rendered

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "deploy" / "cluster"
PROFILES = ["standalone", "kube-prometheus", "kube-prometheus-stack"]
COMPONENTS = ["tas-extender", "tas-policy-controller", "tas-descheduler"]

Document = dict[str, Any]


def selects(selector: Document, labels: dict[str, str]) -> bool:
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        assert expression["operator"] == "In", expression
        if labels.get(expression["key"]) not in expression["values"]:
            return False
    return True


def _deployments(objects: list[Document]) -> dict[str, Document]:
    return {d["metadata"]["name"]: d for d in objects if d["kind"] == "Deployment"}


def _selecting(objects: list[Document], deployment: Document) -> list[Document]:
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    namespace = deployment["metadata"]["namespace"]
    return [
        policy
        for policy in objects
        if policy["kind"] == "NetworkPolicy"
        and policy["metadata"]["namespace"] == namespace
        and selects(policy["spec"]["podSelector"], labels)
    ]


def _container_ports(deployment: Document) -> dict[str, int]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return {port.get("name", ""): port["containerPort"] for port in container["ports"]}


def opened_ports(policy: Document, deployment: Document) -> set[int]:
    """The ports of the pod that `policy` opens: a named port only where the pod names it."""
    served = _container_ports(deployment)
    found = set()
    for rule in policy["spec"]["ingress"]:
        for port in rule["ports"]:
            if isinstance(port["port"], str):
                if port["port"] in served:
                    found.add(served[port["port"]])
            else:
                found.add(port["port"])
    return found


def test_a_named_port_opens_only_on_a_pod_that_names_it() -> None:
    objects = rendered(CLUSTER)
    (policy,) = _selecting(objects, _deployments(objects)["tas-policy-controller"])
    controller = _deployments(objects)["tas-policy-controller"]
    descheduler = _deployments(objects)["tas-descheduler"]
    assert opened_ports(policy, controller) == {8080}
    assert opened_ports(policy, descheduler) == {9103}


@pytest.mark.parametrize("where", ["cluster", *PROFILES])
@pytest.mark.parametrize("name", COMPONENTS)
def test_each_component_is_isolated_by_one_policy_opening_only_its_own_port(
    where: str, name: str
) -> None:
    directory = CLUSTER if where == "cluster" else ROOT / "deploy" / "profiles" / where
    objects = rendered(directory)
    deployment = _deployments(objects)[name]
    (policy,) = _selecting(objects, deployment)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert opened_ports(policy, deployment) == set(_container_ports(deployment).values())


@pytest.mark.parametrize("name", ["tas-policy-controller", "tas-descheduler"])
def test_without_a_profile_metrics_and_probes_admit_nobody(name: str) -> None:
    objects = rendered(CLUSTER)
    (policy,) = _selecting(objects, _deployments(objects)[name])
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    namespace = peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
    assert namespace == "set-by-the-install-profile"  # no such namespace: fails closed


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", ["tas-policy-controller", "tas-descheduler"])
def test_in_a_profile_metrics_and_probes_admit_one_peer_in_a_namespace_named(
    profile: str, name: str
) -> None:
    objects = rendered(ROOT / "deploy" / "profiles" / profile)
    (policy,) = _selecting(objects, _deployments(objects)[name])
    (rule,) = policy["spec"]["ingress"]
    (peer,) = rule["from"]
    assert set(peer["namespaceSelector"]) == {"matchLabels"}
    (namespace,) = peer["namespaceSelector"]["matchLabels"].values()
    assert namespace != "set-by-the-install-profile"
    assert peer["podSelector"]["matchLabels"]  # pods, not the whole namespace


def test_the_extenders_port_admits_any_source() -> None:
    objects = rendered(CLUSTER)
    (policy,) = _selecting(objects, _deployments(objects)["tas-extender"])
    (rule,) = policy["spec"]["ingress"]
    assert "from" not in rule  # kube-scheduler is on the host network; mTLS guards the port
