"""What every `tas` subcommand does the same way at startup: a problem the user can fix ends
with one line and exit status 2. (How a command is registered is `tas_cli.main`'s: a module
declares only its own description, arguments and body.)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from tas.runtime.process import SetupError


def run_command(
    command: str, body: Callable[[argparse.Namespace], int], args: argparse.Namespace
) -> int:
    """Run a command's body (its module's `run`): a `tas.runtime.process.SetupError` (a flag the
    user can fix, a port taken, a file missing) becomes `tas COMMAND: why` on stderr and exit
    status 2, never a traceback. The one place that does: `tas_cli.main` runs every command
    through it, so a command's body only raises."""
    try:
        return body(args)
    except SetupError as error:
        print(f"tas {command}: {error}", file=sys.stderr)
        return 2
