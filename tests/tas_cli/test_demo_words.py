"""`tas demo`'s refusals, in words (against the dashboard's real app on a real server,
`tests.tas_dashboard.harness`): no raw HTTP status ("404:", "422:"), the page's word "workloads",
and for a name the demo does not have, the closest one (whatever the case typed) and the list.
"""

from __future__ import annotations

import pytest

from tas_cli.main import main
from tests.tas_dashboard.harness import Harness


@pytest.mark.parametrize(
    ("args", "said"),
    [
        pytest.param(
            ["scale", "demoapp", "3"],
            "tas demo scale: no workload named 'demoapp' (did you mean demo-app?); the "
            "workloads: batch, cache, demo-app, node-agent, web",
            id="workload typo",
        ),
        pytest.param(
            ["load", "node-C", "1"],
            "tas demo load: no node named 'node-C' (did you mean node-c?); the nodes: node-a, "
            "node-b, node-c, node-d, node-e",
            id="node in another case",
        ),
        pytest.param(
            ["scale", "demo-app", "99"],
            "tas demo scale: 'replicas' must be a whole number 0..40, not 99",
            id="too many replicas",
        ),
    ],
)
def test_a_refusal_is_said_in_words_with_the_name_meant(
    dashboard: Harness, capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    assert main(["demo", "--url", dashboard.url, *args]) == 1
    error = capsys.readouterr().err
    assert error.startswith(said), error
    assert "404" not in error
    assert "422" not in error
