"""Way 1 on kubeadm and kind: kube-scheduler can read its configuration and client certificate.

kubeadm's kube-scheduler Pod mounts only /etc/kubernetes/scheduler.conf; a scheduler told to
read files elsewhere crash-loops. Covered:
- the kubeadm patch (deploy/scheduler/kubeadm-patches), applied to the Pod kubeadm writes
  (tests/deploy/fixtures), gives a valid Pod that keeps kubeadm's command and mounts, passes
  `--config` with the shipped configuration's path, mounts that directory read-only from the
  host, and with it every file the configuration names (client certificate, key, CA, the
  kubeconfig), and resolves the extender's Service name through the cluster DNS; where kubectl
  is installed, `kubectl patch --local` (the documented manual route) gives the same Pod;
- kind (deploy/kind/cluster.yaml) mounts the staged files where the patch expects them and
  points kubeadm at the same patches through kubeadmConfigPatches; scripts/e2e-kind.sh stages
  every file the configuration names;
- `make e2e-kind` (scripts/e2e-kind.sh) is opt-in: without kind or docker it says why and
  exits 0, before touching anything; the scripts are valid bash;
- docs/deploy.md shows the patch for kubeadm and the kind route.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import kubernetes_validate
import pytest
import yaml

from tests.deploy.kustomize import Document, strategic_merge
from tests.deploy.pipeline import DEPLOY, ROOT

FIXTURE = Path(__file__).parent / "fixtures" / "kubeadm-kube-scheduler.yaml"
PATCH_DIR = DEPLOY / "scheduler" / "kubeadm-patches"
PATCH = PATCH_DIR / "kube-scheduler+strategic.yaml"
CONFIG = DEPLOY / "scheduler" / "kube-scheduler-config.yaml"
KIND = DEPLOY / "kind" / "cluster.yaml"
E2E = ROOT / "scripts" / "e2e-kind.sh"
NAMESPACE = "telemetry-aware-scheduling"


def load(path: Path) -> Document:
    document: Document = yaml.safe_load(path.read_text(encoding="utf-8"))
    return document


def patched_pod() -> Document:
    return strategic_merge(load(FIXTURE), load(PATCH))


def config_flag(container: Document) -> PurePosixPath:
    (flag,) = [a for a in container.get("args", []) if a.startswith("--config=")]
    return PurePosixPath(flag.removeprefix("--config="))


def files_the_config_names() -> list[PurePosixPath]:
    config = load(CONFIG)
    (extender,) = config["extenders"]
    tls = extender["tlsConfig"]
    return [
        PurePosixPath(config["clientConnection"]["kubeconfig"]),
        *(PurePosixPath(tls[key]) for key in ("certFile", "keyFile", "caFile")),
    ]


def host_path_of(pod: Document, path: PurePosixPath) -> PurePosixPath | None:
    """Where on the host `path` in the container comes from (via a read-only hostPath mount)."""
    (container,) = pod["spec"]["containers"]
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    for mount in container["volumeMounts"]:
        mounted = PurePosixPath(mount["mountPath"])
        if path == mounted or mounted in path.parents:
            assert mount.get("readOnly") is True, mount
            host = PurePosixPath(volumes[mount["name"]]["hostPath"]["path"])
            return host / path.relative_to(mounted)
    return None


def test_the_patched_kubeadm_scheduler_pod_is_a_valid_pod() -> None:
    kubernetes_validate.validate(patched_pod(), kubernetes_validate.utils.latest_version(), True)


def test_the_patch_keeps_kubeadm_s_command_and_mounts() -> None:
    original, patched = load(FIXTURE), patched_pod()
    (before,), (after,) = original["spec"]["containers"], patched["spec"]["containers"]
    assert after["command"] == before["command"]
    assert all(m in after["volumeMounts"] for m in before["volumeMounts"])
    assert all(v in patched["spec"]["volumes"] for v in original["spec"]["volumes"])
    assert patched["spec"]["hostNetwork"] is True


def test_the_scheduler_reads_the_shipped_configuration_from_a_read_only_host_mount() -> None:
    pod = patched_pod()
    (container,) = pod["spec"]["containers"]
    path = config_flag(container)
    assert path.name == "scheduler-config.yaml"
    assert host_path_of(pod, path) == path  # the same path on the host, as docs/deploy.md says


@pytest.mark.parametrize("path", files_the_config_names(), ids=str)
def test_every_file_the_configuration_names_is_mounted(path: PurePosixPath) -> None:
    assert host_path_of(patched_pod(), path) == path


def test_the_extender_service_name_resolves_from_the_host_network() -> None:
    assert patched_pod()["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    (extender,) = load(CONFIG)["extenders"]
    assert f".{NAMESPACE}.svc.cluster.local:" in extender["urlPrefix"]


def test_without_the_patch_kubeadm_s_scheduler_cannot_read_its_client_certificate() -> None:
    # The defect the patch fixes: nothing but scheduler.conf is mounted.
    for path in files_the_config_names()[1:]:
        assert host_path_of(load(FIXTURE), path) is None


def test_the_patch_is_named_for_kubeadm() -> None:
    # kubeadm reads `<target>[suffix][+<patchtype>].(yaml|json)` and ignores other files.
    assert [p.name for p in PATCH_DIR.iterdir()] == ["kube-scheduler+strategic.yaml"]


def _kubectl_patches_files() -> bool:
    if shutil.which("kubectl") is None:
        return False
    help_text = subprocess.run(
        ["kubectl", "patch", "--help"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    return "--patch-file" in help_text


@pytest.mark.skipif(not _kubectl_patches_files(), reason="no kubectl with patch --patch-file")
def test_kubectl_patch_local_gives_the_same_pod() -> None:
    result = subprocess.run(
        [
            *("kubectl", "patch", "--local", "-f", str(FIXTURE), "--type", "strategic"),
            *("--patch-file", str(PATCH), "-o", "yaml"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert yaml.safe_load(result.stdout) == patched_pod()


# --- kind ------------------------------------------------------------------------------------


def control_plane() -> Document:
    nodes: list[Document] = load(KIND)["nodes"]
    (node,) = [n for n in nodes if n["role"] == "control-plane"]
    return node


def test_kind_mounts_the_staged_files_where_the_patch_reads_them() -> None:
    mounts = {m["containerPath"]: m for m in control_plane()["extraMounts"]}
    (container,) = patched_pod()["spec"]["containers"]
    config_dir = str(config_flag(container).parent)
    assert config_dir in mounts
    for path in files_the_config_names()[1:]:
        assert str(path.parent) == config_dir
    assert all(m["readOnly"] is True for m in mounts.values())


def test_kind_points_kubeadm_at_the_same_patches() -> None:
    node = control_plane()
    (patch_text,) = node["kubeadmConfigPatches"]
    patch = yaml.safe_load(patch_text)
    assert patch["kind"] == "InitConfiguration"
    directory = patch["patches"]["directory"]
    (mount,) = [m for m in node["extraMounts"] if m["containerPath"] == directory]
    assert mount["hostPath"].endswith("/kubeadm-patches")
    assert len([n for n in load(KIND)["nodes"] if n["role"] == "worker"]) >= 2


def test_the_walkthrough_stages_every_file_kind_mounts() -> None:
    script = E2E.read_text(encoding="utf-8")
    assert "deploy/kind/cluster.yaml" in script
    assert "deploy/scheduler/kubeadm-patches" in script
    assert 'scheduler-config.yaml"' in script
    for path in files_the_config_names()[1:]:
        assert f'"$work/certs/{path.name}"' in script, path.name
    for mount in control_plane()["extraMounts"]:
        staged = PurePosixPath(mount["hostPath"]).name
        assert f'"$work/{staged}"' in script, staged


# --- the walkthrough script ----------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [*sorted((ROOT / "scripts").rglob("*.sh")), DEPLOY / "health-metric-demo" / "set-health.sh"],
)
def test_scripts_are_valid_bash(script: Path) -> None:
    result = subprocess.run(
        ["bash", "-n", str(script)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr


def _stand_ins(tmp_path: Path, tools: dict[str, str]) -> dict[str, str]:
    """PATH with only these stand-in tools (name -> shell body) and the basic utilities."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in tools.items():
        tool = bin_dir / name
        tool.write_text(f"#!/bin/sh\n{body}\n")
        tool.chmod(0o755)
    for name in ("dirname", "mktemp", "rm", "grep", "sed", "cp", "mkdir", "cat", "sleep"):
        found = shutil.which(name)
        if found is not None:
            (bin_dir / name).symlink_to(found)
    return {**os.environ, "PATH": str(bin_dir)}


