"""The README's commands are commands that work, and the docs' links lead somewhere.

Every shell command in the README's code blocks is read as the shell would split it. Covered:
- a `tas` command (also as `.venv/bin/tas`) parses with the real `tas` parser: the subcommand,
  every flag and the arguments' shapes, without running anything; every path it names exists
  in the repository (an output such as `--out` needs only its parent);
- a `make` command names a target the Makefile has;
- any other command's repository paths exist (`.venv/`, made by `make`, excepted);
- the cheap ones run for real: `tas validate` on the shipped policy it names, and the demo
  story (`tas set-health`, `tas demo load`/`scale`, `tas explain pod ... --demo`) against a
  running `tas run`, each exiting 0;
- every command the components table names is a `tas` subcommand, and every subcommand is in it;
- every relative link in README.md and docs/*.md resolves to a file (and an anchor, where given,
  to a heading of that file).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tas_cli.main import COMMANDS, build_parser
from tests.demo_process import DemoProcess, start_demo
from tests.docs.markdown import anchors

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))
#: Options whose value is a file the command writes: only its parent must exist.
OUTPUTS = {"out", "scenario_out"}
#: Arguments that contain a slash but name no file.
NOT_PATHS = {("explain", "name")}
SEPARATORS = {";", "&&", "||", "|", "&", ">", "<"}


@dataclass(frozen=True)
class Command:
    words: tuple[str, ...]
    line: str

    @property
    def program(self) -> str:
        return self.words[0]

    @property
    def is_tas(self) -> bool:
        return self.program in ("tas", ".venv/bin/tas")


def code_blocks(text: str) -> Iterator[tuple[str, str]]:
    """(language, body) of every fenced code block."""
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        yield match.group(1), match.group(2)


def shell_commands(text: str) -> list[Command]:
    """The commands of the shell blocks (`sh`, `bash`, `shell`), split as
    the shell would: continuation lines joined, comments dropped, one command per separator,
    `NAME=value` prefixes left out."""
    commands = []
    for language, body in code_blocks(text):
        if language not in ("sh", "bash", "shell"):
            continue
        for line in body.replace("\\\n", " ").splitlines():
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words: list[str] = []
            for token in [*lexer, ";"]:
                if token not in SEPARATORS:
                    words.append(token)
                    continue
                while words and re.match(r"^[A-Z_]+=", words[0]):
                    words.pop(0)
                if words:
                    commands.append(Command(tuple(words), line.strip()))
                words = []
    known = ("tas", ".venv/bin/tas", "make", "kind", "kubectl", "export")
    return [c for c in commands if c.program in known or c.program.startswith(".venv/")]


COMMANDS_SHOWN = shell_commands(README.read_text(encoding="utf-8"))
TAS_COMMANDS = [c for c in COMMANDS_SHOWN if c.is_tas]


def test_the_readme_shows_the_two_commands_first_and_tas_commands() -> None:
    first = [c.words for c in COMMANDS_SHOWN[:2]]
    assert first == [("make", "run"), ("make", "test")]
    assert len(TAS_COMMANDS) >= 5


@pytest.mark.parametrize("command", TAS_COMMANDS, ids=lambda c: c.line[:60])
def test_a_tas_command_parses_and_names_paths_that_exist(command: Command) -> None:
    argv = list(command.words[1:])
    name = argv[0]
    assert name in COMMANDS, f"no subcommand {name!r}"
    try:
        args = build_parser(load={name}).parse_args(argv)
    except SystemExit as error:  # argparse's way of saying no
        pytest.fail(f"{command.line!r} does not parse (exit {error.code})")
    given = {part for word in argv for part in (word, *word.split("=", 1)[1:])}
    for dest, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if not isinstance(item, str | Path) or str(item) not in given:
                continue
            if (name, dest) in NOT_PATHS or "://" in str(item):
                continue
            if isinstance(item, str) and "/" not in item:
                continue
            path = ROOT / item
            needed = path.parent if dest in OUTPUTS else path
            assert needed.exists(), f"{command.line!r}: {item} ({dest}) is not in the repository"


@pytest.mark.parametrize(
    "command", [c for c in COMMANDS_SHOWN if c.program == "make"], ids=lambda c: c.line
)
def test_a_make_command_names_a_target_of_the_makefile(command: Command) -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = [w for w in command.words[1:] if "=" not in w]
    for target in targets:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.M), f"no target {target}"


@pytest.mark.parametrize(
    "command",
    [c for c in COMMANDS_SHOWN if not c.is_tas and c.program != "make"],
    ids=lambda c: c.line[:60],
)
def test_another_command_names_repository_paths_that_exist(command: Command) -> None:
    for word in command.words[1:]:
        if "/" not in word or "://" in word or "$" in word or word.startswith((".venv/", "-")):
            continue
        assert (ROOT / word).exists(), f"{command.line!r}: {word} is not in the repository"


def run_tas(command: Command, *, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a README `tas` command as `python -m tas_cli`, from this checkout."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    result = subprocess.run(
        [sys.executable, "-m", "tas_cli", *command.words[1:]],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, f"{command.line!r}: exit {result.returncode}\n{result.stderr}"
    return result.stdout


def test_tas_validate_on_the_policy_it_names_says_it_is_valid() -> None:
    shown = [c for c in TAS_COMMANDS if c.words[1] == "validate"]
    assert shown
    for command in shown:
        run_tas(command, cwd=ROOT)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[DemoProcess, Path]]:
    """A running `tas run` whose state is `run/` in a directory of its own, as `make run`'s."""
    directory = tmp_path_factory.mktemp("readme")
    (directory / "run").mkdir()
    with start_demo(directory / "run") as process:
        yield process, directory


#: The demo's commands, `tas explain` first: the story's set-health may evict the pod it names.
DEMO_STORY = sorted(
    (c for c in TAS_COMMANDS if c.words[1] in ("set-health", "demo", "explain")),
    key=lambda c: c.words[1] != "explain",
)


@pytest.mark.parametrize("command", DEMO_STORY, ids=lambda c: c.line[:60])
def test_the_demo_story_runs_against_a_running_make_run(
    command: Command, demo: tuple[DemoProcess, Path]
) -> None:
    process, directory = demo
    if command.words[1] == "explain":
        pod = command.words[3]
        process.wait_for(f"{pod} placed", lambda: _placed(process, pod), timeout=60)
    out = run_tas(command, cwd=directory, env={"TAS_DEMO_URL": process.dashboard})
    if command.words[1] == "explain":
        assert command.words[3] in out


def _placed(process: DemoProcess, pod: str) -> bool | None:
    for found in process.get("/api/state")["pods"]:
        if f"{found['namespace']}/{found['name']}" == pod and found["node"]:
            return True
    return None


def test_the_components_table_lists_every_subcommand() -> None:
    readme = README.read_text(encoding="utf-8")
    table = readme.split("## The components", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`tas ([a-z-]+)`", table))
    assert named == set(COMMANDS)


LINKED = [README, *DOCS]


@pytest.mark.parametrize("document", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(document: Path) -> None:
    text = document.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"^[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        path = (document.parent / file_part).resolve() if file_part else document
        assert path.exists(), f"{document.name}: link to {target}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in anchors(path), f"{document.name}: link to {target}: no such heading"
