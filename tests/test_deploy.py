"""The deployment artefacts: Kubernetes manifests, kube-scheduler wiring, certificates, the
health-metric demo, the Dockerfile and docker-compose.

There is no cluster and no Docker engine here, so what a user relies on is checked directly:
- every YAML under deploy/ parses, and every Kubernetes object in it is valid for the oldest and
  newest Kubernetes we support (offline schemas from `kubernetes-validate`, strict: a misspelt
  field is an error);
- every Deployment (ours and the demo app's, as TAS's demo did) runs non-root with a read-only
  root filesystem, no privilege escalation, no capabilities, the RuntimeDefault seccomp profile,
  and resource requests and limits; ours have probes on /healthz and /readyz for every container
  that serves traffic, and the descheduler a liveness probe on its metrics port's /healthz;
- the policy controller runs a warm standby (two replicas, leader election) with a
  PodDisruptionBudget and spread over nodes; the demo app's nginx image is a pinned release;
- RBAC is least privilege: no wildcards, leases only in our namespace, and the second
  kube-scheduler gets exactly its rules (our own components' roles are checked against what
  their code calls, by running them on the roles: tests/test_rbac.py); every service account,
  role, config map and priority class referenced exists;
- the `tas` command lines in the manifests and in docker-compose use only the documented
  subcommands and flags, and parse with the components' own argument parsers where they exist;
- both kube-scheduler wirings point at the extender Service over HTTPS with the documented
  settings and the same weight;
- scripts/gen-certs.sh makes a CA, a server and two client certificates (kube-scheduler's, and
  Prometheus's for the extender's /metrics) that complete a real mTLS handshake with Python's
  `ssl`, and refuses to replace an existing CA or take unsafe names;
- the demo's set-health script writes the metric locally, over ssh (a stand-in ssh that runs
  the command through `sh -c`, as sshd does) and through `docker exec` for kind (a stand-in
  docker), and never runs anything built from bad input;
- a port that only serves Prometheus metrics and liveness (the descheduler's) needs no
  readiness probe;
- the Dockerfile's base images are pinned by digest;
- docker-compose.yml: it is a valid Compose file (the `compose-spec` parser; `docker compose
  config` too where the plugin exists), local files exist, ports bind 127.0.0.1, images are
  pinned, and (when real binaries are present) node-exporter and Prometheus serve the demo
  metrics per node with the shipped configuration.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import time
import tomllib
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from compose_spec import PyCompose
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from descheduler.config import load_config_text
from tas.policies.model import parse_policy

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
GEN_CERTS = ROOT / "scripts" / "gen-certs.sh"
IMAGE_SCRIPT = ROOT / "scripts" / "image.sh"
SET_HEALTH = DEPLOY / "health-metric-demo" / "set-health.sh"
NAMESPACE = "telemetry-aware-scheduling"
#: The image's name in the three Deployments: a placeholder that deploy/cluster/kustomization.yaml
#: replaces with the published name and tag (`images`; tests/deploy/test_kustomize.py checks it).
IMAGE_PLACEHOLDER = "telemetry-aware-scheduling"
#: The image docker-compose builds locally and runs.
IMAGE = f"{IMAGE_PLACEHOLDER}:0.1.0"
IMAGE_UID = 10001
KUBERNETES_VERSIONS = ("1.25", kubernetes_validate.utils.latest_version())
RECOMMENDED_WEIGHT = 5

Document = dict[str, Any]

#: The documented command lines: subcommand -> flag -> whether it takes a value.
TAS_FLAGS: dict[str, dict[str, bool]] = {
    "extender": {
        "--policies": True,
        "--metrics": True,
        "--listen": True,
        "--insecure-http": False,
        "--cert": True,
        "--key": True,
        "--cacert": True,
        "--client-cert-names": True,
        "--sync-period": True,
        "--metric-max-age": True,
        "--score-mode": True,
        "--tas-compat-failed-nodes": False,
    },
    "controller": {
        "--metrics": True,
        "--policies": True,
        "--kubeconfig": True,
        "--sync-period": True,
        "--leader-elect": False,
        "--listen": True,
    },
    "descheduler": {
        "--policy-config-file": True,
        "--metrics": True,
        "--mode": True,
        "--descheduling-interval": True,
        "--leader-elect": False,
        "--listen-metrics": True,
    },
}

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


# --- loading --------------------------------------------------------------------------------


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


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def scheduler_configs() -> list[tuple[str, Document]]:
    patch = DEPLOY / "scheduler" / "kube-scheduler-config.yaml"
    (patched,) = load_documents(patch)
    config_map = the_object("ConfigMap", "tas-scheduler-config")
    second = yaml.safe_load(config_map["data"]["config.yaml"])
    return [("patched kube-scheduler", patched), ("second scheduler", second)]


# --- manifests ------------------------------------------------------------------------------


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


# --- command lines --------------------------------------------------------------------------


def check_tas_command(args: list[str]) -> list[str]:
    """Problems with a `tas` command line (without the `tas` itself), per TAS_FLAGS."""
    if not args or args[0] not in TAS_FLAGS:
        return [f"unknown subcommand in {args}"]
    flags = TAS_FLAGS[args[0]]
    problems: list[str] = []
    index = 1
    while index < len(args):
        flag = args[index]
        if flag not in flags:
            problems.append(f"{args[0]}: unknown flag {flag}")
            index += 1
            continue
        if flags[flag]:
            if index + 1 >= len(args) or args[index + 1].startswith("--"):
                problems.append(f"{args[0]}: {flag} needs a value")
            index += 2
        else:
            index += 1
    if args[0] == "extender":
        insecure = "--insecure-http" in args
        if insecure == ("--cert" in args or "--key" in args):
            problems.append("extender: exactly one of --insecure-http and --cert/--key")
    return problems


def test_the_command_line_check_finds_wrong_flags() -> None:
    assert check_tas_command(["extender", "--listen", "0.0.0.0:9001", "--insecure-http"]) == []
    assert check_tas_command(["extender", "--port", "1", "--insecure-http"]) != []
    assert check_tas_command(["extender", "--listen"]) != []
    assert check_tas_command(["extender", "--cert", "c", "--key", "k", "--insecure-http"]) != []
    assert check_tas_command(["schedule"]) != []


def _compose() -> Document:
    document: Document = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    return document


def every_tas_command() -> list[tuple[str, list[str]]]:
    found = [(f"deployment {name}", list(c["args"])) for name, c in tas_containers()]
    for name, service in _compose()["services"].items():
        if service.get("image") == IMAGE:
            found.append((f"compose {name}", list(service["command"])))
    return found


@pytest.mark.parametrize(
    ("where", "args"), [pytest.param(w, a, id=w) for w, a in every_tas_command()]
)
def test_every_tas_command_line_uses_documented_subcommands_and_flags(
    where: str, args: list[str]
) -> None:
    assert check_tas_command(args) == [], where


@pytest.mark.parametrize(
    ("where", "args"), [pytest.param(w, a, id=w) for w, a in every_tas_command()]
)
def test_every_tas_command_line_parses_with_the_components_own_parser(
    where: str, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # The `tas` command's own parser: a renamed or missing subcommand module fails this test
    # (at import; it never skips), and an unknown subcommand fails to parse.
    from tas_cli.main import build_parser

    parser = build_parser()
    try:
        parser.parse_args(args)
    except SystemExit:
        print(capsys.readouterr().err)
        raise


def test_the_extender_serves_mtls_in_the_cluster_and_plain_http_only_in_compose() -> None:
    (container,) = [c for name, c in tas_containers() if name == "tas-extender"]
    args = container["args"]
    assert "--insecure-http" not in args
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    for flag in ("--cert", "--key", "--cacert"):
        assert str(Path(args[args.index(flag) + 1]).parent) in mounts
    assert args[args.index("--listen") + 1].endswith(":9001")
    # Only kube-scheduler's certificate, as scripts/gen-certs.sh names it, may filter.
    assert args[args.index("--client-cert-names") + 1] == "tas-kube-scheduler"
    assert '-subj "/CN=tas-kube-scheduler"' in GEN_CERTS.read_text(encoding="utf-8")
    compose = _compose()["services"]["extender"]
    assert "--insecure-http" in compose["command"]
    assert all(str(p).startswith("127.0.0.1:") for p in compose["ports"])


def test_the_components_read_metrics_from_prometheus_in_the_cluster() -> None:
    # At the URL of the install profile's ConfigMap tas-prometheus (tests/deploy checks each).
    for name, container in tas_containers():
        args = container["args"]
        source = args[args.index("--metrics") + 1]
        assert source == "prometheus:$(PROMETHEUS_URL)", name
        (url,) = [e for e in container["env"] if e["name"] == "PROMETHEUS_URL"]
        assert url["valueFrom"]["configMapKeyRef"] == {"name": "tas-prometheus", "key": "url"}


def test_the_policy_controller_keeps_a_warm_standby_through_disruptions() -> None:
    # Leader election with one replica fails over only after a reschedule and a cold start.
    deployment = the_object("Deployment", "tas-policy-controller")
    assert deployment["spec"]["replicas"] == 2
    (container,) = containers(deployment)
    assert "--leader-elect" in container["args"]
    budget = the_object("PodDisruptionBudget", "tas-policy-controller")
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    assert budget["spec"]["minAvailable"] == 1
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert budget["spec"]["selector"]["matchLabels"].items() <= labels.items()
    spread = deployment["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    (term,) = spread["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()


def test_the_descheduler_is_shipped_in_predictive_mode() -> None:
    (container,) = [c for name, c in tas_containers() if name == "tas-descheduler"]
    assert container["args"][container["args"].index("--mode") + 1] == "Predictive"


def test_the_descheduler_policy_in_the_cluster_is_the_shipped_one_and_is_valid() -> None:
    text = the_object("ConfigMap", "tas-descheduler-policy")["data"]["policy.yaml"]
    shipped = (DEPLOY / "descheduler" / "tas-violations.yaml").read_text(encoding="utf-8")
    assert yaml.safe_load(text) == yaml.safe_load(shipped)
    load_config_text(text, source="tas-descheduler-policy")


# --- the extender's reachability ------------------------------------------------------------


def test_the_extender_service_reaches_the_extender_pods_on_9001() -> None:
    service = the_object("Service", "tas-extender")
    deployment = the_object("Deployment", "tas-extender")
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= labels.items()
    (port,) = service["spec"]["ports"]
    assert port["port"] == 9001
    (container,) = containers(deployment)
    assert port["targetPort"] in {p["name"] for p in container["ports"]}


def test_the_extender_never_needs_itself_to_be_scheduled() -> None:
    deployment = the_object("Deployment", "tas-extender")
    pod = deployment["spec"]["template"]["spec"]
    assert "telemetry-policy" not in deployment["spec"]["template"]["metadata"]["labels"]
    for container in containers(deployment):
        for bound in container["resources"].values():
            assert "telemetry/scheduling" not in bound
    assert pod.get("schedulerName", "default-scheduler") == "default-scheduler"
    assert the_object("PriorityClass", pod["priorityClassName"])["value"] > 0
    assert pod["tolerations"]
    budget = the_object("PodDisruptionBudget", "tas-extender")
    assert deployment["spec"]["replicas"] > budget["spec"]["minAvailable"]


@pytest.mark.parametrize(("which", "config"), scheduler_configs(), ids=lambda x: str(x)[:24])
def test_both_scheduler_wirings_call_the_extender_over_mtls_with_the_same_settings(
    which: str, config: Document
) -> None:
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    (extender,) = config["extenders"]
    url = urllib.parse.urlsplit(extender["urlPrefix"])
    assert (url.scheme, url.hostname, url.port) == (
        "https",
        f"tas-extender.{NAMESPACE}.svc.cluster.local",
        the_object("Service", "tas-extender")["spec"]["ports"][0]["port"],
    )
    assert extender["filterVerb"] == "scheduler/filter"
    assert extender["prioritizeVerb"] == "scheduler/prioritize"
    assert extender["weight"] == RECOMMENDED_WEIGHT
    assert extender["enableHTTPS"] is True
    assert extender["nodeCacheCapable"] is True
    assert extender["ignorable"] is True
    assert extender["httpTimeout"] == "5s"
    tls = extender["tlsConfig"]
    assert tls.get("insecure", False) is False
    assert {"certFile", "keyFile", "caFile"} <= set(tls)


def test_the_patched_scheduler_sends_only_pods_that_request_telemetry_scheduling() -> None:
    (_, patched), _ = scheduler_configs()
    assert patched["extenders"][0]["managedResources"] == [
        {"name": "telemetry/scheduling", "ignoredByScheduler": True}
    ]


def test_the_second_scheduler_has_its_own_name_lease_and_certificates() -> None:
    _, (_, config) = scheduler_configs()
    (profile,) = config["profiles"]
    assert profile["schedulerName"] == "tas-scheduler"
    (fit,) = [p for p in profile["pluginConfig"] if p["name"] == "NodeResourcesFit"]
    assert fit["args"]["ignoredResources"] == ["telemetry/scheduling"]
    assert config["leaderElection"]["resourceName"] == "tas-scheduler"
    assert config["leaderElection"]["resourceNamespace"] == NAMESPACE
    deployment = the_object("Deployment", "tas-scheduler")
    (container,) = containers(deployment)
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    for key in ("certFile", "keyFile", "caFile"):
        assert str(Path(config["extenders"][0]["tlsConfig"][key]).parent) in mounts
    config_flag = next(a for a in container["command"] if a.startswith("--config="))
    assert str(Path(config_flag.removeprefix("--config=")).parent) in mounts


def test_the_docs_explain_the_recommended_weight_with_its_arithmetic() -> None:
    docs = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    assert f"weight: {RECOMMENDED_WEIGHT}" in docs
    assert "10 × weight × 10" in docs


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


# --- the health-metric demo -----------------------------------------------------------------


def test_the_demo_app_links_the_demo_policy_in_its_own_namespace() -> None:
    demo = DEPLOY / "health-metric-demo"
    (policy_doc,) = load_documents(demo / "health-policy.yaml")
    policy = parse_policy(policy_doc)
    (app,) = [d for d in load_documents(demo / "demo-app.yaml") if d["kind"] == "Deployment"]
    (namespace,) = load_documents(demo / "namespace.yaml")
    assert app["metadata"]["namespace"] == policy.namespace == namespace["metadata"]["name"]
    template = app["spec"]["template"]
    assert template["metadata"]["labels"]["telemetry-policy"] == policy.name
    (term,) = template["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    assert term["matchExpressions"] == [
        {"key": policy.name, "operator": "NotIn", "values": ["violating"]}
    ]
    (container,) = template["spec"]["containers"]
    assert container["resources"]["limits"]["telemetry/scheduling"] == 1
    # A pinned release, as TAS's demo pinned one: `latest` changes under a walkthrough.
    assert re.fullmatch(r"nginxinc/nginx-unprivileged:[0-9]+\.[0-9]+\.[0-9]+", container["image"])
    config_maps = {
        v["configMap"]["name"] for v in template["spec"].get("volumes", []) if "configMap" in v
    }
    assert {d["metadata"]["name"] for d in load_documents(demo / "demo-app.yaml")} >= config_maps
    shipped = parse_policy(load_documents(DEPLOY / "policies" / "health-policy.yaml")[0])
    assert policy == shipped


def test_the_demo_pod_is_evictable_by_the_default_evictor() -> None:
    """The demo's point is to be evicted from an unhealthy node. A pod with an emptyDir or
    hostPath volume has local storage, and the DefaultEvictor (upstream's default
    evictLocalStoragePods: false, which the shipped policy keeps) never evicts it."""
    (app,) = [d for d in objects_of("Deployment") if d["metadata"]["name"] == "demo-app"]
    volumes = app["spec"]["template"]["spec"].get("volumes", [])
    assert not [v["name"] for v in volumes if "emptyDir" in v or "hostPath" in v]


def _run(args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=60, check=False, **kwargs)


def test_set_health_writes_a_node_labelled_sample_locally(tmp_path: Path) -> None:
    result = _run([str(SET_HEALTH), "--local", str(tmp_path), "node-c", "2"])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "node-c.prom").read_text() == 'node_health_metric{node="node-c"} 2\n'
    assert [p.name for p in tmp_path.iterdir()] == ["node-c.prom"]


@pytest.fixture
def stand_in_ssh(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An `ssh` on PATH that logs its arguments and runs the command with `sh -c`, as sshd."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "ssh.log"
    ssh = bin_dir / "ssh"
    ssh.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$*\" >> '{log}'\n"
        'while [ "$#" -gt 0 ]; do case "$1" in --) shift; break;; -o|-l) shift 2;; '
        "*) break;; esac; done\n"
        'shift\nexec sh -c "$1"\n'
    )
    ssh.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return env, log


def test_set_health_over_ssh_writes_the_textfile_on_the_node(
    tmp_path: Path, stand_in_ssh: tuple[dict[str, str], Path]
) -> None:
    env, log = stand_in_ssh
    target = tmp_path / "node-metrics"
    args = [str(SET_HEALTH), "--ssh-user", "demo", "--dir", str(target), "worker-1.lab", "-1.5"]
    result = _run(args, env=env)
    assert result.returncode == 0, result.stderr
    assert (target / "text.prom").read_text() == "node_health_metric -1.5\n"
    assert "-l demo -- worker-1.lab" in log.read_text()


@pytest.fixture
def stand_in_docker(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A `docker` on PATH whose `exec CONTAINER CMD...` logs and runs CMD here, argv as given."""
    bin_dir = tmp_path / "docker-bin"
    bin_dir.mkdir()
    log = tmp_path / "docker.log"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        f"printf '%s\\n' \"$1 $2\" >> '{log}'\n"
        '[ "$1" = exec ] || exit 64\n'
        'shift 2\nexec "$@"\n'
    )
    docker.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return env, log


