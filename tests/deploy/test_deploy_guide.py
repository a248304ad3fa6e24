"""docs/deploy.md's commands are commands that work: kubeadm's flags, sudo, the install order and
uninstalling without losing data.

No kubeadm and no cluster run here, so what can be read is read: each kubeadm command line of
the guide's shell blocks is checked against the flags kubeadm documents for that command (its
reference pages on kubernetes.io, recorded below) and against kubeadm's rule for `--config`;
the configuration file the guide writes for kubeadm is written by running the guide's own
lines in bash.

Covered:
- every kubeadm command of the guide is a documented command with documented flags, and one
  that names `--config` names no flag kubeadm refuses beside it (`can not mix '--config' with
  arguments [patches]`); the check catches the old `--config ... --patches` line;
- the guide's lines write a kubeadm configuration of two documents: an InitConfiguration of the
  cluster's own API version whose `patches.directory` is where the guide installs the patch,
  then the cluster's ClusterConfiguration unchanged; every `--patches` names that directory;
- no command the guide runs without sudo reads or writes a root-only path (/root,
  /etc/kubernetes), and no redirection writes one (the shell, not sudo, opens it);
- each profile's install steps apply the CRD (crds/) first and then that profile, after the
  namespaces its Secrets go into, and create no namespace it does not own (never `monitoring`);
  every directory the guide applies with `-k` (in a shell block or in its prose, as the
  optional deploy/descheduler-taints) is named again in the uninstall section; every Secret it
  creates outside its own namespaces (the adapter's key in `monitoring`) is deleted there by
  name; deploy/descheduler-taints goes after the check that its taints are cleared and before
  the profile that removes the descheduler (which clears them); nothing
  the uninstall steps delete renders the CRD or a namespace of others (only
  telemetry-aware-scheduling and tas-monitoring), and the CRD is deleted only under "Removing
  the TASPolicies, on purpose", after a copy of the policies is kept;
- the APIService of deploy/metrics-pipeline/prometheus-adapter is created, never applied, in
  both guides, after `kubectl get apiservice v1beta1.custom.metrics.k8s.io -o yaml`;
- every Secret the prometheus-adapter reads is created by the guide in its namespace (each
  profile's Secrets: tests/deploy/test_stack_fixtures.py, against that profile's steps).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy.guide import (
    GUIDE,
    OWNED_NAMESPACES,
    install_steps,
    section,
    shell_blocks,
    shell_lines,
    uninstall_deletes,
)
from tests.deploy.pipeline import ROOT, rendered
from tests.deploy.shipped import secrets_read

UPGRADE = ROOT / "docs" / "upgrade-from-tas.md"

#: kubeadm's documented flags per command, from its reference pages (kubernetes.io, Reference >
#: Setup tools > Kubeadm, generated for v1.34: kubeadm_init_phase_control-plane_scheduler,
#: kubeadm_join, kubeadm_upgrade_apply, kubeadm_upgrade_node), with the inherited `--rootfs`.
KUBEADM_FLAGS: dict[tuple[str, ...], set[str]] = {
    ("init", "phase", "control-plane", "scheduler"): {
        "--cert-dir",
        "--config",
        "--dry-run",
        "--help",
        "--image-repository",
        "--kubernetes-version",
        "--patches",
    },
    ("join",): {
        "--apiserver-advertise-address",
        "--apiserver-bind-port",
        "--certificate-key",
        "--config",
        "--control-plane",
        "--cri-socket",
        "--discovery-file",
        "--discovery-token",
        "--discovery-token-ca-cert-hash",
        "--discovery-token-unsafe-skip-ca-verification",
        "--dry-run",
        "--help",
        "--ignore-preflight-errors",
        "--node-name",
        "--patches",
        "--skip-phases",
        "--tls-bootstrap-token",
        "--token",
    },
    ("upgrade", "apply"): {
        "--allow-experimental-upgrades",
        "--allow-release-candidate-upgrades",
        "--certificate-renewal",
        "--config",
        "--dry-run",
        "--etcd-upgrade",
        "--feature-gates",
        "--force",
        "--help",
        "--ignore-preflight-errors",
        "--kubeconfig",
        "--patches",
        "--print-config",
        "--yes",
    },
    ("upgrade", "node"): {
        "--certificate-renewal",
        "--config",
        "--dry-run",
        "--etcd-upgrade",
        "--help",
        "--ignore-preflight-errors",
        "--kubeconfig",
        "--patches",
    },
}
INHERITED_FLAGS = {"--rootfs"}
#: The flags kubeadm accepts beside `--config`; any other is refused with "can not mix
#: '--config' with arguments [...]" (kubernetes/kubernetes, cmd/kubeadm/app/apis/kubeadm/
#: validation/validation.go: ValidateMixedArguments and isAllowedFlag), and so is every `--skip-*`.
ALLOWED_WITH_CONFIG = {
    "--config",
    "--ignore-preflight-errors",
    "--dry-run",
    "--kubeconfig",
    "--node-name",
    "--kubeconfig-dir",
    "--upload-certs",
    "--print-join-command",
    "--rootfs",
    "--v",
    "--log-file",
}
PATCHES_DIR = "/etc/kubernetes/tas-patches"


def check_kubeadm(line: str) -> list[str]:
    """Problems of one kubeadm command line: an undocumented command or flag, a refused mix."""
    words = shlex.split(line)
    if words[:1] == ["sudo"]:
        words = words[1:]
    assert words[0] == "kubeadm", line
    path = max(
        (p for p in KUBEADM_FLAGS if tuple(words[1 : 1 + len(p)]) == p), key=len, default=None
    )
    if path is None:
        return [f"not a command recorded from kubeadm's reference: {line}"]
    flags = [w.split("=", 1)[0] for w in words if w.startswith("-")]
    flags = [{"-f": "--force", "-y": "--yes", "-h": "--help"}.get(f, f) for f in flags]
    problems = [
        f"kubeadm {' '.join(path)}: {flag} is not a documented flag"
        for flag in flags
        if flag not in KUBEADM_FLAGS[path] | INHERITED_FLAGS
    ]
    if "--config" in flags:
        problems += [
            f"kubeadm {' '.join(path)}: can not mix '--config' with {flag}"
            for flag in flags
            if flag not in ALLOWED_WITH_CONFIG and not flag.startswith("--skip-")
        ]
    return problems


def kubeadm_lines() -> list[str]:
    return [line for line in shell_lines(GUIDE) if re.match(r"^(sudo\s+)?kubeadm\s", line)]


# --- kubeadm -----------------------------------------------------------------------------------


def test_the_guide_runs_kubeadm_for_the_scheduler_joins_and_upgrades() -> None:
    commands = {tuple(shlex.split(line.removeprefix("sudo "))[1:3]) for line in kubeadm_lines()}
    assert {("init", "phase"), ("join", "ENDPOINT"), ("upgrade", "apply"), ("upgrade", "node")} <= (
        commands
    )


@pytest.mark.parametrize("line", kubeadm_lines())
def test_every_kubeadm_command_uses_documented_flags_only_and_no_refused_mix(line: str) -> None:
    assert check_kubeadm(line) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        pytest.param(
            "sudo kubeadm init phase control-plane scheduler --config kubeadm.yaml "
            "--patches /etc/kubernetes/tas-patches",
            "can not mix '--config' with --patches",
            id="the old documented line",
        ),
        pytest.param(
            "kubeadm upgrade apply v1.31.0 --patch /etc/kubernetes/tas-patches",
            "--patch is not a documented flag",
            id="a misspelt flag",
        ),
        pytest.param("kubeadm alpha patches", "not a command recorded", id="unknown command"),
    ],
)
def test_the_kubeadm_check_finds_what_kubeadm_refuses(line: str, problem: str) -> None:
    assert any(problem in found for found in check_kubeadm(line)), check_kubeadm(line)


def test_every_patches_flag_names_the_directory_the_patch_is_installed_in() -> None:
    installs = [
        line
        for line in shell_lines(GUIDE)
        if "kube-scheduler+strategic.yaml" in line and line.startswith("sudo install -m")
    ]
    (install,) = installs
    assert shlex.split(install)[-1].rstrip("/") == PATCHES_DIR
    for line in kubeadm_lines():
        words = shlex.split(line)
        if "--patches" in words:
            assert words[words.index("--patches") + 1] == PATCHES_DIR, line


#: A ClusterConfiguration as `kubectl -n kube-system get configmap kubeadm-config -o
#: jsonpath='{.data.ClusterConfiguration}'` prints it (kubeadm 1.31, v1beta4; shortened).
CLUSTER_CONFIGURATION = """\
apiVersion: kubeadm.k8s.io/v1beta4
kind: ClusterConfiguration
certificatesDir: /etc/kubernetes/pki
clusterName: kubernetes
controlPlaneEndpoint: cp.example:6443
kubernetesVersion: v1.31.2
networking:
  dnsDomain: cluster.local
  serviceSubnet: 10.96.0.0/12
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_the_guide_writes_a_kubeadm_configuration_with_the_patches_directory(
    tmp_path: Path,
) -> None:
    (block,) = [b for b in shell_blocks(GUIDE) if "cat > kubeadm-tas.yaml" in b]
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("cat > kubeadm-tas.yaml"))
    end = next(i for i in range(start + 1, len(lines)) if lines[i] == "EOF")
    fetch = next(line for line in lines if "get configmap kubeadm-config" in line)
    assert fetch.endswith("> kubeadm-cluster.yaml")  # the file the heredoc reads
    (tmp_path / "kubeadm-cluster.yaml").write_text(CLUSTER_CONFIGURATION)
    script = "\n".join(lines[start : end + 1]) + "\n"
    result = subprocess.run(
        ["bash", "-euc", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    init, cluster = yaml.safe_load_all((tmp_path / "kubeadm-tas.yaml").read_text())
    assert init == {
        "apiVersion": "kubeadm.k8s.io/v1beta4",
        "kind": "InitConfiguration",
        "patches": {"directory": PATCHES_DIR},
    }
    assert cluster == yaml.safe_load(CLUSTER_CONFIGURATION)
    runs = [line for line in kubeadm_lines() if "--config" in line and "init phase" in line]
    assert runs
    assert all(shlex.split(run)[-1] == "kubeadm-tas.yaml" for run in runs)


# --- sudo --------------------------------------------------------------------------------------

ROOT_ONLY = ("/root", "/etc/kubernetes")


def root_only_problems(line: str) -> list[str]:
    """Root-only paths a shell line would touch without root: a redirection (the user's shell
    opens it, sudo or not) or any path in a command not run with sudo."""
    problems = [t for t in re.findall(r">\s*(\S+)", line) if t.startswith(ROOT_ONLY)]
    if not line.startswith("sudo "):
        problems += [p for p in ROOT_ONLY if p in line]
    return problems


def test_no_command_without_sudo_touches_a_root_only_path() -> None:
    for line in shell_lines(GUIDE):
        assert root_only_problems(line) == [], line


@pytest.mark.parametrize(
    "line",
    [
        pytest.param(
            "kubectl patch --local -f /root/kube-scheduler.yaml.orig --type strategic",
            id="the old fallback: a copy sudo made, read without it",
        ),
        pytest.param(
            "sudo kubectl patch --local -f k.yaml -o yaml > /etc/kubernetes/manifests/k.yaml",
            id="a redirection into a root-only directory",
        ),
    ],
)
def test_the_sudo_check_finds_a_root_only_path_touched_without_root(line: str) -> None:
    assert root_only_problems(line)


# --- install and uninstall ------------------------------------------------------------------


PROFILES = ("standalone", "kube-prometheus", "kube-prometheus-stack")


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_s_steps_apply_the_crd_first_then_the_profile(profile: str) -> None:
    applies = [shlex.split(s) for s in install_steps(profile) if s.startswith("kubectl apply")]
    assert applies[0][:4] == ["kubectl", "apply", "-f", "crds/"]
    kustomized = [words[3] for words in applies if words[2] == "-k"]
    assert kustomized == [f"deploy/profiles/{profile}"]


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_s_steps_create_only_namespaces_it_owns_before_their_secrets(
    profile: str,
) -> None:
    steps = install_steps(profile)
    assert not any("create namespace" in step for step in steps)
    created: set[str] = set()
    for step in steps:
        words = shlex.split(step)
        if words[:3] == ["kubectl", "apply", "-f"]:
            files = [words[i + 1] for i, w in enumerate(words) if w == "-f"]
            for file in [f for f in files if (ROOT / f).is_file()]:
                for obj in yaml.safe_load_all((ROOT / file).read_text(encoding="utf-8")):
                    if obj and obj["kind"] == "Namespace":
                        created.add(obj["metadata"]["name"])
        if words[:2] == ["kubectl", "-n"] and "secret" in words:
            assert words[2] in created, step
    assert created <= OWNED_NAMESPACES | {"health-metric-demo"}  # the demo's, step 6
    rendered_namespaces = {
        o["metadata"]["name"]
        for o in rendered(ROOT / "deploy" / "profiles" / profile)
        if o["kind"] == "Namespace"
    }
    assert rendered_namespaces <= OWNED_NAMESPACES


def _applied_directories() -> set[str]:
    """Every directory the guide applies with `-k`: in its shell blocks, and in its prose (an
    optional part, such as deploy/descheduler-taints, is named there)."""
    found = set()
    for line in shell_lines(GUIDE):
        words = shlex.split(line)
        if words[:2] == ["kubectl", "apply"] and "-k" in words:
            found.add(words[words.index("-k") + 1].rstrip("/"))
    text = GUIDE.read_text(encoding="utf-8")
    found.update(d.rstrip("/") for d in re.findall(r"kubectl apply -k (deploy/[\w./-]+)", text))
    return found


def test_every_directory_the_guide_applies_is_named_in_the_uninstall_section() -> None:
    uninstall = section("11. Uninstall and rollback")
    applied = _applied_directories()
    assert {f"deploy/profiles/{profile}" for profile in PROFILES} <= applied
    for directory in applied:
        assert directory in uninstall, directory


def test_every_secret_the_guide_creates_outside_its_namespaces_is_deleted_on_uninstall() -> None:
    """A Secret in our namespaces goes with them; one in another's namespace (the adapter's
    key in `monitoring`) is deleted by name, or a private key would outlive the install."""
    created = _created_secrets(GUIDE.read_text(encoding="utf-8"))
    assert ("monitoring", "tas-prometheus-adapter-tls") in created
    uninstall = [line for line in shell_lines(GUIDE) if line in section("11. Uninstall")]
    for namespace, name in created:
        if namespace in OWNED_NAMESPACES:
            continue
        deletes = [
            shlex.split(line)
            for line in uninstall
            if line.startswith(f"kubectl -n {namespace} delete")
        ]
        assert any(words[-2:] == ["secret", name] for words in deletes), (namespace, name)


def test_the_descheduler_s_taints_are_cleared_and_its_grant_removed_before_the_profile() -> None:
    """The descheduler clears the taints it set only while it runs: deploy/descheduler-taints
    goes after its taints are gone (the check prints them), before the profile removes it."""
    uninstall = section("11. Uninstall and rollback")
    targets = [words[words.index("-k") + 1] for words in uninstall_deletes() if "-k" in words]
    taints = targets.index("deploy/descheduler-taints")
    assert all(taints < targets.index(f"deploy/profiles/{p}") for p in PROFILES)
    check = uninstall.index("| grep telemetry.aware.scheduling/")
    assert check < uninstall.index("kubectl delete --ignore-not-found -k deploy/descheduler-taints")


def test_the_uninstall_steps_delete_no_crd_and_no_namespace_of_others() -> None:
    deletes = uninstall_deletes()
    assert deletes
    for words in deletes:
        target = words[words.index("-k" if "-k" in words else "-f") + 1]
        assert not target.startswith("crds"), words
        if "-k" not in words:
            continue
        objects = rendered(ROOT / target)
        assert [o for o in objects if o["kind"] == "CustomResourceDefinition"] == [], target
        namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
        assert namespaces <= OWNED_NAMESPACES, target
        assert "monitoring" not in namespaces, target


def test_the_crd_is_deleted_only_on_purpose_after_a_copy_of_the_policies() -> None:
    text = GUIDE.read_text(encoding="utf-8")
    deletes = [m.start() for m in re.finditer(r"kubectl delete -f crds/", text)]
    assert len(deletes) == 1
    purpose = text.index("**Removing the TASPolicies, on purpose.**")
    backup = text.index("kubectl get taspolicies -A -o yaml > taspolicies.yaml")
    assert purpose < backup < deletes[0]
    assert "kubectl delete -k crds" not in text


@pytest.mark.parametrize("doc", [GUIDE, UPGRADE], ids=lambda p: p.name)
def test_the_api_service_is_created_never_applied(doc: Path) -> None:
    text = re.sub(r"\s+", " ", doc.read_text(encoding="utf-8"))
    apiservice = "deploy/metrics-pipeline/prometheus-adapter/apiservice.yaml"
    assert f"kubectl create -f {apiservice}" in text
    assert f"kubectl apply -f {apiservice}" not in text
    if doc == GUIDE:
        check = text.index("kubectl get apiservice v1beta1.custom.metrics.k8s.io -o yaml")
        assert check < text.index(f"kubectl create -f {apiservice}")


def test_the_kube_prometheus_stack_profile_is_documented_with_its_release() -> None:
    text = re.sub(r"\s+", " ", section("4. Metrics: node-exporter, Prometheus, prometheus-adapter"))
    for needed in (
        "kubectl apply -k deploy/profiles/kube-prometheus-stack",
        "deploy/profiles/kube-prometheus-stack/release-label.yaml",
        "serviceMonitorSelectorNilUsesHelmValues",
        "ruleSelectorNilUsesHelmValues",
        "prometheus-k8s-tas-components",
        "RELEASE",
    ):
        assert needed in text, needed
    # Every line the guide sends the reader to is marked in the profile.
    profile = ROOT / "deploy" / "profiles" / "kube-prometheus-stack"
    marked = sum(p.read_text().count("RELEASE:") for p in profile.glob("*.yaml"))
    assert marked == 4


def _created_secrets(text: str) -> set[tuple[str, str]]:
    """(namespace, name) of every Secret the guide's commands create."""
    return set(re.findall(r"kubectl -n ([\w-]+) create secret (?:generic|tls) ([\w-]+)", text))


def test_every_secret_the_adapter_reads_is_created_by_the_guide_in_its_namespace() -> None:
    created = _created_secrets(GUIDE.read_text(encoding="utf-8"))
    read = secrets_read(rendered(ROOT / "deploy" / "metrics-pipeline" / "prometheus-adapter"))
    missing = {(ns, name, who) for ns, name, who in read if (ns, name) not in created}
    assert not missing, f"read but never created there: {sorted(missing)}"


def test_the_second_scheduler_is_applied_at_the_api_server_s_version() -> None:
    """Its shipped tag is one release; on any other minor it would be outside the version skew
    policy (kube-scheduler never newer than the API server, at most one minor older)."""
    text = GUIDE.read_text(encoding="utf-8")
    manifest = (ROOT / "deploy" / "scheduler" / "second-scheduler.yaml").read_text()
    (shipped,) = re.findall(r"image: (registry\.k8s\.io/kube-scheduler:v[0-9.]+)", manifest)
    block = text.split("### Way 2: a second scheduler", 1)[1].split("```sh\n", 1)[1]
    block = block.split("```", 1)[0]
    assert "kubectl apply -f deploy/scheduler/second-scheduler.yaml" not in block
    (version_line,) = [line for line in block.splitlines() if line.startswith("version=")]
    sed_line = next(line for line in block.splitlines() if line.startswith("sed "))
    # The server's answer to /version, and the substitution the guide makes with it.
    answer = (
        '{\n  "major": "1",\n  "minor": "34",\n  "gitVersion": "v1.34.2",\n  "platform": "x"\n}'
    )
    script = version_line.split("$(kubectl get --raw /version | ", 1)[1].rstrip(")")
    found = subprocess.run(
        ["sh", "-c", script], input=answer, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert found == "v1.34.2"
    pattern = sed_line.split('"', 2)[1].replace("$version", found)
    applied = subprocess.run(
        ["sed", pattern], input=shipped, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert applied == "registry.k8s.io/kube-scheduler:v1.34.2"


def test_no_kubeadm_command_mixes_config_with_patches() -> None:
    """kubeadm refuses `--patches` beside `--config`: the configuration file names the
    patches directory instead."""
    sources = [*sorted((ROOT / "deploy").rglob("*.yaml")), *sorted((ROOT / "docs").glob("*.md"))]
    mixed = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for path in sources
        for line in path.read_text(encoding="utf-8").splitlines()
        if "kubeadm " in line and "--config" in line and "--patches" in line
    ]
    assert mixed == []


def testuninstall_deletes_the_api_service_only_while_it_points_at_this_adapter() -> None:
    """One APIService of that name serves the cluster's custom metrics: deleting it by name
    would take another adapter's (TAS's Helm chart's, a prometheus-adapter's) away."""
    text = GUIDE.read_text(encoding="utf-8")
    uninstall = text.split("## 11. Uninstall and rollback", 1)[1].split("\n## ", 1)[0]
    delete = "kubectl delete -f deploy/metrics-pipeline/prometheus-adapter/apiservice.yaml"
    guard, _, _ = uninstall.partition(delete)
    assert delete in uninstall
    (service,) = yaml.safe_load_all(
        (ROOT / "deploy/metrics-pipeline/prometheus-adapter/apiservice.yaml").read_text()
    )
    target = service["spec"]["service"]
    condition = guard.rsplit("[ ", 1)[1]
    assert "-o jsonpath='{.spec.service.namespace}/{.spec.service.name}'" in condition
    assert f"= {target['namespace']}/{target['name']} ] &&" in condition


def test_the_upgrade_guide_trusts_the_adapter_as_the_shipped_api_service_does() -> None:
    """The shipped APIService verifies the adapter against `caBundle`; the upgrade guide's
    create step is followed by giving it that CA, and never names skipping verification but to
    refuse it."""
    apiservice = ROOT / "deploy/metrics-pipeline/prometheus-adapter/apiservice.yaml"
    (shipped,) = yaml.safe_load_all(apiservice.read_text(encoding="utf-8"))
    assert "insecureSkipTLSVerify" not in shipped["spec"]
    text = re.sub(r"\s+", " ", UPGRADE.read_text(encoding="utf-8"))
    create = "kubectl create -f deploy/metrics-pipeline/prometheus-adapter/apiservice.yaml"
    for after in text.split(create)[1:]:
        assert "caBundle" in after.split(". ", 1)[0], after[:200]
    for found in re.finditer("insecureSkipTLSVerify", text):
        assert "never" in text[max(0, found.start() - 12) : found.start()]
