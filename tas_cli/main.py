"""The `tas` command line: one subcommand per job, each a thin wiring of library parts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tas_cli import controller, descheduler, extender, run, set_health, validate


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tas",
        description="Telemetry-aware scheduling: extender, policy controller and descheduler.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_parser(commands)
    validate.add_parser(commands)
    set_health.add_parser(commands)
    extender.add_parser(commands)
    controller.add_parser(commands)
    descheduler.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