def test_set_health_through_docker_exec_writes_the_textfile_in_the_kind_node(
    tmp_path: Path, stand_in_docker: tuple[dict[str, str], Path]
) -> None:
    env, log = stand_in_docker
    target = tmp_path / "node-metrics"
    args = [str(SET_HEALTH), "--docker", "--dir", str(target), "tas-e2e-worker2", "2"]
    result = _run(args, env=env)
    assert result.returncode == 0, result.stderr
    assert (target / "text.prom").read_text() == "node_health_metric 2\n"
    assert log.read_text() == "exec tas-e2e-worker2\n"


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--docker", "node-c", "$(touch INJECTED)"], id="docker: substitution"),
        pytest.param(["--docker", "-it", "1"], id="docker: option as node"),
        pytest.param(["--docker", "--ssh-user", "u", "node-c", "1"], id="docker and ssh user"),
    ],
)
def test_set_health_through_docker_refuses_bad_input_before_running_anything(
    args: list[str], tmp_path: Path, stand_in_docker: tuple[dict[str, str], Path]
) -> None:
    env, log = stand_in_docker
    result = _run([str(SET_HEALTH), *args], env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert not log.exists(), "docker was called"
    assert not (tmp_path / "INJECTED").exists()


@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["node-c", "1; touch INJECTED"], id="command in the value"),
        pytest.param(["node-c", "$(touch INJECTED)"], id="substitution in the value"),
        pytest.param(["node-c", "1\ntouch INJECTED"], id="newline in the value"),
        pytest.param(["node-c\ntouch INJECTED", "1"], id="newline in the node"),
        pytest.param(["-oProxyCommand=touch INJECTED", "1"], id="option as node"),
        pytest.param(["Node_C", "1"], id="not a node name"),
        pytest.param(["node-c", "1e9"], id="not a plain number"),
        pytest.param(["--dir", "/tmp/x';touch INJECTED;'", "node-c", "1"], id="quote in dir"),
        pytest.param(["--dir", "/tmp/../etc", "node-c", "1"], id="dot-dot in dir"),
        pytest.param(["--ssh-user", "root;x", "node-c", "1"], id="bad user"),
        pytest.param(["node-c"], id="missing value"),
    ],
)
def test_set_health_refuses_bad_input_before_running_anything(
    args: list[str], tmp_path: Path, stand_in_ssh: tuple[dict[str, str], Path]
) -> None:
    env, log = stand_in_ssh
    result = _run([str(SET_HEALTH), *args], env=env, cwd=tmp_path)
    assert result.returncode == 2
    assert not log.exists(), "ssh was called"
    assert not (tmp_path / "INJECTED").exists()