@pytest.mark.parametrize(
    ("tools", "reason"),
    [
        pytest.param({"docker": "exit 0", "kubectl": "exit 0"}, "kind is not installed", id="kind"),
        pytest.param({"kind": "exit 0", "kubectl": "exit 0"}, "docker is not installed", id="dkr"),
        pytest.param(
            {"docker": "exit 1", "kind": "exit 0", "kubectl": "exit 0"},
            "the docker daemon is not reachable",
            id="daemon down",
        ),
    ],
)
def test_the_walkthrough_skips_with_a_reason_where_its_tools_are_missing(
    tools: dict[str, str], reason: str, tmp_path: Path
) -> None:
    touched = tmp_path / "touched"
    tools = {name: f"echo {name} >> '{touched}'; {body}" for name, body in tools.items()}
    env = _stand_ins(tmp_path, tools)
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run(
        [bash, str(E2E)], capture_output=True, text=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert f"e2e-kind: SKIPPED: {reason}" in result.stderr
    assert "kind" not in (touched.read_text() if touched.exists() else "")  # no cluster made


def test_make_e2e_kind_runs_the_walkthrough() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "e2e-kind:\n\tbash scripts/e2e-kind.sh" in makefile
    phony = next(line for line in makefile.splitlines() if line.startswith(".PHONY:"))
    assert "e2e-kind" in phony.split()


def test_the_docs_show_way_1_as_a_kubeadm_patch_and_on_kind() -> None:
    docs = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for needed in (
        "deploy/scheduler/kubeadm-patches",
        "--patches",
        "kubectl patch --local",
        "deploy/kind/cluster.yaml",
        "make e2e-kind",
        "/etc/kubernetes/tas",
    ):
        assert needed in docs, needed
    assert "is usually mounted already" not in docs
