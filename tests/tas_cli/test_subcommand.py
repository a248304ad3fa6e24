"""What every `tas` subcommand does the same way (`tas_cli.main`, `tas_cli.subcommand`).

Covered:
- every command is registered from `tas_cli.main.COMMANDS` and its module alone: its help line
  in `tas --help`, its module's description in `tas COMMAND --help`, and its module's `run`
  as the handler; `python -m extender` (and the other components' shims) is `tas extender`;
- a startup problem (`process.SetupError`) is one line, `tas COMMAND: why`, and exit status 2,
  never a traceback: as `tas run` shows without its policy file.
"""

from __future__ import annotations

import argparse
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tas.runtime import process
from tas_cli.main import COMMANDS, build_parser, command_parser, main
from tas_cli.subcommand import run_command
from tests.processes import ROOT


def _words(text: str) -> str:
    return " ".join(text.split())  # argparse rewraps help text to the terminal's width


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_is_registered_with_the_table_s_help_and_its_module_s_description_and_run(
    name: str,
) -> None:
    module = importlib.import_module(COMMANDS[name].module)
    assert _words(COMMANDS[name].help) in _words(build_parser(load=[name]).format_help())
    own = command_parser(name)
    assert own.prog == f"tas {name}"
    assert _words(module.DESCRIPTION) in _words(own.format_help())
    assert own.get_default("handler") is module.run


@pytest.mark.parametrize(
    ("package", "name"),
    [("extender", "extender"), ("policy_controller", "controller"), ("descheduler", "descheduler")],
)
def test_python_m_a_component_is_the_same_command_as_tas_component(
    package: str, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")  # the same width here and in the process
    shown = subprocess.run(
        [sys.executable, "-m", package, "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert shown == command_parser(name).format_help()


def test_a_setup_error_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    def body(args: argparse.Namespace) -> int:
        raise process.SetupError(f"cannot listen on :{args.port}")

    assert run_command("example", body, argparse.Namespace(port=80)) == 2
    assert capsys.readouterr().err == "tas example: cannot listen on :80\n"


def test_every_command_runs_through_the_one_place_that_turns_a_setup_error_into_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # No module of its own catches it: `tas explain` with a kubeconfig that is not there.
    missing = tmp_path / "none"
    assert main(["explain", "pod", "default/web", "--kubeconfig", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tas explain: ")
    assert err.count("\n") == 1
    assert "Traceback" not in err


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
