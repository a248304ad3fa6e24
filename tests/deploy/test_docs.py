"""The upgrade guide, the deployment guide and the troubleshooting guide say what the code does.

Covered: docs/upgrade-from-tas.md names every TAS flag the translator handles and the new flag
of each, and every flag it names is TAS's, a `tas` subcommand's or a shipped script's; it says
what breaks the switch, in TAS's own object names (the Service, Secret, ServiceAccount,
ClusterRole and ClusterRoleBinding of TAS's manifests, kube-scheduler's client certificate
under /host/certs), the circuit breaker and how to turn it off, TAS's `--cacert` default, and
pipes `kubectl get` into `tas validate -`; every object of this project the deployment and
upgrade guides name (`tas-...`) exists in deploy/, or is a Secret the guide has the user
create; the deployment guide's RBAC table lists exactly the grants of the shipped roles;
docs/troubleshooting.md has the five problems (extender not called, metric not found,
pods not evicted, a hot node not rebalanced, certificate errors), each with symptoms, checks
and a fix, and every log line it quotes is one the code (or kube-scheduler, Prometheus, curl)
really writes: the project's own are found in the source, so a reworded message fails here
until the guide follows.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
import yaml

from tas.tas_flags import TAS_DEFAULT_CACERT, TAS_FLAG_NAMES
from tas_cli.main import build_parser
from tests.deploy.kustomize import Document
from tests.deploy.pipeline import rendered

ROOT = Path(__file__).resolve().parents[2]
UPGRADE = ROOT / "docs" / "upgrade-from-tas.md"
DEPLOY_GUIDE = ROOT / "docs" / "deploy.md"
DEPLOY = ROOT / "deploy"
TROUBLESHOOTING = ROOT / "docs" / "troubleshooting.md"
SOURCES = ("extender", "policy_controller", "descheduler", "tas", "tas_cli")

#: Fragments of this project's log lines that the troubleshooting guide quotes.
OUR_LOG_LINES = [
    "Filtered nodes available for",
    "every node %s (%s)",
    "fetch of %s failed",
    "works again",
    "Evicted pod%s",
    " in dry run mode",
    "Not evicting %s/%s (%s)",
    "is cooling down",
    "no other Ready node would accept it (nodeFit)",
    "Circuit breaker open",
    "violate at once, more than the",
    "Cycle skipped",
    "fewer than two Ready nodes in scope",
    "refused (PodDisruptionBudget)",
    "Node has no fresh usage, not classified",
    "All nodes are underutilized, nothing to do here",
    "estimated=true",
    "Node is not overutilized for %d cycles in a row yet, not rebalanced",
    "Node did not come near saturating within %gs, not rebalanced",
    "Node is not at risk of stalling, not rebalanced",
    "Replacements of moved pods are left to settle",
    "No move off the node pays",
    "Move does not pay",
    "refusing to serve without TLS",
    "cannot load the certificate",
]


def _source_text() -> str:
    return "\n".join(
        path.read_text(encoding="utf-8")
        for package in SOURCES
        for path in sorted((ROOT / package).rglob("*.py"))
    )


@pytest.mark.parametrize("name", sorted(TAS_FLAG_NAMES))
def test_the_upgrade_guide_maps_every_tas_flag(name: str) -> None:
    text = UPGRADE.read_text(encoding="utf-8")
    assert f"`--{name}" in text or f"--{name}`" in text or f"--{name}," in text, name


@pytest.mark.parametrize(
    "new_flag", ["--kubeconfig", "--listen", "--insecure-http", "--sync-period", "--log-level"]
)
def test_the_upgrade_guide_names_each_replacement(new_flag: str) -> None:
    assert new_flag in UPGRADE.read_text(encoding="utf-8")


def _our_flags() -> set[str]:
    """Every option of every `tas` subcommand."""
    flags: set[str] = set()
    for action in build_parser()._subparsers._group_actions:  # type: ignore[union-attr]
        for subparser in action.choices.values():  # type: ignore[union-attr]
            for option in subparser._actions:
                flags.update(o for o in option.option_strings if o.startswith("--"))
    return flags


def _script_flags(path: Path) -> set[str]:
    """The options a shell script's `case` arms accept (`    --name)`)."""
    return set(re.findall(r"^\s*(--[a-z-]+)\)", path.read_text(encoding="utf-8"), re.MULTILINE))


