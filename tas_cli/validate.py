"""`tas validate FILE...`: check policy files before applying them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from tas.policies.model import load_policies_text


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "validate",
        help="validate TASPolicy files (YAML or JSON, multi-document)",
        description="Print every problem of every policy, one per line; exit 1 if any.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    failed = False
    for path in args.files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            print(f"{path}: cannot read: {error}", file=sys.stderr)
            failed = True
            continue
        result = load_policies_text(text, source=str(path))
        for problem in result.problems:
            print(problem, file=sys.stderr)
        if result.problems:
            failed = True
        elif not result.policies:
            print(f"{path}: no TASPolicy found", file=sys.stderr)
            failed = True
        else:
            names = ", ".join(f"{p.namespace}/{p.name}" for p in result.policies)
            print(f"{path}: ok ({names})")
    return 1 if failed else 0
