"""Waiting for what another thread or process does: one helper instead of one per test module.

`eventually(check, timeout, what=...)` polls until `check()` is true and fails naming `what`.
A test waiting on a process passes `hopeless` (waiting longer cannot help: the process has
exited) and `state` (what a reader of the failure needs: the exit code, the log's tail, the
objects concerned); `tests.processes.Process.eventually` passes both for its process.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(
    check: Callable[[], bool],
    timeout: float = 5.0,
    *,
    what: str = "",
    poll: float = 0.02,
    hopeless: Callable[[], bool] | None = None,
    state: Callable[[], str] | None = None,
) -> None:
    """Return once `check()` is true. Otherwise an AssertionError naming `what`, followed by
    `state()`, after `timeout` seconds, or as soon as `hopeless()` is true."""
    started = time.monotonic()
    while not check():
        waited = time.monotonic() - started
        if hopeless is not None and hopeless():
            reason = f"not seen, given up after {waited:.1f} s (waiting longer cannot help)"
        elif waited > timeout:
            reason = f"not seen in {timeout:g} s"
        else:
            time.sleep(poll)
            continue
        details = f"\n{state()}" if state is not None else ""
        raise AssertionError(f"{what or 'the condition'}: {reason}{details}")
