"""What every `tas` subcommand does the same way (`tas_cli.subcommand`).

Covered:
- a command registered with `add_command` shows its help line in `tas --help`, its description
  in `tas COMMAND --help`, and runs its handler;
- a startup problem (`common.SetupError`) is one line, `tas COMMAND: why`, and exit status 2,
  never a traceback: as `tas run` shows without its policy file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from tas_cli import common
from tas_cli.subcommand import add_command, exit_2_on_setup_error


def test_a_command_is_registered_with_its_help_description_and_handler() -> None:
    parser = argparse.ArgumentParser(prog="tas")
    commands = parser.add_subparsers(dest="command", required=True)
    seen: list[argparse.Namespace] = []

    def greet(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    own = add_command(
        commands, "greet", help="say hello", description="Say hello to someone.", handler=greet
    )
    own.add_argument("who")
    args = parser.parse_args(["greet", "world"])
    assert args.handler(args) == 0
    assert seen[0].who == "world"
    assert "say hello" in parser.format_help()
    assert "Say hello to someone." in own.format_help()


def test_a_setup_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    @exit_2_on_setup_error("example")
    def body(port: int) -> int:
        raise common.SetupError(f"cannot listen on :{port}")

    assert body(80) == 2
    assert capsys.readouterr().err == "tas example: cannot listen on :80\n"


def test_tas_run_without_its_policy_file_says_so_in_one_line_and_exits_2(tmp_path: Path) -> None:
    # A real process, as a user meets it: `tas run` configures the process's logging (it
    # quiets some loggers for the terminal), which must not leak into the tests that follow.
    missing = tmp_path / "none.yaml"
    command = [sys.executable, "-m", "tas_cli", "run", "--dir", str(tmp_path / "run")]
    done = subprocess.run(
        [*command, "--policies", str(missing)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == f"tas run: no policy at {missing} (give --policies FILE)"
