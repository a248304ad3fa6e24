"""kube-prometheus's NetworkPolicy and ours: the components reach Prometheus, and nothing more does.

kube-prometheus ships the NetworkPolicy `prometheus-k8s`, which admits to Prometheus's port 9090
only its own Prometheus, prometheus-adapter and Grafana pods; deploy/monitoring adds
`prometheus-k8s-tas-components`. The policies are evaluated here as a network plugin does
(Kubernetes' NetworkPolicy semantics: a pod selected by any policy admits what some policy
allows; within one `from` entry a namespaceSelector and a podSelector must both match; a
podSelector alone means the policy's own namespace).

Covered:
- ours selects exactly the pods kube-prometheus's policy selects (kube-prometheus's Prometheus,
  by the labels of its podMetadata), and no pod without `app.kubernetes.io/part-of:
  kube-prometheus` (kube-prometheus-stack's, for one);
- with kube-prometheus's policy alone, the three components are refused (the problem), and with
  ours beside it each of them is admitted on 9090, by the labels of its rendered Deployment and
  its namespace's, while kube-prometheus's own clients still are;
- refused: a component's name in another namespace, another pod in the components' namespace,
  another port; admitted: deploy/metrics-pipeline/prometheus-adapter's pods in `monitoring`.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, find, rendered

Labels = dict[str, str]

#: The pod labels of kube-prometheus's Prometheus: the podMetadata of the Prometheus `k8s`
#: (prometheus-operator/kube-prometheus, manifests/prometheus-prometheus.yaml at 4d719f1, with
#: Prometheus 3.13.2) and the `prometheus` label the operator adds to its pods.
KUBE_PROMETHEUS_PROMETHEUS: Labels = {
    "app.kubernetes.io/component": "prometheus",
    "app.kubernetes.io/instance": "k8s",
    "app.kubernetes.io/name": "prometheus",
    "app.kubernetes.io/part-of": "kube-prometheus",
    "app.kubernetes.io/version": "3.13.2",
    "prometheus": "k8s",
}
#: kube-prometheus's own NetworkPolicy for Prometheus, as it ships it (manifests/
#: prometheus-networkPolicy.yaml at 4d719f1).
KUBE_PROMETHEUS_POLICY: Document = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "prometheus-k8s", "namespace": "monitoring"},
    "spec": {
        "egress": [{}],
        "ingress": [
            {
                "from": [
                    {"podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}
                ],
                "ports": [{"port": 9090, "protocol": "TCP"}, {"port": 8080, "protocol": "TCP"}],
            },
            {
                "from": [
                    {
                        "podSelector": {
                            "matchLabels": {"app.kubernetes.io/name": "prometheus-adapter"}
                        }
                    }
                ],
                "ports": [{"port": 9090, "protocol": "TCP"}],
            },
            {
                "from": [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "grafana"}}}],
                "ports": [{"port": 9090, "protocol": "TCP"}],
            },
        ],
        "podSelector": {
            "matchLabels": {
                "app.kubernetes.io/component": "prometheus",
                "app.kubernetes.io/instance": "k8s",
                "app.kubernetes.io/name": "prometheus",
                "app.kubernetes.io/part-of": "kube-prometheus",
            }
        },
        "policyTypes": ["Egress", "Ingress"],
    },
}
COMPONENTS = ("tas-extender", "tas-policy-controller", "tas-descheduler")
NAMESPACE = "telemetry-aware-scheduling"


# --- NetworkPolicy semantics ------------------------------------------------------------------


def selects(selector: Document, labels: Labels) -> bool:
    """A label selector (matchLabels and matchExpressions) matches these labels."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator = expression["key"], expression["operator"]
        values = expression.get("values", [])
        held = labels.get(key)
        matched = {
            "In": held in values,
            "NotIn": held not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not matched:
            return False
    return True


def _peer_matches(peer: Document, policy_namespace: str, pod: Pod) -> bool:
    if "ipBlock" in peer:
        return False  # pod traffic here, by pod and namespace only
    if "namespaceSelector" in peer:
        if not selects(peer["namespaceSelector"], pod.namespace_labels):
            return False
    elif pod.namespace != policy_namespace:
        return False
    return selects(peer.get("podSelector", {}), pod.labels)


def _port_matches(rule: Document, port: int, protocol: str) -> bool:
    ports = rule.get("ports")
    return not ports or any(
        p.get("port") == port and p.get("protocol", "TCP") == protocol for p in ports
    )


class Pod:
    def __init__(self, namespace: str, labels: Labels, namespace_labels: Labels | None = None):
        self.namespace, self.labels = namespace, labels
        self.namespace_labels = {
            "kubernetes.io/metadata.name": namespace,
            **(namespace_labels or {}),
        }


def admitted(policies: list[Document], target: Labels, client: Pod, port: int) -> bool:
    """Whether `client` may open `port`/TCP on a pod of `monitoring` labelled `target`."""
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == "monitoring"
        and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        and selects(p["spec"]["podSelector"], target)
    ]
    if not selecting:
        return True  # a pod no policy selects is not isolated
    return any(
        _port_matches(rule, port, "TCP")
        and (
            "from" not in rule
            or any(_peer_matches(peer, p["metadata"]["namespace"], client) for peer in rule["from"])
        )
        for p in selecting
        for rule in p["spec"].get("ingress", [])
    )


