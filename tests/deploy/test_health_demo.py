"""The health-metric demo (deploy/health-metric-demo) and its set-health script.

Covered:
- the demo app links the demo policy in its own namespace, keeps off nodes the policy labels
  violating, runs a pinned nginx release, and is evictable by the DefaultEvictor (no local
  storage);
- set-health writes the metric locally, over ssh (a stand-in ssh that runs the command through
  `sh -c`, as sshd does) and through `docker exec` for kind (a stand-in docker), and never runs
  anything built from bad input;
- set-health and gen-certs answer a bad option or help with exit 2 before doing anything.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tas.policies.model import parse_policy
from tests.deploy.pipeline import DEPLOY
from tests.deploy.shipped import (
    GEN_CERTS,
    SET_HEALTH,
    load_documents,
    objects_of,
    run,
)
from tests.processes import write_stand_in_ssh


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


def test_set_health_writes_a_node_labelled_sample_locally(tmp_path: Path) -> None:
    result = run([str(SET_HEALTH), "--local", str(tmp_path), "node-c", "2"])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "node-c.prom").read_text() == 'node_health_metric{node="node-c"} 2\n'
    assert [p.name for p in tmp_path.iterdir()] == ["node-c.prom"]


@pytest.fixture
def stand_in_ssh(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An `ssh` on PATH that logs its arguments and runs the command with `sh -c`, as sshd."""
    log = tmp_path / "ssh.log"
    bin_dir = write_stand_in_ssh(tmp_path / "bin", log)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    return env, log


def test_set_health_over_ssh_writes_the_textfile_on_the_node(
    tmp_path: Path, stand_in_ssh: tuple[dict[str, str], Path]
) -> None:
    env, log = stand_in_ssh
    target = tmp_path / "node-metrics"
    args = [str(SET_HEALTH), "--ssh-user", "demo", "--dir", str(target), "worker-1.lab", "-1.5"]
    result = run(args, env=env)
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
    result = run(args, env=env)
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
    result = run([str(SET_HEALTH), *args], env=env, cwd=tmp_path)
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
    result = run([str(SET_HEALTH), *args], env=env, cwd=tmp_path)
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
    result = run([str(script), *args], cwd=tmp_path)
    assert result.returncode == 2
    assert said in result.stderr
    assert list(tmp_path.iterdir()) == []
