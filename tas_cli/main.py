"""The `tas` command line: one subcommand per job, each a thin wiring of library parts.

`COMMANDS` registers every subcommand: its name, its help line and its module, which declares
only what is its own (`CommandModule`: the description, the arguments, the body), so no module
restates a help line or how a command is added. `python -m extender` and the other components'
shims run `main` too.

Only the chosen subcommand's module is imported, so `tas extender` starts without the
simulator's numpy and matplotlib or the dashboard, and a cluster image carries only the base
install. A command that needs an extra (`EXTRAS`, the `[project.optional-dependencies]` of
pyproject.toml) says which one to install (from the clone: the project is on no index), exit
2, before anything imports what is missing. An option a command does not have is refused with
that command's usage and the option meant (`_refuse_unknown`), not `tas`'s usage alone.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import importlib.util
import re
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from tas.tas_flags import Component

DISTRIBUTION = "telemetry-aware-scheduling"
#: How to install an extra: the project is on no package index, so from a clone (`make deps`
#: installs every extra into .venv).
INSTALL_EXTRA = "from the clone, make deps (or .venv/bin/pip install -e '.[{extra}]')"


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
#: (in `[sim]`, for `--dask` only) is checked where it is used (`tas_simulator.jobs`).
EXTRAS: dict[str, tuple[str, ...]] = {
    "demo": ("numpy", "jsonschema"),
    "sim": ("numpy", "jsonschema", "matplotlib"),
}

#: In the order `tas --help` lists them.
COMMANDS: dict[str, Command] = {
    "run": Command(
        "tas_cli.run",
        "the health-metric demo on the in-memory cluster, with a live dashboard",
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
        + f" ({INSTALL_EXTRA.format(extra='EXTRA')}). The others run on the base install.",
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


def _refuse_unknown(parser: argparse.ArgumentParser, unknown: Sequence[str]) -> None:
    """Exit 2 with the command's own usage, naming for each unknown option the closest one
    (`--policy`: `--policies`), else those whose help or value speaks of it (`--port`:
    `--listen HOST:PORT`, `--dashboard HOST:PORT`), else the arguments the command takes
    instead (`tas validate FILE|DIR|-`)."""
    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for said in unknown:
        if not said.startswith("-"):
            continue
        flag = said.split("=", 1)[0]
        word = flag.lstrip("-").lower()
        close = difflib.get_close_matches(flag, options, n=1, cutoff=0.6)
        about = [
            f"{a.option_strings[-1]} {a.metavar}"
            if isinstance(a.metavar, str)
            else a.option_strings[-1]
            for a in parser._actions
            if a.option_strings
            and re.search(rf"\b{re.escape(word)}", f"{a.metavar or ''} {a.help or ''}".lower())
        ]
        positional = [a.metavar or a.dest for a in parser._actions if not a.option_strings]
        if close:
            hints.append(f"{flag}: did you mean {close[0]}?")
        elif about and word:
            hints.append(f"{flag}: no such option; see {', '.join(about[:3])}")
        elif positional:
            takes = " ".join(str(p) for p in positional)
            hints.append(f"{flag}: no such option; {parser.prog} takes {takes}")
    message = f"unrecognized arguments: {' '.join(unknown)}"
    parser.error("; ".join([message, *hints]))


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
            + INSTALL_EXTRA.format(extra=extra),
            file=sys.stderr,
        )
        return 2
    parser = build_parser(load=() if chosen is None else (chosen,))
    component = next((c for c in TAS_COMPONENTS if chosen == c), None)
    if component is None:
        args, unknown = parser.parse_known_args(arguments)
        if unknown:
            # argparse says it with `tas`'s usage: the command's usage is the one to read.
            _refuse_unknown(command_parser(chosen) if chosen else parser, unknown)
    else:
        from tas_cli import common  # with the component, which imports it anyway

        args = common.parse_with_tas_flags(
            parser, arguments[1:], component=component, prefix=[component]
        )
    from tas_cli import subcommand

    return subcommand.run_command(chosen or "", args.handler, args)


if __name__ == "__main__":
    sys.exit(main())
