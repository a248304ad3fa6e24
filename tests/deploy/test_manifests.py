"""The Kubernetes manifests under deploy/, as files: valid, unprivileged, least privilege.

There is no cluster here, so what a user relies on is checked directly:
- every YAML under deploy/ parses, and every Kubernetes object in it is valid for the oldest and
  newest Kubernetes we support (offline schemas from `kubernetes-validate`, strict: a misspelt
  field is an error);
- every Deployment (ours and the demo app's, as TAS's demo did) runs non-root with a read-only
  root filesystem, no privilege escalation, no capabilities, the RuntimeDefault seccomp profile,
  and resource requests and limits; ours have probes on /healthz and /readyz for every container
  that serves traffic, and the descheduler a liveness probe on its metrics port's /healthz (a
  port that only serves Prometheus metrics and liveness needs no readiness probe);
- the tas image's user is the user the Deployments run as;
- RBAC is least privilege: no wildcards, leases only in our namespace, and the second
  kube-scheduler gets exactly its rules (our own components' roles are checked against what
  their code calls, by running them on the roles: tests/test_rbac.py); every service account,
  role, config map and priority class referenced exists, and the Secrets the user creates are
  explained in the docs;
- every repository path the guides name exists, and every kustomization lists only files that
  exist.
"""

from __future__ import annotations

import re
from pathlib import Path

import kubernetes_validate
import pytest

from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, ROOT
from tests.deploy.shipped import (
    IMAGE_PLACEHOLDER,
    NAMESPACE,
    containers,
    deployments,
    every_deployment,
    kubernetes_objects,
    load_documents,
    objects_of,
    rel,
    tas_containers,
    the_object,
    yaml_files,
)

IMAGE_UID = 10001
KUBERNETES_VERSIONS = ("1.25", kubernetes_validate.utils.latest_version())
#: Least privilege for the accounts whose code is not ours: (apiGroup, resource, verb) triples,
#: cluster-wide and in the account's namespace. The roles of the extender, the controller and
#: the descheduler are not listed here: tests/test_rbac.py runs each on its shipped role and
#: fails on a refused request or on a grant its code never uses.
EXPECTED_RBAC: dict[str, set[tuple[str, str, str]]] = {
    # The second kube-scheduler's own leader-election Lease (its other rules are built in).
    "tas-scheduler": {("coordination.k8s.io", "leases", v) for v in ("get", "create", "update")},
}
#: Roles that Kubernetes itself provides, which manifests may bind without defining.
BUILT_IN_ROLES = {
    ("ClusterRole", "system:kube-scheduler"),
    ("ClusterRole", "system:volume-scheduler"),
    ("ClusterRole", "system:auth-delegator"),  # prometheus-adapter, an aggregated API server
    ("Role", "extension-apiserver-authentication-reader"),
}
#: A monitoring stack's accounts that a profile binds (deploy/profiles/kube-prometheus grants
#: kube-prometheus's Prometheus discovery; tests/deploy/test_stack_fixtures.py checks them
#: against kube-prometheus's released objects).
STACK_ACCOUNTS = {("monitoring", "prometheus-k8s")}
#: Secrets the user creates from scripts/gen-certs.sh output (docs/deploy.md says how).
USER_SECRETS = {"tas-extender-tls", "tas-scheduler-client-tls"}


@pytest.mark.parametrize("path", yaml_files(), ids=rel)
def test_every_yaml_file_under_deploy_parses_into_mappings(path: Path) -> None:
    documents = load_documents(path)
    assert documents, "empty file"
    assert all(isinstance(d, dict) for d in documents)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_kubernetes_object_is_valid_for_the_supported_kubernetes_versions(
    version: str,
) -> None:
    checked = set()
    for path, document in kubernetes_objects():
        try:
            kubernetes_validate.validate(document, version, strict=True)
        except kubernetes_validate.utils.SchemaNotFoundError:
            continue  # custom resources (TASPolicy: tests/test_crd.py checks them)
        except kubernetes_validate.ValidationError as error:
            where = ".".join(str(p) for p in error.path)
            pytest.fail(f"{rel(path)}: {document['kind']} {where}: {error.message}")
        checked.add(document["kind"])
    assert {"Deployment", "ClusterRole", "Service", "CustomResourceDefinition"} <= checked