@pytest.mark.parametrize(
    ("script", "args", "said"),
    [
        pytest.param(GEN_CERTS, ["--days"], "Make the certificates", id="gen-certs: no value"),
        pytest.param(
            GEN_CERTS,
            ["--nope", "x"],
            "gen-certs: unknown option: --nope",
            id="gen-certs: unknown option",
        ),
        pytest.param(GEN_CERTS, ["--help"], "Usage: scripts/gen-certs.sh", id="gen-certs: help"),
        pytest.param(
            SET_HEALTH, ["--dir"], "Set a node's `health_metric`", id="set-health: no value"
        ),
        pytest.param(
            SET_HEALTH,
            ["-x", "n", "1"],
            "set-health: unknown option: -x",
            id="set-health: unknown option",
        ),
        pytest.param(
            SET_HEALTH, ["-h"], "set-health.sh --local DIR NODE VALUE", id="set-health: help"
        ),
    ],
)
def test_the_scripts_answer_a_bad_option_or_help_with_exit_2_before_doing_anything(
    script: Path, args: list[str], said: str, tmp_path: Path
) -> None:
    # One option parser for both (scripts/lib/options.sh): a missing value and -h/--help print
    # the script's header as its usage, an unknown option is named.
    result = _run([str(script), *args], cwd=tmp_path)
    assert result.returncode == 2
    assert said in result.stderr
    assert list(tmp_path.iterdir()) == []


