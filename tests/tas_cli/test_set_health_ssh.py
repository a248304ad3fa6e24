"""`tas set-health NODE VALUE --ssh [USER@]HOST`: TAS's demo script, without a shell built from
what was typed.

Covered (with a stand-in `ssh` on PATH that logs its argv and runs the remote command with
`sh -c`, as sshd does):
- it writes `node_health_metric VALUE` to /tmp/node-metrics/text.prom (`--remote-dir`) on the
  host, through an argv (`-o BatchMode=yes ... -l USER -- HOST COMMAND`);
- it is equivalent to `deploy/health-metric-demo/set-health.sh`: the same remote scripts, the
  same file from the same input;
- as a user other than root it writes through `sudo -n` (node-exporter's directory is root's),
  and a sudo that wants a password fails the command with sudo's message;
- values that are not finite numbers, bad users, hosts and directories are refused (exit 2)
  before ssh runs, and nothing typed is ever executed (a hypothesis property over arbitrary
  text);
- an ssh failure is exit 1 with a one-line reason.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tas.adapters.metrics import textfile
from tas_cli.main import main
from tests.processes import write_stand_in_ssh

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "deploy" / "health-metric-demo" / "set-health.sh"


def tas(*argv: str) -> int:
    return main(list(argv))


@pytest.fixture
def ssh_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in `ssh` first on PATH: logs its argv, then runs the command as sshd would."""
    log = tmp_path / "ssh.log"
    bin_dir = write_stand_in_ssh(tmp_path / "bin", log)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.chdir(tmp_path)
    return log


def test_it_writes_text_prom_on_the_host_through_an_argv(tmp_path: Path, ssh_log: Path) -> None:
    target = tmp_path / "node-metrics"
    remote = ["--ssh", "demo@worker-1.lab", "--remote-dir", str(target)]
    code = tas("set-health", "node-c", "2", *remote)
    assert code == 0
    assert (target / "text.prom").read_text() == "node_health_metric 2\n"
    called = ssh_log.read_text()
    assert "-o BatchMode=yes -o ConnectTimeout=10 -l demo -- worker-1.lab sh -c" in called


def test_the_default_remote_file_is_tas_demos() -> None:
    argv = textfile.ssh_command("worker-1", 0.0)
    assert argv[:6] == ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "--"]
    assert argv[6] == "worker-1"
    assert shlex.split(argv[7]) == [
        "sh", "-c", textfile.REMOTE_SCRIPT, "set-health", "/tmp/node-metrics", "0",
        textfile.WRITE_SCRIPT,
    ]  # fmt: skip
    assert '"$1/text.prom"' in textfile.WRITE_SCRIPT


def test_it_runs_the_same_remote_scripts_as_set_health_sh() -> None:
    lines = SCRIPT.read_text().splitlines()
    script = next(x for x in lines if x.startswith("script='"))
    writer = next(x for x in lines if x.startswith("writer='"))
    assert script == f"script='{textfile.REMOTE_SCRIPT}'"
    assert writer == f"writer='{textfile.WRITE_SCRIPT}'"


def _stand_in(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)


def test_a_user_other_than_root_writes_through_sudo(tmp_path: Path, ssh_log: Path) -> None:
    """On a node `id -u` is the ssh user's; here stand-ins play a user 1000 and a sudo that
    logs and runs what it is given."""
    bin_dir = ssh_log.parent / "bin"
    sudo_log = tmp_path / "sudo.log"
    _stand_in(bin_dir, "id", "echo 1000\n")
    _stand_in(bin_dir, "sudo", f"printf '%s\\n' \"$1\" >> '{sudo_log}'\nshift\nexec \"$@\"\n")
    target = tmp_path / "node-metrics"
    assert tas("set-health", "node-c", "1", "--ssh", "demo@w1", "--remote-dir", str(target)) == 0
    assert (target / "text.prom").read_text() == "node_health_metric 1\n"
    assert sudo_log.read_text() == "-n\n"


def test_a_sudo_that_wants_a_password_fails_the_command(
    tmp_path: Path, ssh_log: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    bin_dir = ssh_log.parent / "bin"
    _stand_in(bin_dir, "id", "echo 1000\n")
    _stand_in(bin_dir, "sudo", 'echo "sudo: a password is required" >&2\nexit 1\n')
    target = tmp_path / "node-metrics"
    assert tas("set-health", "node-c", "1", "--ssh", "demo@w1", "--remote-dir", str(target)) == 1
    assert not (target / "text.prom").exists()
    err = capfd.readouterr().err  # ssh's own output, then the command's line
    assert "sudo: a password is required" in err
    assert "set-health: ssh to demo@w1 failed (exit 1)" in err


def test_it_writes_the_same_file_as_set_health_sh(tmp_path: Path, ssh_log: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert tas("set-health", "node-c", "-1.5", "--ssh", "node-c", "--remote-dir", str(ours)) == 0
    result = os.system(f"{SCRIPT} --dir {theirs} node-c -1.5 2>/dev/null")
    assert result == 0
    assert (ours / "text.prom").read_bytes() == (theirs / "text.prom").read_bytes()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["node-c", "1; touch INJECTED", "--ssh", "h"], id="command in the value"),
        pytest.param(["node-c", "$(touch INJECTED)", "--ssh", "h"], id="substitution in value"),
        pytest.param(["node-c", "nan", "--ssh", "h"], id="nan"),
        pytest.param(["node-c", "inf", "--ssh", "h"], id="inf"),
        pytest.param(["node-c", "1", "--ssh", "-oProxyCommand=touch INJECTED"], id="option host"),
        pytest.param(["node-c", "1", "--ssh", "h\ntouch INJECTED"], id="newline in host"),
        pytest.param(["node-c", "1", "--ssh", "root;x@h"], id="bad user"),
        pytest.param(["node-c", "1", "--ssh", "h", "--remote-dir", "/tmp/x';touch INJECTED;'"],
                     id="quote in dir"),
        pytest.param(["node-c", "1", "--ssh", "h", "--remote-dir", "/tmp/../etc"], id="dot-dot"),
        pytest.param(["node-c", "1", "--ssh", "h", "--remote-dir", "relative"], id="relative"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_ssh_runs(
    argv: list[str], tmp_path: Path, ssh_log: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tas("set-health", *argv) == 2
    assert capsys.readouterr().err.startswith("set-health: ")
    assert not ssh_log.exists(), "ssh was called"
    assert not (tmp_path / "INJECTED").exists()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=st.text(max_size=12), host=st.text(max_size=12))
def test_nothing_typed_is_ever_executed(
    tmp_path: Path, ssh_log: Path, value: str, host: str
) -> None:
    target = tmp_path / "out"
    code = tas("set-health", f"--ssh={host or 'h'}", f"--remote-dir={target}", "--", "n", value)
    assert code in (0, 1, 2)
    assert not (tmp_path / "INJECTED").exists()
    if code == 0:
        written = (target / "text.prom").read_text()
        assert re.fullmatch(r"node_health_metric -?[0-9.e+-]+\n", written), written


def test_an_ssh_failure_is_exit_1_with_a_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = tmp_path / "bin"
    failing.mkdir()
    (failing / "ssh").write_text("#!/bin/sh\nexit 255\n")
    (failing / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{failing}{os.pathsep}{os.environ['PATH']}")
    assert tas("set-health", "node-c", "2", "--ssh", "worker-1") == 1
    assert "ssh to worker-1 failed (exit 255)" in capsys.readouterr().err
