"""`tas validate FILE|DIR|-...`: check policy files before applying them.

A directory is read as `--policies DIR` reads it (every `*.yaml`, `*.yml` and `*.json` file in
it, `tas.policies.files.policy_files`), so what validates here is what the components load; `-`
reads standard input, so the cluster's own objects can be checked before switching from TAS:
`kubectl get taspolicies -A -o yaml | tas validate -`.

The check is the components' own (`tas.policies.model.load_policies_text`): an error here is a
document the controller skips, and a warning is one it applies (as TAS would) although part of
it does nothing, e.g. a second scheduleonmetric rule. Every line says `file:line:`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from tas.policies.files import policy_files
from tas.policies.model import PolicyProblem, load_policies_text

STDIN = "-"


#: `tas validate --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Print every problem of every policy, one per line as FILE:LINE: ...; "
    "exit 1 if any is an error (a policy the components would skip). Warnings are what "
    "they apply but partly ignore. A directory means its *.yaml, *.yml and *.json files; "
    "- reads standard input (kubectl get taspolicies -A -o yaml | tas validate -)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", metavar="FILE|DIR|-")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too (for CI)")


def run(args: argparse.Namespace) -> int:
    failed = False
    for name in args.files:
        for source, text in _texts(name):
            if text is None or not _report(source, text, strict=args.strict):
                failed = True
    return 1 if failed else 0


def _texts(name: str) -> list[tuple[str, str | None]]:
    """(source, text) of each input `name` stands for; None (reported) when unreadable."""
    if name == STDIN:
        return [("<stdin>", sys.stdin.read())]
    path = Path(name)
    files = policy_files(path)
    if path.is_dir() and not files:
        print(f"{path}: no *.yaml, *.yml or *.json file in this directory", file=sys.stderr)
        return [(name, None)]
    texts: list[tuple[str, str | None]] = []
    for file in files:
        try:
            texts.append((str(file), file.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as error:
            print(f"{file}: cannot read: {error}", file=sys.stderr)
            texts.append((str(file), None))
    return texts


def problem_lines(problems: Iterable[PolicyProblem]) -> list[str]:
    """Policy problems as `tas validate` prints them: one a line (`file:line: ...`), in the
    order of the files, documents and lines they are about, an error before a warning."""
    ordered = sorted(problems, key=lambda p: (p.source, p.document or 0, p.line or 0, p.warning))
    return [str(problem) for problem in ordered]


def _report(source: str, text: str, *, strict: bool) -> bool:
    """Print what `text` holds; True when it is one or more valid policies and nothing else
    (and, when `strict`, nothing ignored either)."""
    result = load_policies_text(text, source=source)
    for line in problem_lines((*result.problems, *result.warnings)):
        print(line, file=sys.stderr)
    if result.problems:
        return False
    if not result.policies:
        print(f"{source}: no TASPolicy found", file=sys.stderr)
        return False
    names = ", ".join(f"{p.namespace}/{p.name}" for p in result.policies)
    count = len(result.warnings)
    warned = f", {count} warning{'s' if count > 1 else ''}" if count else ""
    print(f"{source}: ok ({names}){warned}")
    return not (strict and result.warnings)