def test_every_flag_the_upgrade_guide_names_exists() -> None:
    known = (
        {f"--{name}" for name in TAS_FLAG_NAMES}
        | _our_flags()
        | _script_flags(ROOT / "scripts" / "gen-certs.sh")
        | _script_flags(DEPLOY / "health-metric-demo" / "set-health.sh")
        | {"--flag"}  # Go's flag grammar, `-flag` and `--flag`
    )
    named = set(re.findall(r"(?<![\w-])--[A-Za-z][\w-]*", UPGRADE.read_text(encoding="utf-8")))
    assert named - known == set()


#: What TAS shipped, as the upgrade guide must name it (intel/platform-aware-scheduling,
#: telemetry-aware-scheduling/deploy/...): fragment -> where TAS has it.
TAS_FACTS = {
    "`tas-service`": "tas-service.yaml: the Service",
    "`extender-secret`": "tas-deployment.yaml: the Secret of the extender's certificate",
    "`telemetry-aware-scheduling-service-account`": "tas-rbac-accounts.yaml: the ServiceAccount",
    "`policy-handler`": "tas-rbac-accounts.yaml: the ClusterRole",
    "`handle-policies`": "tas-rbac-accounts.yaml: the ClusterRoleBinding",
    "`/host/certs`": "configure-scheduler.sh: kube-scheduler's client certificate, the CA's own",
    "https://tas-service.telemetry-aware-scheduling.svc.cluster.local:9001": (
        "extender-configuration/scheduler-config.yaml: the urlPrefix"
    ),
    TAS_DEFAULT_CACERT: "cmd/main.go: the --cacert default",
}


@pytest.mark.parametrize("fragment", sorted(TAS_FACTS))
def test_the_upgrade_guide_names_tas_s_objects_as_tas_ships_them(fragment: str) -> None:
    assert fragment in UPGRADE.read_text(encoding="utf-8"), TAS_FACTS[fragment]


@pytest.mark.parametrize(
    "fragment",
    [
        pytest.param("ignorable: true", id="why a rejected client certificate goes unnoticed"),
        pytest.param("Skipping extender as it returned error", id="the log line that shows it"),
        pytest.param("`tlsConfig`", id="replace kube-scheduler's tlsConfig"),
        pytest.param("scripts/gen-certs.sh", id="the command that makes new certificates"),
        pytest.param("--max-violating-node-share 1", id="TAS's all-violating behaviour back"),
        pytest.param("| tas\n  validate -", id="kubectl get piped into tas validate -"),
    ],
)
def test_the_upgrade_guide_says_what_breaks_the_switch(fragment: str) -> None:
    text = UPGRADE.read_text(encoding="utf-8")
    assert re.sub(r"\s+", " ", fragment.replace("\\n", "\n")) in re.sub(r"\s+", " ", text)


@functools.cache
def _shipped() -> list[Document]:
    """Every object deploy/ ships: the kustomizations rendered, and the loose manifests."""
    objects: list[Document] = []
    for kustomization in DEPLOY.rglob("kustomization.yaml"):
        objects.extend(rendered(kustomization.parent))
    for path in DEPLOY.rglob("*.yaml"):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(document, dict) and "kind" in document and "metadata" in document:
                objects.append(document)
    return objects


