"""`tas sweep-diff BEFORE AFTER`: what a change moved, on two sweeps of the same scenarios.

Reads BEFORE/runs.json and AFTER/runs.json (two `tas sweep --out` folders, run with the same
family, count and seeds, before and after a change) and prints one contender's totals and the
scenarios whose figures moved clearly, paired by seed (`tas_simulator.paired`). Sweeps that do not
hold the same runs, or the same drawn scenarios, are refused with every mismatch listed, exit 1:
pairing different scenarios would claim what the change did not do.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from tas_cli.common import count, print_problems

#: `tas sweep-diff --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Compare one contender between two sweep folders of the same family, count and seeds "
    "(before and after a change), paired by seed: totals of work lost, stall, violating "
    "placements and evictions, and the scenarios each moved clearly (95% intervals)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", type=Path, metavar="BEFORE", help="a `tas sweep --out` folder")
    parser.add_argument("after", type=Path, metavar="AFTER", help="the same sweep, after a change")
    parser.add_argument(
        "--contender", default="ours", metavar="NAME", help="the contender to compare"
    )
    parser.add_argument(
        "--most", type=count, default=8, metavar="N", help="scenarios listed per figure and side"
    )


def _load(folder: Path, problems: list[str]) -> Any:
    path = folder / "runs.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        problems.append(f"{path}: cannot be read ({error.strerror or error})")
    except json.JSONDecodeError as error:
        problems.append(f"{path}: not JSON ({error})")
    return None


def _scenario_files(folder: Path) -> dict[str, list[str]]:
    """Each drawn scenario's lines, its comments left out: the header names the family file's
    path, which differs between two checkouts of the same tree."""
    return {
        path.name: [
            line
            for line in path.read_text(encoding="utf-8").splitlines()
            if not line.lstrip().startswith("#")
        ]
        for path in sorted((folder / "scenarios").glob("*.yaml"))
    }


def _same_scenarios(before: Path, after: Path, problems: list[str]) -> None:
    """The same names can hold different scenarios (another family file, or its seed): the
    saved drawings must match, comments aside, where both sweeps kept them."""
    one, two = _scenario_files(before), _scenario_files(after)
    changed = sorted(name for name in one.keys() & two.keys() if one[name] != two[name])
    if changed:
        problems.append(
            f"{len(changed)} drawn scenarios differ between the sweeps "
            f"({', '.join(changed[:5])}): another family or family seed"
        )


def run(args: argparse.Namespace) -> int:
    from tas_simulator.paired import UnpairedError, pair_sweeps, table

    problems: list[str] = []
    before, after = _load(args.before, problems), _load(args.after, problems)
    _same_scenarios(args.before, args.after, problems)
    if not problems:
        try:
            paired = pair_sweeps(before, after, contender=args.contender)
        except UnpairedError as error:
            problems.extend(error.problems)
    if problems:
        print_problems("tas sweep-diff: the two sweeps cannot be paired:", problems)
        return 1
    print(table(paired, most=args.most))
    return 0
