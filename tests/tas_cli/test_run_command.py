"""`tas run` / `make run`'s command line, as a user meets it (issue 21): real processes where
start-up, shutdown or a port is what is tested.

Covered:
- in this process (no `tas run` started for a flag error): an unknown `--scenario` name offers
  the closest name and lists every named scenario, before anything is set up; `--speed`
  without `--scenario` and `--replicas` with it are errors; such an error is one line, exit 2;
- a taken dashboard port is one line and exit 2 that says so and how to pick another port
  (the flag, and `make run ARGS=...`), and `make run` passes ARGS to `tas run`;
- Ctrl-C (SIGINT) and SIGTERM end `tas run` within 2 s of the signal even in the middle of a
  tick (a 500-node scenario's first placement round takes many seconds): exit 0;
- the terminal shows no "-- cluster state --" dump after every change unless `--show-state`;
- a scenario's `contenders.ours.extender` flags are how `tas run --scenario` runs its extender
  (as `tas simulate` does): never failing open, a pod that arrives while a bogus metric makes
  every node violate is filtered from every node, where the breaker would keep them all.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest
import yaml

from tas.runtime.process import SetupError
from tas_cli.main import command_parser
from tas_cli.run import RunCommandSettings, check_settings
from tas_cli.subcommand import run_command
from tas_simulator.scenario import SCENARIOS, named_scenarios
from tests.processes import ROOT, free_port, tas_command

#: Ctrl-C's promise, measured from the signal.
STOP_SECONDS = 2.0
STATE_DUMP = "-- cluster state --"
BANNER_END = "Ctrl-C stops everything."


def tas_run(directory: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("run", "--dir", str(directory / "run"), *args),
        capture_output=True, text=True, timeout=timeout, check=False, cwd=directory,
    )  # fmt: skip


def loopback_ports() -> list[str]:
    """`--listen` and `--dashboard` on free loopback ports: never the defaults a user's own
    `make run` may hold."""
    return ["--listen", f"127.0.0.1:{free_port()}", "--dashboard", f"127.0.0.1:{free_port()}"]


def refused(*args: str) -> str:
    """What `tas run` says of flags that cannot work, before anything starts: its own parser
    and `check_settings`, in this process (a whole `tas run` proves start-up and shutdown
    below; these need none)."""
    settings = RunCommandSettings.from_args(command_parser("run").parse_args(list(args)))
    with pytest.raises(SetupError) as error:
        check_settings(settings)
    return str(error.value)


def test_an_unknown_scenario_lists_the_named_ones(tmp_path: Path) -> None:
    said = refused("--dir", str(tmp_path / "run"), "--scenario", "psi-skewd")
    assert said.startswith("no scenario named 'psi-skewd' (did you mean psi-skewed?)")
    assert "\n" not in said, said
    assert all(name in said for name in named_scenarios()), said
    assert not (tmp_path / "run").exists(), "nothing is set up for a scenario that is not there"


def test_speed_without_a_scenario_is_an_error() -> None:
    assert refused("--speed", "10").startswith("--speed sets a scenario's pace: give --scenario")


def test_replicas_with_a_scenario_is_an_error_not_silently_ignored() -> None:
    said = refused("--scenario", "herd", "--replicas", "6")
    assert said.startswith("--replicas sets the health demo's demo-app")


def test_a_setup_error_is_one_line_and_exit_2() -> None:
    """How `check_settings`' refusals reach the terminal (`tas_cli.subcommand`)."""

    def body(args: argparse.Namespace) -> int:
        raise SetupError(refused("--speed", "10"))

    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        assert run_command("run", body, argparse.Namespace()) == 2
    lines = stderr.getvalue().splitlines()
    assert lines == [f"tas run: {refused('--speed', '10')}"]


def test_a_taken_dashboard_port_says_so_and_how_to_pick_another(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = tas_run(
            tmp_path, "--listen", f"127.0.0.1:{free_port()}", "--dashboard", f"127.0.0.1:{port}"
        )
    assert done.returncode == 2
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"tas run: cannot listen on 127.0.0.1:{port} for the dashboard: ")
    assert "Address already in use" in last
    assert 'pick another port with --dashboard 127.0.0.1:18080 (make run ARGS="--dashboard' in last
    assert "Traceback" not in done.stderr


def test_make_run_passes_args_to_tas_run() -> None:
    # -n: what make would run, without running it (nor installing anything).
    done = subprocess.run(
        ["make", "-n", "run", "ARGS=--dashboard 127.0.0.1:18080 --seed 3"],
        capture_output=True, text=True, timeout=60, check=True, cwd=ROOT,
    )  # fmt: skip
    assert ".venv/bin/tas run --dashboard 127.0.0.1:18080 --seed 3" in done.stdout.splitlines()