@pytest.mark.parametrize("doc", [DEPLOY_GUIDE, UPGRADE], ids=lambda p: p.name)
def test_every_object_of_ours_the_guides_name_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    names = {o["metadata"]["name"] for o in _shipped()}
    # Secrets the user makes from scripts/gen-certs.sh's output, as docs/deploy.md says.
    created = set(re.findall(r"create secret (?:generic|tls) ([\w-]+)", DEPLOY_GUIDE.read_text()))
    # `tas-extender.telemetry-aware-scheduling.svc`: a Service, by its first DNS label; TAS's
    # own file names (`tas-service.yaml`) and Service (`tas-service`) are not ours.
    named = {
        m.split(".")[0]
        for m in re.findall(r"`(tas-[\w.-]*[\w])`", text)
        if not m.endswith((".yaml", ".sh"))
    }
    # Certificate names scripts/gen-certs.sh gives (`tas-kube-scheduler`, the scraper's).
    subjects = set(
        re.findall(r'-subj "/CN=([\w-]+)"', (ROOT / "scripts" / "gen-certs.sh").read_text())
    )
    assert named
    assert named - names - created - subjects - {"tas-service"} == set()


def _grants(text: str) -> set[tuple[str, str]]:
    """(resource, verb) pairs of an RBAC table cell: "`a`, `b`: list, watch (why); `c`: get"."""
    pairs: set[tuple[str, str]] = set()
    cell = re.sub(r"\([^()]*\)", "", text)  # the explanations in parentheses
    for part in cell.split(";"):
        resources, _, verbs = part.partition(":")
        for resource in re.findall(r"`([^`]+)`", resources):
            pairs.update((resource, verb.strip()) for verb in verbs.split(",") if verb.strip())
    return pairs


def _role_grants(kind: str, name: str) -> set[tuple[str, str]]:
    (role,) = [
        o
        for o in rendered(DEPLOY / "cluster")
        if o["kind"] == kind and o["metadata"]["name"] == name
    ]
    return {
        (resource, verb)
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


@pytest.mark.parametrize("account", ["tas-extender", "tas-policy-controller", "tas-descheduler"])
def test_the_deploy_guide_s_rbac_table_lists_each_role_s_grants(account: str) -> None:
    text = DEPLOY_GUIDE.read_text(encoding="utf-8")
    (row,) = [line for line in text.splitlines() if line.startswith(f"| `{account}` |")]
    _, cluster_wide, in_namespace, _ = (cell.strip() for cell in row.split("|")[1:])
    documented = _grants(cluster_wide)
    shipped = _role_grants("ClusterRole", account)
    # Every grant the table names is in the role, and every resource the role grants is in
    # the table: otherwise the guide no longer says what the manifests grant.
    assert documented <= shipped, sorted(documented - shipped)
    mentioned = {resource for resource, _ in documented}
    assert {resource for resource, _ in shipped} <= mentioned, sorted(shipped)
    if in_namespace != "-":
        assert _grants(in_namespace) <= _role_grants("Role", f"{account}-leader-election")


@pytest.mark.parametrize(
    "problem",
    [
        "The extender is not called",
        "A metric is not found",
        "Pods are not evicted",
        "A hot node is not rebalanced (LoadAware)",
        "Certificate errors",
    ],
)
def test_the_troubleshooting_guide_covers_each_problem_with_symptoms_checks_and_a_fix(
    problem: str,
) -> None:
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    (section,) = [s for s in sections if s.startswith(problem)]
    assert "**Symptoms.**" in section
    assert "**Check" in section
    assert "**Fix.**" in section or "Test the handshake" in section


@pytest.mark.parametrize("fragment", OUR_LOG_LINES)
def test_every_log_line_the_guide_quotes_is_written_by_the_code(fragment: str) -> None:
    assert fragment in _source_text(), f"no longer in the code: {fragment!r}"
    # The guide quotes it with the values filled in.
    words = [w for w in re.split(r"%[sdg]|\(|\)", fragment) if w.strip()]
    text = TROUBLESHOOTING.read_text(encoding="utf-8")
    assert all(w.strip() in text for w in words), fragment


@pytest.mark.parametrize(
    "metric",
    sorted(set(re.findall(r"\b(tas_[a-z_]+)", TROUBLESHOOTING.read_text(encoding="utf-8")))),
)
def test_every_metric_the_guide_names_exists(metric: str) -> None:
    from tests.deploy.promql import exported_metric_names

    assert metric in exported_metric_names()
