"""Each install profile merged with the cluster it is made for: it leaves that cluster's objects
intact and every reference of ours finds what it means.

The clusters: an empty one for deploy/profiles/standalone; kube-prometheus's own objects
(tests/deploy/fixtures/stacks/kube-prometheus.yaml, from its released manifests) for
deploy/profiles/kube-prometheus; kube-prometheus-stack's (fixtures/stacks/kube-prometheus-
stack.yaml, from the chart's rendered objects) for deploy/profiles/kube-prometheus-stack.

Covered, per profile, rendering it beside its cluster's objects:
- no object of ours has the kind, namespace and name of one of theirs (nothing of theirs is
  replaced or relabelled, nothing of theirs deleted with ours), ours ships no Namespace but the
  two it owns, and every object of ours goes into a namespace that exists; and what the
  guide's uninstall steps delete (each `-k` rendered, each `-f` file, each Secret by name)
  holds no object of either stack and no Namespace but ours, and every object the guide's
  steps create (each profile, each optional part) is deleted by name or with its namespace;
- standalone needs no Prometheus Operator (no monitoring.coreos.com object), and the stacks'
  Prometheus selects every ServiceMonitor and PrometheusRule of ours (label and namespace
  selectors) and may discover the targets in their namespaces (a Role or a ClusterRole bound
  to its ServiceAccount);
- every selector of ours matches: each workload's its own pods, each Service and
  PodDisruptionBudget a workload's pods in its namespace (a Service's target ports named by
  them), each ServiceMonitor one of our Services on a port it names, each NetworkPolicy pods of
  its namespace;
- the Prometheus URL of the profile's ConfigMap names a Service of the merged cluster on a port
  it serves, whose pods are the peer our NetworkPolicy admits to the controller and the
  descheduler, and which admit the three components on the Service's target port (their own
  NetworkPolicies and ours evaluated together, as a network plugin does);
- every Secret a pod or a ServiceMonitor of ours reads is created in that namespace by the
  profile's install steps in docs/deploy.md, and every ConfigMap a pod reads is in the merged
  cluster;
- every RoleBinding subject of ours is a ServiceAccount of theirs or ours;
- every port a NetworkPolicy of ours admits is a port a pod it selects serves (named ports
  resolved per pod), and every pod it selects serves one of them;
- deploy/descheduler/low-node-utilization-prometheus.yaml queries kube-prometheus's Prometheus
  as it serves (http, the Service's port), which the kube-prometheus profile admits the
  descheduler to.
"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.guide import (
    GUIDE,
    OWNED_NAMESPACES,
    install_steps,
    shell_lines,
    uninstall_deletes,
)
from tests.deploy.pipeline import DEPLOY, ROOT, rendered
from tests.deploy.shipped import WORKLOADS, secrets_read
from tests.k8s_emulator.patches import selector_matches

FIXTURES = Path(__file__).parent / "fixtures" / "stacks"
#: Each profile, and the objects of the cluster it is made for (None: an empty cluster).
STACKS: dict[str, str | None] = {
    "standalone": None,
    "kube-prometheus": "kube-prometheus.yaml",
    "kube-prometheus-stack": "kube-prometheus-stack.yaml",
}
PROFILES = list(STACKS)
#: Namespaces every cluster has.
BUILT_IN_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
COMPONENTS = ("tas-extender", "tas-policy-controller", "tas-descheduler")

Document = dict[str, Any]


def theirs(profile: str) -> list[Document]:
    fixture = STACKS[profile]
    if fixture is None:
        return []
    text = (FIXTURES / fixture).read_text(encoding="utf-8")
    return [d for d in yaml.safe_load_all(text) if d]


def ours(profile: str) -> list[Document]:
    return rendered(DEPLOY / "profiles" / profile)


def key(obj: Document) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def of_kind(objects: list[Document], kind: str) -> list[Document]:
    return [o for o in objects if o["kind"] == kind]


def labels(obj: Document) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def namespace_labels(name: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name}


class Pod:
    """A pod of the merged cluster: a fixture's Pod, or one a workload of ours would create."""

    def __init__(self, namespace: str, labels: dict[str, str], spec: Document, owner: str):
        self.namespace, self.labels, self.owner = namespace, labels, owner
        containers = [*spec.get("initContainers", []), *spec["containers"]]
        self.ports = {
            p.get("name", str(p["containerPort"])): int(p["containerPort"])
            for c in containers
            for p in c.get("ports", [])
        }
        self.spec = spec

    def serves(self, port: int | str) -> int | None:
        """The container port `port` (a number, or a name) reaches on this pod, if any."""
        if isinstance(port, str):
            return self.ports.get(port)
        return port if port in self.ports.values() else None


