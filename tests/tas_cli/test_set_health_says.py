"""`tas set-health` against a running dashboard (the real recorder and dashboard app on a real
server, `tests.tas_dashboard.harness`): what it prints is what the page will show.

Covered:
- the line printed says what the running demo's policy does with the value: 2 is "don't
  schedule here" and "move pods away" with the rules that hold, 1 only the first; a value its
  rules do not name (5: they say Equals 1, Equals 2) is healthy to it, said so with the values
  they name, not taken for a 2;
- a node typed in another case (`node-C`) is suggested as itself (node-c), not as the closest
  spelling of another node (node-e).
"""

from __future__ import annotations

import pytest

from tas_cli.main import main
from tests.tas_dashboard.harness import Harness


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param(
            "2",
            "demo-policy: don't schedule here (dontschedule: health_metric Equals 2), "
            "move pods away (deschedule: health_metric Equals 2)",
            id="two",
        ),
        pytest.param(
            "1", "demo-policy: don't schedule here (dontschedule: health_metric Equals 1)", id="one"
        ),
        pytest.param(
            "5", "demo-policy: no rule holds: healthy to it (its rules name 1, 2)", id="five"
        ),
    ],
)
def test_the_printed_line_says_what_the_policy_does_with_the_value(
    dashboard: Harness, capsys: pytest.CaptureFixture[str], value: str, said: str
) -> None:
    argv = ["set-health", "node-c", value, "--url", dashboard.url, "--dir", str(dashboard.metrics)]
    assert main(argv) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"node-c: node_health_metric {value} (")
    assert line.endswith(f"): {said}")


def test_a_node_typed_in_another_case_is_suggested_as_itself(
    dashboard: Harness, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["set-health", "node-C", "2", "--url", dashboard.url, "--dir", str(dashboard.metrics)]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert "(did you mean node-c?)" in error
    assert "node-e" not in error.split("its nodes:")[0]
