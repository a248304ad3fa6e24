"""`tas controller`: the policy controller (node and pod labels, policy status)."""

from __future__ import annotations

import argparse
from typing import Any

from policy_controller import cli


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "controller",
        help="run the policy controller: node and pod labels and policy status",
        description="Every sync period, evaluate every policy's deschedule and labeling "
        "strategies, patch only the labels that differ, and keep each policy's status current.",
    )
    cli.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return cli.run(args)
