"""`python -m policy_controller` (the same command as `tas controller`), as a user runs it.

Covered (the shared argument types are in test_common.py):
- the documented defaults;
- `tas controller` registers the same arguments;
- `--max-violating-node-share` (the extender's spelling) becomes the reconciler's breaker share,
  and a share outside (0, 1] is refused with exit 2 naming the flag (what the share decides is
  in tests/tas_inmemory/test_compose.py);
- a bad `--metrics` source exits 2 with the reason, and so does a taken `--listen` port;
- end to end in a subprocess against the API emulator, policies from the cluster and metrics
  from a textfile directory: node C at 2 gets `demo-policy=violating`, `/readyz` and `/metrics`
  answer, and SIGTERM stops the process cleanly (exit 0).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from policy_controller.settings import ControllerSettings
from tas.breaker import DEFAULT_MAX_SHARE
from tas_cli import controller
from tas_cli.main import build_parser, command_parser, main
from tests.builders import health_policy_document
from tests.k8s_emulator import KubeEmulator
from tests.processes import ROOT, Process, free_port


def test_defaults_match_the_documented_command_line() -> None:
    args = command_parser("controller").parse_args(["--metrics", "textfile:/tmp/x"])
    assert (args.sync_period, args.listen, args.leader_elect, args.policies) == (
        2.0,
        ("127.0.0.1", 8081),
        False,
        None,
    )


def test_tas_controller_takes_the_same_arguments() -> None:
    args = build_parser(load=["controller"]).parse_args(
        ["controller", "--metrics", "textfile:/x", "--sync-period", "5s"]
    )
    assert (args.command, args.sync_period, args.handler) == ("controller", 5.0, controller.run)


@pytest.mark.parametrize(
    ("given", "share"),
    [pytest.param([], DEFAULT_MAX_SHARE, id="default"), pytest.param(["1"], 1.0, id="never")],
)
def test_the_breaker_share_flag_sets_the_reconcilers_share(given: list[str], share: float) -> None:
    flag = ["--max-violating-node-share", *given] if given else []
    args = command_parser("controller").parse_args(["--metrics", "textfile:/x", *flag])
    settings = controller.ControllerCommandSettings.from_args(args).controller
    assert settings == ControllerSettings(max_violating_node_share=share)


def test_a_breaker_share_above_one_is_refused_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["controller", "--metrics", "textfile:/x", "--max-violating-node-share", "1.5"])
    assert exited.value.code == 2
    assert "--max-violating-node-share" in capsys.readouterr().err


def controller_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "policy_controller", *args]


def test_a_bad_metric_source_exits_2_with_the_reason(
    tmp_path: Path, kube_emulator: KubeEmulator
) -> None:
    config = kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    done = subprocess.run(
        controller_command("--kubeconfig", str(config), "--metrics", "carrier-pigeon:x"),
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 2
    assert "carrier-pigeon" in done.stderr


def test_a_taken_probe_port_exits_2_naming_it_not_a_traceback(
    tmp_path: Path, kube_emulator: KubeEmulator
) -> None:
    config = kube_emulator.write_kubeconfig(tmp_path / "kubeconfig")
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            controller_command(
                "--kubeconfig", str(config), "--metrics", f"textfile:{metrics}",
                "--policies", str(tmp_path / "policies.yaml"), "--listen", f"127.0.0.1:{port}",
            ),
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            check=False,
        )  # fmt: skip
    assert done.returncode == 2
    assert f"tas controller: cannot listen on 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_controller_labels_a_violating_node_and_stops_on_sigterm(
    tmp_path: Path, kube_emulator: KubeEmulator
) -> None:
    api = kube_emulator
    for name in ("A", "C"):
        api.create("nodes", {"metadata": {"name": name}})
    api.create("taspolicies", health_policy_document())
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    (metrics / "A.prom").write_text("node_health_metric 0\n", encoding="utf-8")
    (metrics / "C.prom").write_text("node_health_metric 2\n", encoding="utf-8")
    port = free_port()
    command = controller_command(
        "--kubeconfig",
        str(api.write_kubeconfig(tmp_path / "kubeconfig")),
        "--metrics",
        f"textfile:{metrics}",
        "--sync-period",
        "200ms",
        "--listen",
        f"127.0.0.1:{port}",
    )
    with Process(command, f"http://127.0.0.1:{port}", None, tmp_path / "controller.log") as process:
        process.start()

        def labelled() -> bool:
            node = api.get("nodes", "C")
            assert node is not None
            return (node["metadata"].get("labels") or {}).get("demo-policy") == "violating"

        process.eventually(labelled, "node C labelled", 30)
        with httpx.Client(base_url=process.url, timeout=5) as client:
            assert client.get("/readyz").status_code == 200
            assert "tas_controller_label_writes_total" in client.get("/metrics").text
        assert process.terminate(timeout=20) == 0
    output = process.output()
    assert "Traceback" not in output, output