# --- the shipped policy -----------------------------------------------------------------------


def ours() -> Document:
    profile = DEPLOY / "profiles" / "kube-prometheus"
    return find(rendered(profile), "NetworkPolicy", "prometheus-k8s-tas-components")


def component(name: str) -> Pod:
    cluster = rendered(DEPLOY / "cluster")
    deployment = find(cluster, "Deployment", name)
    namespace = find(cluster, "Namespace", deployment["metadata"]["namespace"])
    return Pod(
        namespace["metadata"]["name"],
        deployment["spec"]["template"]["metadata"]["labels"],
        namespace["metadata"].get("labels"),
    )


def test_ours_selects_the_pods_kube_prometheus_s_own_policy_selects() -> None:
    policy = ours()
    assert policy["metadata"]["namespace"] == "monitoring"
    assert policy["spec"]["podSelector"] == KUBE_PROMETHEUS_POLICY["spec"]["podSelector"]
    assert selects(policy["spec"]["podSelector"], KUBE_PROMETHEUS_PROMETHEUS)
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress stays kube-prometheus's


def test_ours_selects_no_prometheus_that_is_not_kube_prometheus_s() -> None:
    other = {
        k: v for k, v in KUBE_PROMETHEUS_PROMETHEUS.items() if k != "app.kubernetes.io/part-of"
    }
    assert not selects(ours()["spec"]["podSelector"], other)
    assert not selects(
        ours()["spec"]["podSelector"],
        {**other, "app.kubernetes.io/part-of": "kube-prometheus-stack"},
    )


@pytest.mark.parametrize("name", COMPONENTS)
def test_kube_prometheus_s_policy_alone_shuts_the_component_out(name: str) -> None:
    assert not admitted([KUBE_PROMETHEUS_POLICY], KUBE_PROMETHEUS_PROMETHEUS, component(name), 9090)


@pytest.mark.parametrize("name", COMPONENTS)
def test_with_ours_the_component_reaches_prometheus_on_9090(name: str) -> None:
    both = [KUBE_PROMETHEUS_POLICY, ours()]
    assert admitted(both, KUBE_PROMETHEUS_PROMETHEUS, component(name), 9090)
    assert not admitted(both, KUBE_PROMETHEUS_PROMETHEUS, component(name), 8080)


@pytest.mark.parametrize(
    ("client", "allowed"),
    [
        pytest.param(
            Pod("monitoring", {"app.kubernetes.io/name": "grafana"}), True, id="kube-prometheus's"
        ),
        pytest.param(
            Pod("monitoring", {"app.kubernetes.io/name": "tas-prometheus-adapter"}),
            True,
            id="our prometheus-adapter",
        ),
        pytest.param(
            Pod("default", {"app.kubernetes.io/name": "tas-extender"}),
            False,
            id="a component's name elsewhere",
        ),
        pytest.param(
            Pod(NAMESPACE, {"app.kubernetes.io/name": "something-else"}),
            False,
            id="another pod of the components' namespace",
        ),
        pytest.param(
            Pod("default", {"app.kubernetes.io/name": "tas-prometheus-adapter"}),
            False,
            id="the adapter's name outside monitoring",
        ),
    ],
)
def test_ours_admits_nothing_beyond_the_components_and_the_adapter(
    client: Pod, allowed: bool
) -> None:
    both = [KUBE_PROMETHEUS_POLICY, ours()]
    assert admitted(both, KUBE_PROMETHEUS_PROMETHEUS, client, 9090) is allowed


def test_the_evaluation_admits_everything_where_no_policy_selects_the_pod() -> None:
    unrelated: Any = {"app.kubernetes.io/name": "alertmanager"}
    assert admitted([KUBE_PROMETHEUS_POLICY, ours()], unrelated, component("tas-extender"), 9093)
