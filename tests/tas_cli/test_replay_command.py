"""`tas replay`'s command line, as a user meets it: a real process (issue 45).

Covered:
- a policy file with errors is exit 2 with every error on a line of its own, each as
  `tas validate` prints it (`file:line: path: message`), never joined on one line;
- the circuit breaker's share is `--max-violating-node-share`, the extender's spelling; the
  old `--max-violating-share` still works, hidden from `--help`, and says it is deprecated.

No Prometheus is needed: the policies are read (and refused) before it is asked anything.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.processes import tas_command

#: Nothing listens here: a test that got as far as asking Prometheus would fail to connect.
NO_PROMETHEUS = "http://127.0.0.1:9"
BAD_POLICY = """\
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata:
  name: bad
  namespace: default
spec:
  strategies:
    dontschedule:
      rules:
      - metricname: a
        operator: Bogus
        target: 1
    deschedule:
      rules:
      - metricname: b
        operator: Equals
        target: x
"""


def replay(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("replay", "--prometheus", NO_PROMETHEUS, "--out", str(directory / "out"),
                    *args),
        capture_output=True, text=True, timeout=60, check=False, cwd=directory,
    )  # fmt: skip


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tas_command("validate", str(path)), capture_output=True, text=True, timeout=60, check=False
    )


def test_policy_errors_are_printed_one_a_line_as_validate_prints_them(tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text(BAD_POLICY, encoding="utf-8")
    done = replay(tmp_path, "--policies", str(policy))
    assert done.returncode == 2, done.stderr
    head, *errors = done.stderr.strip().splitlines()
    assert head == f"tas replay: --policies {policy} has errors:"
    assert errors == validate(policy).stderr.strip().splitlines()
    assert len(errors) == 2
    assert errors[0].startswith(f"{policy}:11: ")
    assert errors[1].startswith(f"{policy}:17: ")


def test_the_breaker_share_is_spelt_as_the_extenders_flag(tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text(BAD_POLICY, encoding="utf-8")
    usage = subprocess.run(
        tas_command("replay", "--help"), capture_output=True, text=True, timeout=60, check=True
    ).stdout
    assert "--max-violating-node-share SHARE" in usage
    assert "--max-violating-share" not in usage

    new = replay(tmp_path, "--policies", str(policy), "--max-violating-node-share", "0.3")
    assert "deprecated" not in new.stderr
    old = replay(tmp_path, "--policies", str(policy), "--max-violating-share", "0.3")
    assert old.stderr.splitlines()[0] == (
        "tas replay: --max-violating-share is deprecated: use --max-violating-node-share"
    )
    # Past the flags, both fail on the policy alike: the old spelling was accepted.
    assert old.returncode == new.returncode == 2
    assert old.stderr.splitlines()[1:] == new.stderr.splitlines()
