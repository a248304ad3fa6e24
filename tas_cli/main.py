"""The `tas` command line: one subcommand per job, each a thin wiring of library parts."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tas_cli import (
    common,
    controller,
    demo,
    descheduler,
    extender,
    run,
    set_health,
    simulate,
    sweep,
    validate,
)
from tas_cli.tas_compat import Component


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tas",
        description="Telemetry-aware scheduling: extender, policy controller and descheduler.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run.add_parser(commands)
    validate.add_parser(commands)
    set_health.add_parser(commands)
    demo.add_parser(commands)
    extender.add_parser(commands)
    controller.add_parser(commands)
    descheduler.add_parser(commands)
    simulate.add_parser(commands)
    sweep.add_parser(commands)
    return parser


#: The commands that accept Intel TAS's own flags (translated, with a deprecation warning).
TAS_COMPONENTS: tuple[Component, ...] = ("extender", "controller")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = sys.argv[1:] if argv is None else list(argv)
    component = next((c for c in TAS_COMPONENTS if arguments[:1] == [c]), None)
    if component is None:
        args = parser.parse_args(arguments)
    else:
        args = common.parse_with_tas_flags(
            parser, arguments[1:], component=component, prefix=[component]
        )
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
