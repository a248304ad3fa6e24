"""The tas image: the Dockerfile, its pins, and the one command that makes it pullable.

Covered:
- the Dockerfile builds a non-root tas image from python:3.11-slim pinned by digest, with every
  package the project installs; scripts/pin-images.sh reports a stale pin and moves every FROM
  line with --write; the docker context leaves out the virtualenv, git and keys;
- scripts/image.sh builds the image under the name deploy/cluster installs and loads it into
  kind, or builds and pushes it for both architectures and says what to set, and refuses an
  unclear target; the quick start says first how to get the image.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.deploy.pipeline import DEPLOY, ROOT
from tests.deploy.shipped import (
    run,
)

IMAGE_SCRIPT = ROOT / "scripts" / "image.sh"


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
    done = run([str(IMAGE_SCRIPT), "--kind", "tas"], env=env)
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert calls == [f"docker build -t {name} {ROOT}", f"kind load docker-image {name} --name tas"]


def test_one_command_builds_and_pushes_the_image_and_says_what_to_set(tmp_path: Path) -> None:
    env = _recording_tools(tmp_path / "bin")
    done = run([str(IMAGE_SCRIPT), "--push", "localhost:5000/tas"], env=env)
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
    done = run([str(IMAGE_SCRIPT), *args], env=env)
    assert done.returncode == 2
    assert not (tmp_path / "bin" / "calls").exists()


def test_the_quick_start_says_first_how_to_get_the_image() -> None:
    guide = (ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    quick_start = guide.split("```sh\n", 1)[1].split("```", 1)[0]
    assert quick_start.splitlines()[0].startswith("scripts/image.sh --kind")


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
    checked = run([str(PIN_IMAGES), str(dockerfile)], env=env)
    assert checked.returncode == 1  # the stand-in registry has moved the tag on
    assert "python:3.11-slim  pinned sha256:" in checked.stdout
    assert calls.read_text().split() == [
        "buildx", "imagetools", "inspect", "--format", "{{json", ".Manifest}}", "python:3.11-slim"
    ]  # fmt: skip
    written = run([str(PIN_IMAGES), "--write", str(dockerfile)], env=env)
    assert written.returncode == 0, written.stderr
    froms = [line for line in dockerfile.read_text().splitlines() if line.startswith("FROM ")]
    assert froms == [
        f"FROM python:3.11-slim@{NEW_DIGEST} AS build",
        f"FROM python:3.11-slim@{NEW_DIGEST}",
    ]
    assert run([str(PIN_IMAGES), str(dockerfile)], env=env).returncode == 0


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
