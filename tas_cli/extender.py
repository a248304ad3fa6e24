"""`tas extender`: run the scheduler extender (the options live in `extender.cli`)."""

from __future__ import annotations

import argparse
from typing import Any

from extender import cli


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "extender",
        help="run the kube-scheduler extender (filter and prioritize over HTTPS)",
        description="Serve POST /scheduler/filter and /scheduler/prioritize for kube-scheduler, "
        "with /healthz, /readyz, /metrics and /debug/decisions.",
    )
    cli.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    return cli.run(args)