# --- certificates ---------------------------------------------------------------------------

needs_openssl = pytest.mark.skipif(
    shutil.which("openssl") is None, reason="openssl is not installed"
)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    out = tmp_path_factory.mktemp("certs") / "out"
    result = _run([str(GEN_CERTS), str(out)])
    assert result.returncode == 0, result.stderr
    return out


def _certificate(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_gen_certs_signs_the_server_and_client_certificates_with_its_ca(
    certificates: Path,
) -> None:
    ca = _certificate(certificates / "ca.crt")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    server = _certificate(certificates / "extender.crt")
    client = _certificate(certificates / "client.crt")
    scraper = _certificate(certificates / "scraper.crt")  # Prometheus, for the extender's /metrics
    for leaf in (server, client, scraper):
        leaf.verify_directly_issued_by(ca)
        assert leaf.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) >= {
        "tas-extender",
        f"tas-extender.{NAMESPACE}",
        f"tas-extender.{NAMESPACE}.svc",
        f"tas-extender.{NAMESPACE}.svc.cluster.local",
        "localhost",
    }
    usage = server.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in usage
    assert ExtendedKeyUsageOID.CLIENT_AUTH in usage  # the pod's own health probe
    for leaf in (client, scraper):
        client_usage = leaf.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(client_usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_gen_certs_keeps_private_keys_private(certificates: Path) -> None:
    for key in ("ca.key", "extender.key", "client.key", "scraper.key"):
        assert (certificates / key).stat().st_mode & 0o077 == 0, key


@contextlib.contextmanager
def mtls_server(certificates: Path) -> Iterator[tuple[int, list[str]]]:
    """A one-connection TLS server on 127.0.0.1 that requires a client certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certificates / "extender.crt", certificates / "extender.key")
    context.load_verify_locations(certificates / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)
    peers: list[str] = []

    def serve() -> None:
        with contextlib.suppress(OSError), listener:
            connection, _ = listener.accept()
            with context.wrap_socket(connection, server_side=True) as tls:
                peers.append(str((tls.getpeercert() or {}).get("subject")))
                tls.sendall(b"ok")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1], peers
    finally:
        thread.join(timeout=10)
        listener.close()


def _client_context(certificates: Path, *, with_client_cert: bool = True) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=certificates / "ca.crt")
    if with_client_cert:
        context.load_cert_chain(certificates / "client.crt", certificates / "client.key")
    return context


def test_kube_scheduler_s_client_certificate_completes_mtls_with_the_extender(
    certificates: Path,
) -> None:
    with mtls_server(certificates) as (port, peers):
        host = f"tas-extender.{NAMESPACE}.svc.cluster.local"
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            _client_context(certificates).wrap_socket(raw, server_hostname=host) as tls,
        ):
            assert tls.recv(2) == b"ok"
    (peer,) = peers
    assert "('commonName', 'tas-kube-scheduler')" in peer


def test_a_client_without_a_certificate_is_refused(certificates: Path) -> None:
    with mtls_server(certificates) as (port, _):
        context = _client_context(certificates, with_client_cert=False)
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            pytest.raises((ssl.SSLError, ConnectionError)),
            context.wrap_socket(raw, server_hostname="localhost") as tls,
        ):
            tls.recv(2)


class _HealthHandler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        healthy = self.path in ("/healthz", "/readyz")
        self.send_response(200 if healthy else 503)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def _probe_script(kind: str) -> list[str]:
    (container,) = [c for name, c in tas_containers() if name == "tas-extender"]
    command: list[str] = container[kind]["exec"]["command"]
    return command


@pytest.mark.parametrize(
    ("kind", "path"), [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]
)
def test_the_extender_probe_passes_mtls_with_the_extenders_own_certificate(
    kind: str, path: str, certificates: Path, tmp_path: Path
) -> None:
    # The Secret as the pod sees it, and an HTTPS server that demands a client certificate.
    tls_dir = tmp_path / "tls"
    tls_dir.mkdir()
    for source, target in (("extender.crt", "tls.crt"), ("extender.key", "tls.key")):
        shutil.copy(certificates / source, tls_dir / target)
    shutil.copy(certificates / "ca.crt", tls_dir / "ca.crt")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_dir / "tls.crt", tls_dir / "tls.key")
    context.load_verify_locations(tls_dir / "ca.crt")
    context.verify_mode = ssl.CERT_REQUIRED
    server = http.server.HTTPServer(("127.0.0.1", 0), _HealthHandler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1})
    thread.start()
    try:
        command = [
            part.replace("/etc/tas/tls", str(tls_dir)).replace(":9001", f":{port}")
            for part in _probe_script(kind)
        ]
        assert command[0] == "python"
        assert command[-1] == path
        healthy = _run([sys.executable, *command[1:]])
        assert healthy.returncode == 0, healthy.stderr
        broken = _run([sys.executable, *command[1:-1], "/broken"])
        assert broken.returncode != 0
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@needs_openssl
def test_gen_certs_refuses_to_replace_an_existing_ca(tmp_path: Path) -> None:
    assert _run([str(GEN_CERTS), str(tmp_path)]).returncode == 0
    before = (tmp_path / "ca.crt").read_bytes()
    again = _run([str(GEN_CERTS), str(tmp_path)])
    assert again.returncode == 2
    assert "refusing to replace a CA" in again.stderr
    assert (tmp_path / "ca.crt").read_bytes() == before


@needs_openssl
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--namespace", "x;touch INJECTED"], id="shell in namespace"),
        pytest.param(["--namespace", "Upper"], id="not a DNS label"),
        pytest.param(["--service", "a.b"], id="dot in service"),
        pytest.param(["--days", "0"], id="zero days"),
        pytest.param(["--days", "1d"], id="days not a number"),
    ],
)
def test_gen_certs_refuses_unsafe_names(args: list[str], tmp_path: Path) -> None:
    result = _run([str(GEN_CERTS), *args, str(tmp_path / "out")], cwd=tmp_path)
    assert result.returncode == 2
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "INJECTED").exists()


def test_gen_certs_ca_outlives_every_certificate_it_signs(certificates: Path) -> None:
    # Leaves are renewed under the same CA; a CA that expired with them would take every
    # client down at once, and its expiry would go unseen behind theirs.
    ca = _certificate(certificates / "ca.crt").not_valid_after_utc
    for leaf in ("extender", "client", "scraper"):
        expires = _certificate(certificates / f"{leaf}.crt").not_valid_after_utc
        assert (ca - expires).days >= 365 * 5, leaf


@needs_openssl
@pytest.mark.parametrize(
    "args",
    [
        pytest.param(["--ca-days", "365"], id="CA as long as the leaves"),
        pytest.param(["--days", "800", "--ca-days", "700"], id="CA shorter"),
        pytest.param(["--ca-days", "x"], id="not a number"),
    ],
)
def test_gen_certs_refuses_a_ca_that_would_not_outlive_its_certificates(
    args: list[str], tmp_path: Path
) -> None:
    result = _run([str(GEN_CERTS), *args, str(tmp_path / "out")])
    assert result.returncode == 2
    assert "ca-days" in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_certificates_directory_is_ignored_by_git() -> None:
    ignored = _run(["git", "check-ignore", "-q", "tas-certs/ca.key"], cwd=ROOT)
    assert ignored.returncode == 0


def _recording_tools(directory: Path) -> dict[str, str]:
    """`docker` and `kind` that record their arguments (one line per call) and succeed: what
    scripts/image.sh runs, without a daemon here."""
    directory.mkdir()
    for tool in ("docker", "kind"):
        script = directory / tool
        script.write_text(f'#!/bin/sh\necho "{tool} $*" >> "{directory}/calls"\n')
        script.chmod(0o755)
    return {"PATH": f"{directory}:/usr/bin:/bin"}


def test_one_command_builds_the_image_under_the_installed_name_and_loads_it_into_kind(
    tmp_path: Path,
) -> None:
    # deploy/cluster then finds it in the nodes, with no file edited.
    images = yaml.safe_load((DEPLOY / "cluster" / "kustomization.yaml").read_text())["images"]
    (image,) = images
    name = f"{image['newName']}:{image['newTag']}"
    env = _recording_tools(tmp_path / "bin")
    done = _run([str(IMAGE_SCRIPT), "--kind", "tas"], env=env)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert calls == [f"docker build -t {name} {ROOT}", f"kind load docker-image {name} --name tas"]


def test_one_command_builds_and_pushes_the_image_and_says_what_to_set(tmp_path: Path) -> None:
    env = _recording_tools(tmp_path / "bin")
    done = _run([str(IMAGE_SCRIPT), "--push", "localhost:5000/tas"], env=env)
    assert done.returncode == 0, done.stderr
    (call,) = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert call.startswith("docker buildx build --platform linux/amd64,linux/arm64 -t localhost")
    assert call.endswith(f"--push {ROOT}")
    assert "newName: localhost:5000/tas" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        pytest.param([], id="neither"),
        pytest.param(["--kind", "a", "--push", "r/n"], id="both"),
        pytest.param(["--push", "registry.example/tas:1.0"], id="a tag"),
    ],
)
def test_the_image_command_refuses_an_unclear_target(args: list[str], tmp_path: Path) -> None:
    env = _recording_tools(tmp_path / "bin")
    done = _run([str(IMAGE_SCRIPT), *args], env=env)
    assert done.returncode == 2
    assert not (tmp_path / "bin" / "calls").exists()


def test_the_quick_start_says_first_how_to_get_the_image() -> None:
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    quick_start = guide.split("```sh\n", 1)[1].split("```", 1)[0]
    assert quick_start.splitlines()[0].startswith("scripts/image.sh --kind")


@needs_openssl
def test_gen_certs_names_a_custom_namespace_and_service(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = _run([str(GEN_CERTS), "--namespace", "tas", "--service", "ext", str(out)])
    assert result.returncode == 0, result.stderr
    server = _certificate(out / "extender.crt")
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "ext.tas.svc.cluster.local" in names.get_values_for_type(x509.DNSName)


# --- docker ---------------------------------------------------------------------------------


def test_the_dockerfile_builds_a_non_root_tas_image_from_pinned_python_3_11_slim() -> None:
    lines = [
        line.strip()
        for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    froms = [line.split()[1] for line in lines if line.startswith("FROM")]
    # Pinned by digest (one digest for both stages): a rebuild gets the same base image.
    assert len(froms) == 2
    assert all(re.fullmatch(r"python:3\.11-slim@sha256:[0-9a-f]{64}", image) for image in froms)
    assert len(set(froms)) == 1
    assert lines[-2:] == ['ENTRYPOINT ["tas"]', 'CMD ["--help"]']
    (user,) = [line for line in lines if line.startswith("USER ")]
    assert re.fullmatch(r"USER [1-9][0-9]*:[1-9][0-9]*", user)
    for line in lines:
        if line.startswith("COPY ") and "--from=" not in line:
            for source in line.split()[1:-1]:
                assert (ROOT / source).exists(), line


PIN_IMAGES = ROOT / "scripts" / "pin-images.sh"
NEW_DIGEST = "sha256:" + "b" * 64


@pytest.fixture
def stand_in_registry(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A stand-in `docker` answering `buildx imagetools inspect` as buildx does; its calls."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    docker = bin_dir / "docker"
    manifest = json.dumps({"mediaType": "application/vnd.oci.image.index.v1+json",
                           "digest": NEW_DIGEST, "size": 10}, separators=(",", ":"))  # fmt: skip
    docker.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\necho '{manifest}'\n")
    docker.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}, calls


def test_pin_images_reports_a_stale_pin_and_moves_every_from_line_with_write(
    tmp_path: Path, stand_in_registry: tuple[dict[str, str], Path]
) -> None:
    env, calls = stand_in_registry
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text((ROOT / "Dockerfile").read_text(encoding="utf-8"))
    checked = _run([str(PIN_IMAGES), str(dockerfile)], env=env)
    assert checked.returncode == 1  # the stand-in registry has moved the tag on
    assert "python:3.11-slim  pinned sha256:" in checked.stdout
    assert calls.read_text().split() == [
        "buildx", "imagetools", "inspect", "--format", "{{json", ".Manifest}}", "python:3.11-slim"
    ]  # fmt: skip
    written = _run([str(PIN_IMAGES), "--write", str(dockerfile)], env=env)
    assert written.returncode == 0, written.stderr
    froms = [line for line in dockerfile.read_text().splitlines() if line.startswith("FROM ")]
    assert froms == [
        f"FROM python:3.11-slim@{NEW_DIGEST} AS build",
        f"FROM python:3.11-slim@{NEW_DIGEST}",
    ]
    assert _run([str(PIN_IMAGES), str(dockerfile)], env=env).returncode == 0


def test_the_image_gets_every_package_the_project_installs() -> None:
    """A package left out of the image makes `tas` fail at import in the container."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    packages = {
        pattern.rstrip("*")
        for pattern in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    }
    copied = {
        line.split()[1]
        for line in (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
        if line.startswith("COPY ") and "--from=" not in line
    }
    assert packages <= copied, f"not copied into the image: {sorted(packages - copied)}"


def test_the_docker_context_leaves_out_the_virtualenv_git_and_keys() -> None:
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert {".git", ".venv", "**/*.key"} <= set(ignored)


def test_docker_compose_files_exist_ports_are_local_and_images_pinned() -> None:
    services = _compose()["services"]
    assert {"prometheus", "node-exporter", "extender", "controller"} <= set(services)
    for name, service in services.items():
        image = service.get("image", "")
        assert ":" in image, name
        assert not image.endswith(":latest"), name
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
        for volume in service.get("volumes", []):
            source = str(volume).split(":")[0]
            if source.startswith("./"):
                assert (ROOT / source).exists(), (name, source)
        if "build" in service:
            assert (ROOT / service["build"] / "Dockerfile").exists()
            assert service["image"] == IMAGE
    textfile = services["node-exporter"]
    assert "./deploy/compose/metrics:/textfile:ro" in textfile["volumes"]
    assert "--collector.textfile.directory=/textfile" in textfile["command"]


def test_the_compose_extender_reads_the_shipped_policies_and_prometheus() -> None:
    services = _compose()["services"]
    for name in ("extender", "controller"):
        command = services[name]["command"]
        policies = command[command.index("--policies") + 1]
        assert f"./deploy/policies:{policies}:ro" in services[name]["volumes"]
        assert command[command.index("--metrics") + 1] == "prometheus:http://prometheus:9090"
    request = json.loads((DEPLOY / "compose" / "filter-request.json").read_text())
    assert {f"{n}.prom" for n in request["NodeNames"]} == {
        p.name for p in (DEPLOY / "compose" / "metrics").glob("*.prom")
    }


def interpolate(text: str) -> str:
    """Compose's `${VAR}` / `${VAR:-default}` substitution, from an empty environment."""
    return re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-([^}]*))?\}", lambda m: m[1] or "", text)


