""".github/workflows/release.yml: a tag publishes the multi-arch image the manifests run, and
nothing else publishes.

No GitHub runner here, so the workflow is read: its YAML, its triggers, its permissions, the
inputs of each action, and its one shell step, which runs here in bash.

Covered:
- it parses, and only a pushed tag vX.Y.Z runs it (no branch, pull request or manual run);
- the token holds nothing at the top and, for the job, exactly `contents: read` and
  `packages: write`; no secret but the workflow's own token; no `${{ }}` expression inside a
  shell step (values reach scripts through `env`, so a tag name is never shell code);
- every action is pinned by a 40-hex commit, with the release it is beside it as a comment;
- buildx builds linux/amd64 and linux/arm64 (QEMU set up for arm64 before it), pushes only when
  the ref is a tag, as ghcr.io/<owner>/telemetry-aware-scheduling:<the tag's version>: the
  registry and repository deploy/cluster's `images` names;
- the version step passes for v<pyproject's version> and fails, with an error annotation, for
  any other tag.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.pipeline import DEPLOY, ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
Step = dict[str, Any]


def workflow() -> dict[Any, Any]:
    document: dict[Any, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    return document


def triggers() -> dict[str, Any]:
    document = workflow()
    found: dict[str, Any] = document.get("on", document.get(True))  # YAML 1.1 reads `on` as True
    return found


def steps() -> list[Step]:
    (job,) = workflow()["jobs"].values()
    found: list[Step] = job["steps"]
    return found


def step_using(action: str) -> Step:
    (found,) = [s for s in steps() if str(s.get("uses", "")).startswith(f"{action}@")]
    return found


def version() -> str:
    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def test_only_a_pushed_version_tag_runs_the_release() -> None:
    assert triggers() == {"push": {"tags": ["v[0-9]+.[0-9]+.[0-9]+"]}}


def test_the_token_holds_only_what_publishing_needs() -> None:
    document = workflow()
    assert document["permissions"] == {}
    (job,) = document["jobs"].values()
    assert job["permissions"] == {"contents": "read", "packages": "write"}
    text = WORKFLOW.read_text(encoding="utf-8")
    assert set(re.findall(r"secrets\.(\w+)", text)) == {"GITHUB_TOKEN"}
    checkout = step_using("actions/checkout")
    assert checkout["with"]["persist-credentials"] is False


def test_no_expression_is_pasted_into_a_shell_step() -> None:
    scripts = [s["run"] for s in steps() if "run" in s]
    assert scripts
    for script in scripts:
        assert "${{" not in script


def test_every_action_is_pinned_by_commit_with_its_release_beside_it() -> None:
    lines = [
        line
        for line in WORKFLOW.read_text(encoding="utf-8").splitlines()
        if line.strip().startswith(("uses:", "- uses:"))
    ]
    assert len(lines) == len([s for s in steps() if "uses" in s]) == 6
    for line in lines:
        assert re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line), line


def test_buildx_builds_amd64_and_arm64_and_pushes_only_for_a_tag() -> None:
    build = step_using("docker/build-push-action")["with"]
    assert set(build["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["context"] == "."
    assert build["push"] == "${{ startsWith(github.ref, 'refs/tags/v') }}"
    assert build["tags"] == "${{ steps.meta.outputs.tags }}"
    order = [str(s.get("uses", "")).partition("@")[0] for s in steps()]
    assert order.index("docker/setup-qemu-action") < order.index("docker/build-push-action")
    assert "arm64" in step_using("docker/setup-qemu-action")["with"]["platforms"]
    assert order.index("docker/login-action") < order.index("docker/build-push-action")
    assert step_using("docker/login-action")["with"]["registry"] == "ghcr.io"


def test_the_image_pushed_is_the_one_deploy_cluster_names() -> None:
    meta = step_using("docker/metadata-action")
    assert meta["id"] == "meta"
    pushed = meta["with"]["images"]
    assert pushed == "ghcr.io/${{ github.repository_owner }}/telemetry-aware-scheduling"
    assert meta["with"]["tags"] == "type=semver,pattern={{version}}"  # v0.1.0 -> 0.1.0
    kustomization = yaml.safe_load((DEPLOY / "cluster" / "kustomization.yaml").read_text())
    (image,) = kustomization["images"]
    registry, _, repository = image["newName"].split("/")
    assert pushed.split("/")[0] == registry
    assert pushed.split("/")[2] == repository
    assert str(image["newTag"]) == version()


def _run_version_step(tag: str) -> subprocess.CompletedProcess[str]:
    (step,) = [s for s in steps() if "run" in s]
    assert step["env"] == {"TAG": "${{ github.ref_name }}"}
    return subprocess.run(
        ["bash", "-eo", "pipefail", "-c", step["run"]],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "TAG": tag},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.skipif(
    shutil.which("bash") is None or not Path("/usr/bin/python3").exists(),
    reason="runs the step with bash and /usr/bin/python3, as the runner does",
)
def test_the_version_step_passes_only_for_the_tag_of_pyproject_s_version() -> None:
    assert _run_version_step(f"v{version()}").returncode == 0
    refused = _run_version_step("v999.0.0")
    assert refused.returncode == 1
    assert f"::error::the tag v999.0.0 is not v{version()}" in refused.stdout
