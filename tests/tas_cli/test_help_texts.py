"""What `tas COMMAND --help` tells: `tas replay` documents every option (`--policies` and
`--out` had no line), `tas sweep` shows each option's default."""

from __future__ import annotations

import argparse

from tas_cli.main import command_parser


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    return [
        a.option_strings[-1]
        for a in parser._actions
        if a.option_strings and not a.help and a.help is not argparse.SUPPRESS
    ]


def test_every_option_of_tas_replay_says_what_it_is() -> None:
    parser = command_parser("replay")
    assert undocumented(parser) == []
    said = " ".join(parser.format_help().split())
    assert "--policies FILE|DIR the TASPolicy files to replay" in said
    assert "--out DIR where replay.json and the PNG timelines are written (default replay/)" in said


def test_tas_sweep_help_shows_the_defaults() -> None:
    said = " ".join(command_parser("sweep").format_help().split())
    assert "scenarios to draw (default: 20)" in said
    assert "(default: default)" in said  # --family
