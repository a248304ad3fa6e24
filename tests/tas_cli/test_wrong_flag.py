"""An option a command does not have: exit 2 with that command's usage (not `tas`'s alone)
and, for each unknown option, the one meant: the closest spelling, else the options whose value
or help speaks of it, else the arguments the command takes instead."""

from __future__ import annotations

import pytest

from tas_cli.main import main


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        pytest.param(
            ["run", "--port", "8081"],
            "usage: tas run ",
            "--port: no such option; see --listen HOST:PORT, --dashboard HOST:PORT",
            id="run --port",
        ),
        pytest.param(
            ["run", "--policy", "x.yaml"],
            "usage: tas run ",
            "--policy: did you mean --policies?",
            id="run --policy",
        ),
        pytest.param(
            ["validate", "--policy", "x.yaml"],
            "usage: tas validate ",
            "--policy: no such option; tas validate takes FILE|DIR|-",
            id="validate --policy",
        ),
    ],
)
def test_a_wrong_flag_prints_the_commands_usage_and_the_flag_meant(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, hint: str
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    error = capsys.readouterr().err
    assert error.startswith(usage), error
    assert error.rstrip().endswith(hint), error
    assert f"tas {argv[0]}: error: unrecognized arguments: {argv[1]}" in error
