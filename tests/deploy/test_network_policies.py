"""The NetworkPolicies we ship, read as a network plugin would apply them (Kubernetes'
NetworkPolicy semantics: a pod selected by any policy admits what some policy allows; within one
`from` entry a namespaceSelector and a podSelector must both match; a podSelector alone means the
policy's own namespace; a named port opens only on a pod that names it).

Who may reach the components: the policies of deploy/cluster, applied to the rendered
Deployments, in deploy/cluster and in each install profile.

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

The components reach Prometheus, and nothing more does: kube-prometheus ships the NetworkPolicy
`prometheus-k8s`, which admits to Prometheus's port 9090 only its own Prometheus,
prometheus-adapter and Grafana pods; the kube-prometheus profile adds
`prometheus-k8s-tas-components`.

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
from tests.k8s_emulator.patches import selector_matches

Labels = dict[str, str]

COMPONENTS = ("tas-extender", "tas-policy-controller", "tas-descheduler")
NAMESPACE = "telemetry-aware-scheduling"
CLUSTER = DEPLOY / "cluster"
PROFILES = ["standalone", "kube-prometheus", "kube-prometheus-stack"]


# --- NetworkPolicy semantics ----------------------------------------------------------------------


def _peer_matches(peer: Document, policy_namespace: str, pod: Pod) -> bool:
    if "ipBlock" in peer:
        return False  # pod traffic here, by pod and namespace only
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], pod.namespace_labels):
            return False
    elif pod.namespace != policy_namespace:
        return False
    return selector_matches(peer.get("podSelector", {}), pod.labels)


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
        and selector_matches(p["spec"]["podSelector"], target)
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


# --- the components' own policies -----------------------------------------------------------------


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
        and selector_matches(policy["spec"]["podSelector"], labels)
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
    directory = CLUSTER if where == "cluster" else DEPLOY / "profiles" / where
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
    objects = rendered(DEPLOY / "profiles" / profile)
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


# --- kube-prometheus's Prometheus and ours --------------------------------------------------------

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
    assert selector_matches(policy["spec"]["podSelector"], KUBE_PROMETHEUS_PROMETHEUS)
    assert policy["spec"]["policyTypes"] == ["Ingress"]  # egress stays kube-prometheus's


def test_ours_selects_no_prometheus_that_is_not_kube_prometheus_s() -> None:
    other = {
        k: v for k, v in KUBE_PROMETHEUS_PROMETHEUS.items() if k != "app.kubernetes.io/part-of"
    }
    assert not selector_matches(ours()["spec"]["podSelector"], other)
    assert not selector_matches(
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
