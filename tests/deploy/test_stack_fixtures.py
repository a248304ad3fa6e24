"""deploy/monitoring merged with kube-prometheus's own objects (tests/deploy/fixtures/stacks/
kube-prometheus.yaml, taken from its released manifests): it leaves the stack intact and every
selector of ours finds what it means.

Covered, rendering deploy/monitoring beside the fixture:
- no object of ours has the kind, namespace and name of one of theirs (nothing of theirs is
  replaced), and ours ships no Namespace (theirs is neither relabelled nor deleted with ours);
- their Prometheus selects every ServiceMonitor and PrometheusRule of ours (label and namespace
  selectors);
- every ServiceMonitor of ours selects one of our Services in its namespace, on a port that
  Service names;
- every RoleBinding subject of ours is a ServiceAccount of theirs or ours;
- our NetworkPolicy for their Prometheus selects their Prometheus's pods, and admits a port
  their Prometheus Service serves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.pipeline import DEPLOY, rendered

FIXTURES = Path(__file__).parent / "fixtures" / "stacks"

Document = dict[str, Any]


def theirs() -> list[Document]:
    text = (FIXTURES / "kube-prometheus.yaml").read_text(encoding="utf-8")
    return [d for d in yaml.safe_load_all(text) if d]


def ours() -> list[Document]:
    return rendered(DEPLOY / "monitoring")


def key(obj: Document) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def selects(selector: Document | None, labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (None: nothing; {}: everything) on `labels`."""
    if selector is None:
        return False
    for name, value in (selector.get("matchLabels") or {}).items():
        if labels.get(name) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        name, operator = expression["key"], expression["operator"]
        values = expression.get("values") or []
        present = name in labels
        if operator == "In" and not (present and labels[name] in values):
            return False
        if operator == "NotIn" and present and labels[name] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True


def of_kind(objects: list[Document], kind: str) -> list[Document]:
    return [o for o in objects if o["kind"] == kind]


def labels(obj: Document) -> dict[str, str]:
    return dict(obj["metadata"].get("labels") or {})


def namespace_labels(name: str) -> dict[str, str]:
    return {"kubernetes.io/metadata.name": name}


def test_the_selector_matching_is_kubernetes_own() -> None:
    web = {"app": "web", "tier": "front"}
    assert selects({}, web)
    assert not selects(None, web)
    assert selects({"matchLabels": {"app": "web"}}, web)
    assert not selects({"matchLabels": {"app": "db"}}, web)
    assert selects({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}, web)
    assert not selects({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, web)
    assert not selects({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, web)
    assert not selects(
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}, web
    )


def test_nothing_of_theirs_is_replaced_and_no_namespace_is_ours() -> None:
    assert {key(o) for o in ours()} & {key(o) for o in theirs()} == set()
    assert of_kind(ours(), "Namespace") == []


@pytest.mark.parametrize(
    ("kind", "selector", "namespaces"),
    [
        ("ServiceMonitor", "serviceMonitorSelector", "serviceMonitorNamespaceSelector"),
        ("PrometheusRule", "ruleSelector", "ruleNamespaceSelector"),
    ],
)
def test_their_prometheus_selects_every_monitor_and_rule_of_ours(
    kind: str, selector: str, namespaces: str
) -> None:
    (prometheus,) = of_kind(theirs(), "Prometheus")
    spec = prometheus["spec"]
    found = of_kind(ours(), kind)
    assert found
    for obj in found:
        namespace = obj["metadata"]["namespace"]
        assert selects(spec.get(namespaces), namespace_labels(namespace)), key(obj)
        assert selects(spec.get(selector), labels(obj)), key(obj)


def test_every_service_monitor_of_ours_selects_a_service_of_ours_on_a_named_port() -> None:
    services = of_kind(ours(), "Service") + of_kind(rendered(DEPLOY / "cluster"), "Service")
    for monitor in of_kind(ours(), "ServiceMonitor"):
        namespace = monitor["metadata"]["namespace"]
        matched = [
            s
            for s in services
            if s["metadata"]["namespace"] == namespace
            and selects(monitor["spec"]["selector"], labels(s))
        ]
        assert matched, key(monitor)
        ports = {p.get("name") for s in matched for p in s["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in ports, (key(monitor), endpoint["port"])


def test_every_role_binding_of_ours_names_an_account_that_exists() -> None:
    accounts = {key(o)[1:] for o in [*theirs(), *ours(), *rendered(DEPLOY / "cluster")]
                if o["kind"] == "ServiceAccount"}  # fmt: skip
    for binding in of_kind(ours(), "RoleBinding"):
        for subject in binding["subjects"]:
            assert (subject["namespace"], subject["name"]) in accounts, key(binding)


def test_our_network_policy_opens_their_prometheus_on_a_port_it_serves() -> None:
    (prometheus,) = of_kind(theirs(), "Prometheus")
    (service,) = [
        s for s in of_kind(theirs(), "Service") if s["metadata"]["name"] == "prometheus-k8s"
    ]
    pods = prometheus["spec"]["podMetadata"]["labels"]
    for policy in of_kind(ours(), "NetworkPolicy"):
        assert policy["metadata"]["namespace"] == prometheus["metadata"]["namespace"]
        assert selects(policy["spec"]["podSelector"], pods), key(policy)
        served = {p["port"] for p in service["spec"]["ports"]}
        for rule in policy["spec"]["ingress"]:
            assert {p["port"] for p in rule["ports"]} <= served, key(policy)
