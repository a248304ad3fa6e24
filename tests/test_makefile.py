"""The Makefile installs what each target needs: `make run` the demo extra only, `make test` the
test and simulator extras, each behind its own stamp, and README.md says so.

Make itself says what it would run (`make -n`, nothing executed) for a .venv in a temporary
directory, fresh or with one stamp already there.

Covered:
- on a fresh .venv, `make run` installs the project with `[demo]` and nothing else, and `make
  test` (also `make deps`) with `[test,sim]`;
- after `make run`, `make test` still installs `[test,sim]` (a stamp of its own), and `make run`
  installs nothing again;
- `[test,sim]` holds every requirement of `[demo]`, so a .venv made by `make test` runs the demo;
- README.md's first lines name the extras each command installs, as the Makefile does.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def would_run(target: str, venv: Path) -> str:
    """The commands `make TARGET` would run for this .venv, printed by `make -n`."""
    result = subprocess.run(
        ["make", "-n", "-C", str(ROOT), f"VENV={venv}", target],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def installed_extras(commands: str) -> list[set[str]]:
    """The extras of each `pip install -e '.[...]'` in these commands."""
    return [
        set(extras.split(","))
        for extras in re.findall(r"pip install --quiet -e '\.\[([\w,]+)\]'", commands)
    ]


def test_make_run_installs_only_the_demo_extra(tmp_path: Path) -> None:
    commands = would_run("run", tmp_path / ".venv")
    assert installed_extras(commands) == [{"demo"}]
    assert "tas run" in commands


@pytest.mark.parametrize("target", ["test", "deps"])
def test_make_test_installs_the_test_and_simulator_extras(target: str, tmp_path: Path) -> None:
    assert installed_extras(would_run(target, tmp_path / ".venv")) == [{"test", "sim"}]


def test_after_make_run_make_test_installs_the_rest_and_make_run_nothing(tmp_path: Path) -> None:
    venv = tmp_path / ".venv"
    demo_commands = would_run("run", venv)
    stamp = re.search(r"touch (\S+)", demo_commands)
    assert stamp is not None
    venv.mkdir()
    Path(stamp.group(1)).touch()  # what `make run` leaves, newer than pyproject.toml
    assert installed_extras(would_run("run", venv)) == []
    assert installed_extras(would_run("test", venv)) == [{"test", "sim"}]


def test_the_test_extras_hold_every_requirement_of_the_demo() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    held = {Requirement(r).name for extra in ("test", "sim") for r in extras[extra]}
    assert {Requirement(r).name for r in extras["demo"]} <= held


def test_the_readme_says_what_each_command_installs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first = re.sub(r"\s+", " ", readme.split("\n## ", 1)[0])
    assert "`make run` the project with its `demo` extra only" in first
    assert "`make test` the `test` and `sim` extras too" in first
