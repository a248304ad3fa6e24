"""`tas validate FILE|DIR|-...`: check policy files before applying them.

A directory is read as `--policies DIR` reads it (every `*.yaml`, `*.yml` and `*.json` file in
it, `tas.policies.files.policy_files`), so what validates here is what the components load; `-`
reads standard input, so the cluster's own objects can be checked before switching from TAS:
`kubectl get taspolicies -A -o yaml | tas validate -`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tas.policies.files import policy_files
from tas.policies.model import load_policies_text
from tas_cli import subcommand

STDIN = "-"


def add_parser(commands: Any) -> None:
    parser = subcommand.add_command(
        commands,
        "validate",
        help="validate TASPolicy files (YAML or JSON, multi-document)",
        description="Print every problem of every policy, one per line; exit 1 if any. A "
        "directory means its *.yaml, *.yml and *.json files; - reads standard input "
        "(kubectl get taspolicies -A -o yaml | tas validate -).",
        handler=run,
    )
    parser.add_argument("files", nargs="+", metavar="FILE|DIR|-")


def run(args: argparse.Namespace) -> int:
    failed = False
    for name in args.files:
        for source, text in _texts(name):
            if text is None or not _report(source, text):
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


def _report(source: str, text: str) -> bool:
    """Print what `text` holds; True when it is one or more valid policies and nothing else."""
    result = load_policies_text(text, source=source)
    for problem in result.problems:
        print(problem, file=sys.stderr)
    if result.problems:
        return False
    if not result.policies:
        print(f"{source}: no TASPolicy found", file=sys.stderr)
        return False
    names = ", ".join(f"{p.namespace}/{p.name}" for p in result.policies)
    print(f"{source}: ok ({names})")
    return True