def test_docker_compose_yml_is_a_valid_compose_file() -> None:
    text = interpolate((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    assert "${" not in text
    compose = PyCompose.from_yaml(text.replace("~/", "/home/user/"))
    assert set(compose.service_names()) == set(_compose()["services"])


def test_the_compose_validity_check_catches_a_misspelt_key() -> None:
    text = interpolate((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
    with pytest.raises(ValueError, match="read_onyl"):
        PyCompose.from_yaml(text.replace("~/", "/home/user/").replace("read_only:", "read_onyl:"))


def _docker_compose_works() -> bool:
    if shutil.which("docker") is None:
        return False
    return _run(["docker", "compose", "version"]).returncode == 0


@pytest.mark.skipif(
    not _docker_compose_works(), reason="the docker compose plugin is not installed here"
)
def test_docker_compose_accepts_the_file() -> None:
    result = _run(["docker", "compose", "--file", str(ROOT / "docker-compose.yml"), "config", "-q"])
    assert result.returncode == 0, result.stderr


# --- the compose metric path with real binaries ---------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=2) as response:
        body: bytes = response.read()
        return body.decode()


def _wait_for(check: Any, *, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            result = check()
        except (OSError, ValueError, KeyError, AssertionError) as error:
            last = error
        else:
            if result:
                return result
        time.sleep(0.2)
    raise AssertionError(f"timed out; last error: {last!r}")


@contextlib.contextmanager
def running(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as output:
        process = subprocess.Popen(args, stdout=output, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _binary(*names: str) -> str | None:
    return next((found for name in names if (found := shutil.which(name))), None)


@pytest.mark.integration
def test_the_compose_metrics_reach_prometheus_labelled_by_node(tmp_path: Path) -> None:
    exporter = _binary("prometheus-node-exporter", "node_exporter")
    prometheus = _binary("prometheus")
    if exporter is None or prometheus is None:
        pytest.skip("prometheus and node-exporter are not installed (scripts/ensure-debs.sh)")
    metrics = tmp_path / "metrics"
    shutil.copytree(DEPLOY / "compose" / "metrics", metrics)
    result = _run([str(SET_HEALTH), "--local", str(metrics), "node-c", "2"])
    assert result.returncode == 0, result.stderr
    exporter_port, prometheus_port = _free_port(), _free_port()
    config = yaml.safe_load((DEPLOY / "compose" / "prometheus.yml").read_text())
    config["global"]["scrape_interval"] = "1s"
    (job,) = config["scrape_configs"]
    job["static_configs"] = [{"targets": [f"127.0.0.1:{exporter_port}"]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    exporter_args = [
        exporter,
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={metrics}",
        f"--web.listen-address=127.0.0.1:{exporter_port}",
    ]
    prometheus_args = [
        prometheus,
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'data'}",
        f"--web.listen-address=127.0.0.1:{prometheus_port}",
    ]
    with (
        running(exporter_args, tmp_path / "exporter.log"),
        running(prometheus_args, tmp_path / "prometheus.log"),
    ):
        query = urllib.parse.quote("node_health_metric")
        url = f"http://127.0.0.1:{prometheus_port}/api/v1/query?query={query}"

        def three_nodes() -> dict[str, str]:
            results = json.loads(_get(url))["data"]["result"]
            values = {r["metric"]["instance"]: r["value"][1] for r in results}
            return values if len(values) == 3 else {}

        assert _wait_for(three_nodes) == {"node-a": "0", "node-b": "1", "node-c": "2"}
