"""The `tas` command line: one subcommand per job, each a thin wiring of library parts.

`COMMANDS` registers every subcommand: its name, its help line and its module, which declares
only what is its own (`CommandModule`: the description, the arguments, the body), so no module
restates a help line or how a command is added. `python -m extender` and the other components'
shims run `main` too.

Only the chosen subcommand's module is imported, so `tas extender` starts without the
simulator's numpy and matplotlib or the dashboard, and a cluster image carries only the base
install. A command that needs an extra (`EXTRAS`, the `[project.optional-dependencies]` of
pyproject.toml) says which one to install, exit 2, before anything imports what is missing.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from tas_cli.tas_compat import Component

DISTRIBUTION = "telemetry-aware-scheduling"


class CommandModule(Protocol):
    """What the module of a `Command` declares; `build_parser` registers the command from it."""

    #: What `tas COMMAND --help` says the command does, below its usage.
    DESCRIPTION: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's own arguments, on its parser."""

    def run(self, args: argparse.Namespace) -> int:
        """The command, given its parsed arguments; returns the exit status."""


@dataclass(frozen=True)
class Command:
    """A subcommand: the module that runs it (a `CommandModule`), the line `tas --help` shows
    for it, and the extra it needs beyond the base install, if any."""

    module: str
    help: str
    extra: str | None = None

    def load(self) -> CommandModule:
        return cast(CommandModule, importlib.import_module(self.module))


#: The modules each extra brings (import names), the ones a command's code imports. `distributed`
#: (in `[sim]`, for `--dask` only) is checked where it is used (`simulator.jobs`).
EXTRAS: dict[str, tuple[str, ...]] = {
    "demo": ("numpy", "jsonschema"),
    "sim": ("numpy", "jsonschema", "matplotlib"),
}

#: In the order `tas --help` lists them.
COMMANDS: dict[str, Command] = {
    "run": Command(
        "tas_cli.run",
        "the health-metric demo on the embedded cluster, with a live dashboard",
        extra="demo",
    ),
    "validate": Command(
        "tas_cli.validate", "validate TASPolicy files (YAML or JSON, multi-document)"
    ),
    "set-health": Command(
        "tas_cli.set_health",
        "set a node's health_metric (textfile directory, or a real node over ssh)",
    ),
    "demo": Command(
        "tas_cli.demo", "control a running `make run` from the terminal (scale, load, unload)"
    ),
    "extender": Command(
        "tas_cli.extender", "run the kube-scheduler extender (filter and prioritize over HTTPS)"
    ),
    "controller": Command(
        "tas_cli.controller", "run the policy controller: node and pod labels and policy status"
    ),
    "descheduler": Command(
        "tas_cli.descheduler",
        "evict pods that telemetry says should move (Predictive by default)",
    ),
    "explain": Command(
        "tas_cli.explain",
        "why a pod runs where it does and whether it would move; a node to every policy",
    ),
    "replay": Command(
        "tas_cli.replay",
        "what a policy (and a changed one) would have done over your recorded history",
    ),
    "simulate": Command(
        "tas_cli.simulate",
        "measure the closed loop against the systems it replaces, on a virtual clock",
        extra="sim",
    ),
    "sweep": Command(
        "tas_cli.sweep", "run every contender on many scenarios drawn from a family", extra="sim"
    ),
    "sweep-diff": Command(
        "tas_cli.sweep_diff", "what a change moved: one contender on two sweeps, paired by seed"
    ),
}


def build_parser(*, load: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The `tas` parser. The commands in `load` (default: every one) get their full parsers,
    which imports their modules; the others are listed by name and help line only (which
    `tas --help` shows the same either way)."""
    needs = []
    for extra in EXTRAS:
        names = [f"tas {name}" for name, c in COMMANDS.items() if c.extra == extra]
        verb = "needs" if len(names) == 1 else "need"
        needs.append(f"{' and '.join(names)} {verb} [{extra}]")
    parser = argparse.ArgumentParser(
        prog="tas",
        description="Telemetry-aware scheduling: extender, policy controller and descheduler.",
        epilog="Extras: "
        + "; ".join(needs)
        + f" (pip install '{DISTRIBUTION}[EXTRA]'). The others run on the base install.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        own = commands.add_parser(name, help=command.help)
        if load is None or name in load:
            _fill(own, command)
    return parser


def command_parser(name: str) -> argparse.ArgumentParser:
    """`tas NAME`'s own parser: it reads what follows NAME as `tas NAME` does."""
    return _fill(argparse.ArgumentParser(prog=f"tas {name}"), COMMANDS[name])


def _fill(parser: argparse.ArgumentParser, command: Command) -> argparse.ArgumentParser:
    module = command.load()
    parser.description = module.DESCRIPTION
    module.add_arguments(parser)
    parser.set_defaults(handler=module.run)
    return parser


def missing_modules(extra: str) -> list[str]:
    """The modules of `extra` that cannot be imported here (found without importing them)."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


#: The commands that accept Intel TAS's own flags (translated, with a deprecation warning).
TAS_COMPONENTS: tuple[Component, ...] = ("extender", "controller")


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    # `tas` has no options of its own but -h, so a command, if any, is the first argument.
    chosen = arguments[0] if arguments and arguments[0] in COMMANDS else None
    extra = COMMANDS[chosen].extra if chosen is not None else None
    missing = missing_modules(extra) if extra is not None else []
    if missing:
        print(
            f"tas {chosen}: needs the [{extra}] extra ({', '.join(missing)} not installed): "
            f"pip install '{DISTRIBUTION}[{extra}]'",
            file=sys.stderr,
        )
        return 2
    parser = build_parser(load=() if chosen is None else (chosen,))
    component = next((c for c in TAS_COMPONENTS if chosen == c), None)
    if component is None:
        args = parser.parse_args(arguments)
    else:
        from tas_cli import common  # with the component, which imports it anyway

        args = common.parse_with_tas_flags(
            parser, arguments[1:], component=component, prefix=[component]
        )
    from tas_cli import subcommand

    return subcommand.run_command(chosen or "", args.handler, args)


if __name__ == "__main__":
    sys.exit(main())
