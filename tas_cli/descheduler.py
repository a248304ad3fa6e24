"""`tas descheduler`: registers the descheduler's command line (it lives in descheduler.cli)."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "descheduler",
        help="evict pods that telemetry says should move (Predictive by default)",
        description="Evict pods whose node violates their TASPolicy, rebalance load on real "
        "telemetry, and run the classic descheduler strategies, all through the Eviction API.",
    )
    from descheduler.cli import add_arguments

    add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from descheduler.cli import run as run_descheduler

    return run_descheduler(args)