def pods(objects: list[Document]) -> list[Pod]:
    found = []
    for obj in objects:
        namespace = obj["metadata"].get("namespace", "")
        if obj["kind"] in WORKLOADS:
            template = obj["spec"]["template"]
            found.append(Pod(namespace, labels(template), template["spec"], key(obj)[2]))
        elif obj["kind"] == "Pod":
            found.append(Pod(namespace, labels(obj), obj["spec"], key(obj)[2]))
    return found


def namespaces(objects: list[Document]) -> set[str]:
    return {o["metadata"]["name"] for o in of_kind(objects, "Namespace")} | BUILT_IN_NAMESPACES


def test_the_selector_matching_is_kubernetes_own() -> None:
    web = {"app": "web", "tier": "front"}
    assert selector_matches({}, web)
    assert not selector_matches(None, web)
    assert selector_matches({"matchLabels": {"app": "web"}}, web)
    assert not selector_matches({"matchLabels": {"app": "db"}}, web)
    assert selector_matches(
        {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, web
    )
    assert not selector_matches({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, web)
    assert not selector_matches(
        {"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, web
    )
    assert not selector_matches(
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, web
    )


def test_a_named_port_is_served_only_by_a_pod_that_names_it() -> None:
    pod = Pod("ns", {}, {"containers": [{"ports": [{"name": "web", "containerPort": 9090}]}]}, "p")
    assert pod.serves("web") == 9090
    assert pod.serves(9090) == 9090
    assert pod.serves("metrics") is None
    assert pod.serves(8080) is None


# --- nothing of theirs changes ----------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_nothing_of_theirs_is_replaced_and_no_namespace_but_ours_is_shipped(profile: str) -> None:
    assert {key(o) for o in ours(profile)} & {key(o) for o in theirs(profile)} == set()
    shipped = {o["metadata"]["name"] for o in of_kind(ours(profile), "Namespace")}
    assert shipped == OWNED_NAMESPACES
    assert "monitoring" not in shipped


def uninstalled() -> list[tuple[str, str, str]]:
    """Every object the guide's uninstall steps delete: what each `kubectl delete -k` renders,
    each `-f` file holds, and each Secret deleted by name."""
    found: list[tuple[str, str, str]] = []
    for words in uninstall_deletes():
        flag = "-k" if "-k" in words else "-f"
        target = ROOT / words[words.index(flag) + 1]
        objects = (
            rendered(target)
            if flag == "-k"
            else [d for d in yaml.safe_load_all(target.read_text(encoding="utf-8")) if d]
        )
        found += [key(o) for o in objects]
    for line in shell_lines(GUIDE):
        words = shlex.split(line)
        if words[:2] == ["kubectl", "-n"] and words[3] == "delete" and words[-2] == "secret":
            found.append(("Secret", words[2], words[-1]))
    # The APIService, deleted only while it points at this adapter (else it is not ours).
    uninstall = GUIDE.read_text(encoding="utf-8").split("## 11. Uninstall", 1)[1]
    for guarded in re.findall(r"\] &&\s*kubectl delete -f (\S+)", uninstall):
        documents = yaml.safe_load_all((ROOT / guarded).read_text(encoding="utf-8"))
        found += [key(d) for d in documents if d]
    return found


def created_by_the_guide() -> list[tuple[str, str, str]]:
    """Every object the guide's steps create from this repository: what each `kubectl apply`
    or `create` renders (`-k`) or reads (`-f`), in its shell blocks and in its prose (an
    optional part is named there), the CRD left out (removed only on purpose)."""
    commands = [shlex.split(line) for line in shell_lines(GUIDE)]
    text = GUIDE.read_text(encoding="utf-8")
    commands += [
        ["kubectl", "apply", flag, target]
        for flag, target in re.findall(r"kubectl apply (-[kf]) (deploy/[\w./-]+)", text)
    ]
    found: list[tuple[str, str, str]] = []
    for words in commands:
        if words[:2] not in (["kubectl", "apply"], ["kubectl", "create"]):
            continue
        for flag, target in itertools.pairwise(words):
            if flag == "-k" and not target.startswith("crds"):
                found += [key(o) for o in rendered(ROOT / target)]
            elif flag == "-f" and target.startswith("deploy/"):
                documents = yaml.safe_load_all((ROOT / target).read_text(encoding="utf-8"))
                found += [key(d) for d in documents if d]
    return found


def test_the_uninstall_deletes_everything_the_guide_created() -> None:
    """Pasting the uninstall steps leaves nothing of an install behind, whichever profile and
    optional part (the demo, the dashboards, the adapter, the descheduler's taints, TAS's way)
    was applied: each object is deleted by name, or with its namespace."""
    deleted = set(uninstalled())
    gone = {name for kind, _, name in deleted if kind == "Namespace"}
    left = {k for k in created_by_the_guide() if k not in deleted and k[1] not in gone}
    assert left == set()


def test_the_uninstall_deletes_nothing_of_either_stack() -> None:
    """Whatever profile was installed, on whichever stack: no object of kube-prometheus's or
    kube-prometheus-stack's (their namespace, Prometheus, Services, APIService, roles) is
    among what the uninstall steps delete."""
    deleted = set(uninstalled())
    assert ("Secret", "monitoring", "tas-prometheus-adapter-tls") in deleted
    assert ("Namespace", "", "telemetry-aware-scheduling") in deleted
    for profile in PROFILES:
        assert deleted & {key(o) for o in theirs(profile)} == set(), profile
    # Ours, and the demo's (docs/deploy.md, section 6).
    namespaces = {name for kind, _, name in deleted if kind == "Namespace"}
    assert namespaces == OWNED_NAMESPACES | {"health-metric-demo"}


@pytest.mark.parametrize("profile", PROFILES)
def test_every_object_of_ours_goes_into_a_namespace_that_exists(profile: str) -> None:
    existing = namespaces(ours(profile) + theirs(profile))
    for obj in ours(profile):
        namespace = obj["metadata"].get("namespace")
        assert namespace is None or namespace in existing, key(obj)


def test_standalone_needs_no_prometheus_operator() -> None:
    operator = [o for o in ours("standalone") if o["apiVersion"].startswith("monitoring.coreos")]
    assert operator == []


# --- their Prometheus finds ours --------------------------------------------------------------


@pytest.mark.parametrize("profile", ["kube-prometheus", "kube-prometheus-stack"])
@pytest.mark.parametrize(
    ("kind", "selector", "namespaces_selector"),
    [
        ("ServiceMonitor", "serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
        ("PrometheusRule", "ruleSelector", "ruleNamespaceSelector"),
    ],
)
def test_their_prometheus_selects_every_monitor_and_rule_of_ours(
    profile: str, kind: str, selector: str, namespaces_selector: str
) -> None:
    (prometheus,) = of_kind(theirs(profile), "Prometheus")
    spec = prometheus["spec"]
    found = of_kind(ours(profile), kind)
    assert found
    for obj in found:
        namespace = obj["metadata"]["namespace"]
        in_namespace = namespace_labels(namespace)
        assert selector_matches(spec.get(namespaces_selector), in_namespace), key(obj)
        assert selector_matches(spec.get(selector), labels(obj)), key(obj)


def _grants_discovery(role: Document) -> bool:
    granted = {
        (resource, verb)
        for rule in role["rules"]
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }
    return {("pods", "list"), ("pods", "watch")} <= granted


@pytest.mark.parametrize("profile", ["kube-prometheus", "kube-prometheus-stack"])
def test_their_prometheus_may_discover_the_targets_of_every_monitor_of_ours(profile: str) -> None:
    merged = ours(profile) + theirs(profile)
    (prometheus,) = of_kind(theirs(profile), "Prometheus")
    account = (prometheus["metadata"]["namespace"], prometheus["spec"]["serviceAccountName"])
    roles = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
             for o in merged if o["kind"] in ("Role", "ClusterRole")}  # fmt: skip
    allowed: set[str] = set()  # namespaces; "*" for all
    for binding in of_kind(merged, "RoleBinding") + of_kind(merged, "ClusterRoleBinding"):
        if account not in {(s.get("namespace"), s["name"]) for s in binding["subjects"]}:
            continue
        ref = binding["roleRef"]
        namespace = binding["metadata"].get("namespace", "")
        role = roles.get((ref["kind"], namespace if ref["kind"] == "Role" else "", ref["name"]))
        if role is not None and _grants_discovery(role):
            allowed.add(namespace or "*")
    for monitor in of_kind(ours(profile), "ServiceMonitor"):
        namespace = monitor["metadata"]["namespace"]
        assert "*" in allowed or namespace in allowed, key(monitor)


# --- every selector of ours matches -----------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_every_workload_service_and_budget_of_ours_selects_pods_that_serve_it(
    profile: str,
) -> None:
    merged = ours(profile) + theirs(profile)
    for workload in [o for o in ours(profile) if o["kind"] in WORKLOADS]:
        assert selector_matches(workload["spec"]["selector"], labels(workload["spec"]["template"]))
    for obj in of_kind(ours(profile), "Service") + of_kind(ours(profile), "PodDisruptionBudget"):
        namespace = obj["metadata"]["namespace"]
        selector = obj["spec"]["selector"]
        selector = selector if obj["kind"] == "PodDisruptionBudget" else {"matchLabels": selector}
        matched = [
            p
            for p in pods(merged)
            if p.namespace == namespace and selector_matches(selector, p.labels)
        ]
        assert matched, key(obj)
        for port in obj["spec"].get("ports", []):
            target = port.get("targetPort", port["port"])
            assert all(p.serves(target) for p in matched), (key(obj), target)


@pytest.mark.parametrize("profile", ["kube-prometheus", "kube-prometheus-stack"])
def test_every_service_monitor_of_ours_selects_a_service_of_ours_on_a_named_port(
    profile: str,
) -> None:
    services = of_kind(ours(profile), "Service")
    for monitor in of_kind(ours(profile), "ServiceMonitor"):
        namespace = monitor["metadata"]["namespace"]
        matched = [
            s
            for s in services
            if s["metadata"]["namespace"] == namespace
            and selector_matches(monitor["spec"]["selector"], labels(s))
        ]
        assert matched, key(monitor)
        ports = {p.get("name") for s in matched for p in s["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in ports, (key(monitor), endpoint["port"])


@pytest.mark.parametrize("profile", PROFILES)
def test_every_role_binding_of_ours_names_an_account_that_exists(profile: str) -> None:
    accounts = {key(o)[1:] for o in [*theirs(profile), *ours(profile)]
                if o["kind"] == "ServiceAccount"}  # fmt: skip
    for binding in of_kind(ours(profile), "RoleBinding") + of_kind(
        ours(profile), "ClusterRoleBinding"
    ):
        for subject in binding["subjects"]:
            assert (subject["namespace"], subject["name"]) in accounts, key(binding)


# --- the Prometheus the profile names ---------------------------------------------------------


def _prometheus_service(profile: str) -> tuple[Document, int]:
    """The Service and port the URL of the profile's ConfigMap tas-prometheus names."""
    (config,) = [o for o in of_kind(ours(profile), "ConfigMap")
                 if o["metadata"]["name"] == "tas-prometheus"]  # fmt: skip
    url: str = config["data"]["url"]
    scheme, _, rest = url.partition("://")
    assert scheme == "http"
    host, _, port = rest.partition(":")
    name, namespace, svc = host.split(".")
    assert svc == "svc"
    (service,) = [
        s
        for s in of_kind(ours(profile) + theirs(profile), "Service")
        if (s["metadata"]["namespace"], s["metadata"]["name"]) == (namespace, name)
    ]
    return service, int(port.rstrip("/"))


def _prometheus_pods(profile: str) -> tuple[list[Pod], int | str]:
    service, port = _prometheus_service(profile)
    (served,) = [p for p in service["spec"]["ports"] if p["port"] == port]
    matched = [
        p
        for p in pods(ours(profile) + theirs(profile))
        if p.namespace == service["metadata"]["namespace"]
        and selector_matches({"matchLabels": service["spec"]["selector"]}, p.labels)
    ]
    return matched, served.get("targetPort", port)


@pytest.mark.parametrize("profile", PROFILES)
def test_the_url_names_a_service_of_the_cluster_whose_pods_serve_it(profile: str) -> None:
    matched, target = _prometheus_pods(profile)
    assert matched
    assert all(p.serves(target) for p in matched)


def _peer_matches(peer: Document, policy_namespace: str, pod: Pod) -> bool:
    if "namespaceSelector" in peer:
        if not selector_matches(peer["namespaceSelector"], namespace_labels(pod.namespace)):
            return False
    elif pod.namespace != policy_namespace:
        return False
    return "podSelector" not in peer or selector_matches(peer["podSelector"], pod.labels)


def admitted(policies: list[Document], target: Pod, client: Pod, port: int | str) -> bool:
    """Whether `client` may open `port`/TCP on `target`, as a network plugin decides."""
    number = target.serves(port)
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == target.namespace
        and "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
        and selector_matches(p["spec"]["podSelector"], target.labels)
    ]
    if not selecting:
        return True  # a pod no policy selects is not isolated
    return any(
        any(target.serves(p["port"]) == number for p in rule.get("ports", [{"port": number}]))
        and (
            "from" not in rule
            or any(
                _peer_matches(peer, policy["metadata"]["namespace"], client)
                for peer in rule["from"]
            )
        )
        for policy in selecting
        for rule in policy["spec"].get("ingress", [])
    )


@pytest.mark.parametrize("profile", PROFILES)
def test_the_components_reach_the_prometheus_the_profile_names(profile: str) -> None:
    merged = ours(profile) + theirs(profile)
    policies = of_kind(merged, "NetworkPolicy")
    prometheus, target = _prometheus_pods(profile)
    components = [p for p in pods(ours(profile)) if p.owner in COMPONENTS]
    assert len(components) == len(COMPONENTS)
    for pod in prometheus:
        for component in components:
            assert admitted(policies, pod, component, target), (pod.owner, component.owner)


@pytest.mark.parametrize("profile", PROFILES)
def test_only_the_prometheus_the_profile_names_scrapes_the_controller_and_descheduler(
    profile: str,
) -> None:
    policies = of_kind(ours(profile) + theirs(profile), "NetworkPolicy")
    prometheus = {(p.namespace, p.owner) for p in _prometheus_pods(profile)[0]}
    everyone = pods(ours(profile) + theirs(profile))
    for component in [p for p in pods(ours(profile)) if p.owner in COMPONENTS[1:]]:
        (port,) = component.ports.values()
        for pod in everyone:
            expected = (pod.namespace, pod.owner) in prometheus
            assert admitted(policies, component, pod, port) == expected, pod.owner


# --- what our pods read exists ----------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_every_secret_of_ours_is_created_by_the_profile_s_steps_where_it_is_read(
    profile: str,
) -> None:
    created: set[tuple[str, str]] = set()
    for step in install_steps(profile):
        words = step.split()
        if words[:2] == ["kubectl", "-n"] and words[3:5] == ["create", "secret"]:
            created.add((words[2], words[6]))
    read = secrets_read(ours(profile))
    assert {name for _, name, _ in read} == {"tas-extender-tls", "tas-extender-scrape-tls"}
    missing = {(ns, name, who) for ns, name, who in read if (ns, name) not in created}
    assert not missing, f"read but never created there: {sorted(missing)}"


@pytest.mark.parametrize("profile", PROFILES)
def test_every_config_map_a_pod_of_ours_reads_is_in_its_namespace(profile: str) -> None:
    config_maps = {key(o)[1:] for o in of_kind(ours(profile) + theirs(profile), "ConfigMap")}
    for pod in pods(ours(profile)):
        read = [v["configMap"]["name"] for v in pod.spec.get("volumes", []) if "configMap" in v]
        for container in pod.spec["containers"]:
            for env in container.get("env", []):
                if "configMapKeyRef" in env.get("valueFrom", {}):
                    read.append(env["valueFrom"]["configMapKeyRef"]["name"])
        for name in read:
            assert (pod.namespace, name) in config_maps, (pod.owner, name)


# --- every port a policy of ours admits is served ---------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_every_port_a_network_policy_of_ours_admits_is_a_port_served(profile: str) -> None:
    everyone = pods(ours(profile) + theirs(profile))
    for policy in of_kind(ours(profile), "NetworkPolicy"):
        namespace = policy["metadata"]["namespace"]
        selected = [
            p
            for p in everyone
            if p.namespace == namespace
            and selector_matches(policy["spec"]["podSelector"], p.labels)
        ]
        assert selected, key(policy)
        for rule in policy["spec"]["ingress"]:
            ports = [p["port"] for p in rule["ports"]]
            for port in ports:
                assert any(pod.serves(port) for pod in selected), (key(policy), port)
            for pod in selected:
                assert any(pod.serves(port) for port in ports), (key(policy), pod.owner)


# --- the descheduler's LowNodeUtilization example ---------------------------------------------


def test_the_low_node_utilization_example_queries_what_kube_prometheus_serves() -> None:
    """deploy/descheduler/low-node-utilization-prometheus.yaml names kube-prometheus's
    Prometheus as it serves (plain HTTP, on the port its Service and NetworkPolicy open), and
    the kube-prometheus profile lets the descheduler reach it there."""
    example = DEPLOY / "descheduler" / "low-node-utilization-prometheus.yaml"
    (provider,) = yaml.safe_load(example.read_text(encoding="utf-8"))["metricsProviders"]
    url: str = provider["prometheus"]["url"]
    scheme, _, rest = url.partition("://")
    host, _, port = rest.partition(":")
    name, namespace, _ = host.split(".")
    assert scheme == "http"  # kube-prometheus serves no TLS on prometheus-k8s
    merged = ours("kube-prometheus") + theirs("kube-prometheus")
    (service,) = [
        s
        for s in of_kind(theirs("kube-prometheus"), "Service")
        if (s["metadata"]["namespace"], s["metadata"]["name"]) == (namespace, name)
    ]
    (served,) = [p for p in service["spec"]["ports"] if p["port"] == int(port)]
    prometheus = [
        p
        for p in pods(merged)
        if p.namespace == namespace
        and selector_matches({"matchLabels": service["spec"]["selector"]}, p.labels)
    ]
    (descheduler,) = [p for p in pods(ours("kube-prometheus")) if p.owner == "tas-descheduler"]
    assert prometheus
    for pod in prometheus:
        assert admitted(of_kind(merged, "NetworkPolicy"), pod, descheduler, served["targetPort"])
