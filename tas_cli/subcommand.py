"""What every `tas` subcommand does the same way: register its parser, and end a startup problem
with one line and exit status 2.

Kept apart from `tas_cli.common` (the wiring the cluster's commands share) so that the light
commands (`validate`, `set-health`, `demo`) register their parsers without importing what
`common` brings (prometheus_client, the policy store); `tas_cli.main` imports only the chosen
command's module, and start-up time is one of `make bench`'s figures.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from typing import Any, ParamSpec

P = ParamSpec("P")


def add_command(
    commands: Any,
    name: str,
    *,
    help: str,
    description: str,
    handler: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    """Add subcommand `name` to `commands` (argparse's subparsers action), run by `handler`;
    the command's own arguments go on the parser returned."""
    parser: argparse.ArgumentParser = commands.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=handler)
    return parser


def exit_2_on_setup_error(command: str) -> Callable[[Callable[P, int]], Callable[P, int]]:
    """Wrap a command's body: a `tas_cli.common.SetupError` (a flag the user can fix, a port
    taken, a file missing) becomes `tas COMMAND: why` on stderr and exit status 2, never a
    traceback."""
    # Imported here, not at the top: only the commands that raise it (and so already import
    # `common`) use this, and the light ones must not pay for `common` (module docstring).
    from tas_cli.common import SetupError

    def wrap(body: Callable[P, int]) -> Callable[P, int]:
        @functools.wraps(body)
        def guarded(*args: P.args, **kwargs: P.kwargs) -> int:
            try:
                return body(*args, **kwargs)
            except SetupError as error:
                print(f"tas {command}: {error}", file=sys.stderr)
                return 2

        return guarded

    return wrap
