"""kube-scheduler reaches the extender: the Service, the extender's own scheduling, and both
kube-scheduler wirings.

Covered:
- the extender Service reaches the extender's pods on 9001, and the extender never needs itself
  to be scheduled (no telemetry policy or resource, the default scheduler, a priority class,
  tolerations, more replicas than its disruption budget keeps);
- both kube-scheduler wirings (the patched kube-scheduler and the second scheduler) point at the
  extender Service over HTTPS with the documented settings and the same weight, which the docs
  explain with its arithmetic; the patched one sends only pods that request telemetry
  scheduling; the second has its own name, lease and certificates, mounted where it reads them.
"""

from __future__ import annotations

import urllib.parse
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, ROOT
from tests.deploy.shipped import (
    NAMESPACE,
    containers,
    load_documents,
    the_object,
)

RECOMMENDED_WEIGHT = 5


def scheduler_configs() -> list[tuple[str, Document]]:
    patch = DEPLOY / "scheduler" / "kube-scheduler-config.yaml"
    (patched,) = load_documents(patch)
    config_map = the_object("ConfigMap", "tas-scheduler-config")
    second = yaml.safe_load(config_map["data"]["config.yaml"])
    return [("patched kube-scheduler", patched), ("second scheduler", second)]


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