def start_logged(directory: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    """`tas run` with its output in a file: a pipe nobody reads would stall a chatty process."""
    log = directory / "tas-run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            tas_command("run", "--dir", str(directory / "run"), *loopback_ports(), *args),
            stdout=out, stderr=subprocess.STDOUT, cwd=directory,
        )  # fmt: skip
    return process, log


def wait_for_text(process: subprocess.Popen[bytes], log: Path, text: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"no {text!r} from tas run:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.05)


@pytest.mark.parametrize(
    "signum", [pytest.param(signal.SIGINT, id="SIGINT"), pytest.param(signal.SIGTERM, id="SIGTERM")]
)
def test_a_signal_stops_tas_run_within_two_seconds_even_mid_tick(
    tmp_path: Path, signum: signal.Signals
) -> None:
    """scale-500's first tick places 4,000 pods (seconds of work, 20 s on a 2-core machine):
    the loop's thread is cut short, not waited for."""
    process, log = start_logged(tmp_path, "--scenario", "scale-500")
    try:
        wait_for_text(process, log, BANNER_END, timeout=60)  # the first tick starts now
        time.sleep(0.5)
        sent = time.monotonic()
        process.send_signal(signum)
        try:
            process.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pytest.fail(f"tas run still running {STOP_SECONDS:g} s after {signum.name}")
        took = time.monotonic() - sent
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = log.read_text(errors="replace")
    assert process.returncode == 0, output[-3000:]
    assert took < STOP_SECONDS, f"took {took:.2f}s"
    assert "Traceback" not in output, output[-3000:]
    assert output.rstrip().endswith("tas run stopped"), output[-1000:]


def run_demo_briefly(directory: Path, *flags: str) -> str:
    directory.mkdir()
    process, log = start_logged(directory, "--sync-period", "0.2", "--duration", "2", *flags)
    assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
    return log.read_text()


def test_the_terminal_shows_the_cluster_state_only_when_asked(tmp_path: Path) -> None:
    quiet = run_demo_briefly(tmp_path / "quiet")
    assert "Scheduled" in quiet  # the demo ran: its pods were placed
    assert STATE_DUMP not in quiet
    assert "--show-state adds the cluster state" in quiet  # the banner says how
    shown = run_demo_briefly(tmp_path / "asked", "--show-state")
    assert f"{STATE_DUMP}\nnode-a: health=0" in shown


def test_a_scenario_s_extender_flags_are_how_tas_run_runs_its_extender(tmp_path: Path) -> None:
    document = yaml.safe_load((SCENARIOS / "bogus-metric.yaml").read_text(encoding="utf-8"))
    document["policies"] = [{"file": str(SCENARIOS / "policies" / "health-policy.yaml")}]
    document["events"] = [
        {"at": "0s", "bogus-metric": {"metric": "health_metric", "value": 2, "for": "20m"}},
        {"at": "30s", "scale": {"workload": "demo-app", "replicas": 10}},
    ]
    document["contenders"] = {"ours": {"extender": {"maxViolatingNodeShare": 1}}}
    path = tmp_path / "never-fail-open.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    listen = f"127.0.0.1:{free_port()}"
    log = tmp_path / "tas-run.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            tas_command("run", "--dir", str(tmp_path / "run"), "--listen", listen,
                        "--dashboard", f"127.0.0.1:{free_port()}", "--scenario", str(path),
                        "--speed", "10"),
            stdout=out, stderr=subprocess.STDOUT, cwd=tmp_path,
        )  # fmt: skip
    try:
        wait_for_text(process, log, BANNER_END, timeout=60)
        decision = _first_filter_of_a_new_pod(f"http://{listen}", process, log, timeout=60)
    finally:
        process.terminate()
        process.wait(timeout=10)
    assert decision["outcome"] == "applied", decision
    assert {n["verdict"] for n in decision["nodes"]} == {"fail"}, decision


def _first_filter_of_a_new_pod(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout: float
) -> dict[str, object]:
    """The oldest filter decision on a pod while every node reports the bogus value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        decisions = httpx.get(f"{url}/debug/decisions?limit=200", timeout=5).json()
        judged = [
            d for d in decisions
            if d["verb"] == "filter" and d["nodes"]
            and all(n["metrics"].get("health_metric") == 2 for n in d["nodes"])
        ]  # fmt: skip
        if judged:
            return dict(judged[-1])
        time.sleep(0.2)
    pytest.fail(f"no filter decision under the bogus metric:\n{log.read_text()[-3000:]}")
