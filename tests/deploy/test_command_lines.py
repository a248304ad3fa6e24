"""The `tas` command lines the manifests and docker-compose run.

Covered:
- they use only the documented subcommands and flags, and parse with the `tas` command's own
  argument parser;
- the extender serves mTLS in the cluster (only kube-scheduler's certificate, as
  scripts/gen-certs.sh names it, may filter) and plain HTTP only in compose, on 127.0.0.1;
- the components read metrics from the Prometheus the install profile names;
- the policy controller runs a warm standby (two replicas, leader election) with a
  PodDisruptionBudget and spread over nodes;
- the descheduler is shipped in Predictive mode with the shipped, valid policy.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from descheduler.config import load_config_text
from tests.deploy.pipeline import DEPLOY
from tests.deploy.shipped import (
    GEN_CERTS,
    IMAGE,
    compose_file,
    containers,
    tas_containers,
    the_object,
)

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


def every_tas_command() -> list[tuple[str, list[str]]]:
    found = [(f"deployment {name}", list(c["args"])) for name, c in tas_containers()]
    for name, service in compose_file()["services"].items():
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
    compose = compose_file()["services"]["extender"]
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
