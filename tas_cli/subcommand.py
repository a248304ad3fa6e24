"""What every `tas` subcommand does the same way at startup: a problem the user can fix ends
with one line and exit status 2. (How a command is registered is `tas_cli.main`'s: a module
declares only its own description, arguments and body.)
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec

from tas_cli.common import SetupError

P = ParamSpec("P")


def exit_2_on_setup_error(command: str) -> Callable[[Callable[P, int]], Callable[P, int]]:
    """Wrap a command's body: a `tas_cli.common.SetupError` (a flag the user can fix, a port
    taken, a file missing) becomes `tas COMMAND: why` on stderr and exit status 2, never a
    traceback."""

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