def test_the_validity_check_catches_a_misspelt_field() -> None:
    deployment = the_object("Deployment", "tas-extender")
    deployment["spec"]["template"]["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_components_are_all_deployed() -> None:
    names = {d["metadata"]["name"] for d in deployments()}
    assert {"tas-extender", "tas-policy-controller", "tas-descheduler", "tas-scheduler"} <= names
    assert any(d["metadata"]["name"] == NAMESPACE for d in objects_of("Namespace"))


@pytest.mark.parametrize("deployment", every_deployment(), ids=lambda d: d["metadata"]["name"])
def test_every_deployment_runs_non_root_read_only_without_capabilities(
    deployment: Document,
) -> None:
    pod = deployment["spec"]["template"]["spec"]
    pod_context = pod.get("securityContext", {})
    assert pod_context.get("seccompProfile") == {"type": "RuntimeDefault"}
    assert pod.get("hostNetwork") is not True
    assert pod.get("hostPID") is not True
    for container in containers(deployment):
        context = container.get("securityContext", {})
        name = container["name"]
        assert context.get("runAsNonRoot", pod_context.get("runAsNonRoot")) is True, name
        uid = context.get("runAsUser", pod_context.get("runAsUser"))
        assert isinstance(uid, int), name
        assert uid > 0, name
        assert context.get("allowPrivilegeEscalation") is False, name
        # The demo app alone writes to its image's /tmp: an emptyDir would make it a pod with
        # local storage, which the DefaultEvictor never evicts (test_the_demo_pod_is_evictable).
        read_only = deployment["metadata"]["name"] != "demo-app"
        assert context.get("readOnlyRootFilesystem") is read_only, name
        assert context.get("capabilities", {}).get("drop") == ["ALL"], name
        assert "add" not in context.get("capabilities", {}), name
        assert context.get("privileged") is not True, name
        assert context.get("seccompProfile", pod_context.get("seccompProfile")) == {
            "type": "RuntimeDefault"
        }, name


@pytest.mark.parametrize("deployment", every_deployment(), ids=lambda d: d["metadata"]["name"])
def test_every_container_has_cpu_and_memory_requests_and_limits(deployment: Document) -> None:
    for container in containers(deployment):
        resources = container.get("resources", {})
        for bound in ("requests", "limits"):
            assert set(resources.get(bound, {})) >= {"cpu", "memory"}, container["name"]


def _probe_path(probe: Document) -> str:
    if "httpGet" in probe:
        return str(probe["httpGet"]["path"])
    return " ".join(probe.get("exec", {}).get("command", []))


@pytest.mark.parametrize("deployment", deployments(), ids=lambda d: d["metadata"]["name"])
def test_every_serving_container_is_probed_on_healthz_and_readyz(deployment: Document) -> None:
    for container in containers(deployment):
        # A port that only serves Prometheus metrics and liveness (the descheduler's) takes no
        # traffic, so it has no readiness to probe (its liveness: the test below).
        if {p["name"] for p in container.get("ports", [])} <= {"metrics"}:
            continue
        assert "/healthz" in _probe_path(container["livenessProbe"]), container["name"]
        assert "/readyz" in _probe_path(container["readinessProbe"]), container["name"]


def test_the_descheduler_is_restarted_when_its_cycles_stop() -> None:
    # descheduler/liveness.py: /healthz on the --listen-metrics port fails once no cycle has
    # ended for three intervals (plus a grace); without the probe nothing would notice.
    (container,) = containers(the_object("Deployment", "tas-descheduler"))
    args = container["args"]
    probe = container["livenessProbe"]["httpGet"]
    assert probe["path"] == "/healthz"
    (port,) = [p for p in container["ports"] if p["name"] == probe["port"]]
    listen = args[args.index("--listen-metrics") + 1]
    assert listen.rpartition(":")[2] == str(port["containerPort"])
    assert args[args.index("--descheduling-interval") + 1] != "0"


def test_the_tas_image_user_is_the_user_the_deployments_run_as() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert f"USER {IMAGE_UID}:{IMAGE_UID}" in dockerfile
    for name, container in tas_containers():
        deployment = the_object("Deployment", name)
        pod_context = deployment["spec"]["template"]["spec"]["securityContext"]
        assert pod_context["runAsUser"] == IMAGE_UID, name
        assert container["image"] == IMAGE_PLACEHOLDER, name


def _rules(role: Document) -> set[tuple[str, str, str]]:
    return {
        (group, resource, verb)
        for rule in role.get("rules", [])
        for group in rule.get("apiGroups", [])
        for resource in rule.get("resources", [])
        for verb in rule.get("verbs", [])
    }


#: The one wildcard a role may hold: `get` on every resource of the custom metrics API, as TAS
#: granted. That group serves read-only metrics and nothing else, and RBAC has no pattern for
#: "any metric of nodes": a read of nodes/*/<metric> is resource nodes, subresource <metric>.
METRICS_READ = {"apiGroups": ["custom.metrics.k8s.io"], "resources": ["*"], "verbs": ["get"]}


def test_no_role_grants_a_wildcard_but_reading_custom_metrics() -> None:
    roles = objects_of("Role") + objects_of("ClusterRole")
    assert roles
    for role in roles:
        for rule in role.get("rules", []):
            if rule == METRICS_READ:
                continue
            for field in ("apiGroups", "resources", "verbs", "resourceNames"):
                assert "*" not in rule.get(field, []), (role["metadata"]["name"], field)
            assert "nonResourceURLs" not in rule, role["metadata"]["name"]


def _granted_to(account: str) -> set[tuple[str, str, str]]:
    granted: set[tuple[str, str, str]] = set()
    for binding in objects_of("RoleBinding") + objects_of("ClusterRoleBinding"):
        subjects = binding.get("subjects", [])
        if not any(s["kind"] == "ServiceAccount" and s["name"] == account for s in subjects):
            continue
        ref = binding["roleRef"]
        if (ref["kind"], ref["name"]) in BUILT_IN_ROLES:
            continue
        granted |= _rules(the_object(ref["kind"], ref["name"]))
    return granted


@pytest.mark.parametrize("account", sorted(EXPECTED_RBAC))
def test_an_account_whose_code_is_not_ours_gets_exactly_the_listed_permissions(
    account: str,
) -> None:
    assert _granted_to(account) == EXPECTED_RBAC[account]


def test_leases_are_granted_only_in_the_components_own_namespace() -> None:
    for role in objects_of("ClusterRole"):
        assert all(resource != "leases" for _, resource, _ in _rules(role))
    for role in objects_of("Role"):
        if any(resource == "leases" for _, resource, _ in _rules(role)):
            assert role["metadata"]["namespace"] == NAMESPACE


def test_every_referenced_account_role_config_map_and_priority_class_exists() -> None:
    accounts = {
        (d["metadata"]["namespace"], d["metadata"]["name"]) for d in objects_of("ServiceAccount")
    }
    roles = {
        (d["kind"], d["metadata"]["name"]) for d in objects_of("Role") + objects_of("ClusterRole")
    }
    config_maps = {
        (d["metadata"]["namespace"], d["metadata"]["name"]) for d in objects_of("ConfigMap")
    }
    priority_classes = {d["metadata"]["name"] for d in objects_of("PriorityClass")}
    for deployment in deployments():
        namespace = deployment["metadata"]["namespace"]
        pod = deployment["spec"]["template"]["spec"]
        if namespace == NAMESPACE:
            assert (namespace, pod["serviceAccountName"]) in accounts
            assert pod["priorityClassName"] in priority_classes
        for volume in pod.get("volumes", []):
            if "configMap" in volume:
                assert (namespace, volume["configMap"]["name"]) in config_maps
            if "secret" in volume:
                assert volume["secret"]["secretName"] in USER_SECRETS
    for binding in objects_of("RoleBinding") + objects_of("ClusterRoleBinding"):
        ref = binding["roleRef"]
        assert (ref["kind"], ref["name"]) in roles | BUILT_IN_ROLES
        for subject in binding["subjects"]:
            assert (subject["namespace"], subject["name"]) in accounts | STACK_ACCOUNTS


def test_the_user_created_secrets_are_explained_in_the_docs() -> None:
    docs = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for secret in USER_SECRETS:
        assert f"create secret generic {secret}" in docs


@pytest.mark.parametrize("doc", ["deploy.md", "upgrade-from-tas.md", "troubleshooting.md"])
def test_every_repository_path_the_docs_name_exists(doc: str) -> None:
    docs = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    named = set(re.findall(r"(?<![\w/.])((?:deploy|crds|scripts|docs)/[\w./+-]*[\w])", docs))
    assert named
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert missing == []


def test_every_kustomization_lists_only_existing_resources() -> None:
    # kustomize reads any of three names; crds/ uses `Kustomization` (tests/deploy says why).
    names = ("kustomization.yaml", "kustomization.yml", "Kustomization")
    paths = [p for name in names for root in (DEPLOY, ROOT / "crds") for p in root.rglob(name)]
    assert ROOT / "crds" / "Kustomization" in paths
    for path in paths:
        (document,) = load_documents(path)
        for field in ("resources", "components", "transformers"):
            for entry in document.get(field, []):
                assert (path.parent / entry).exists(), (rel(path), field, entry)
