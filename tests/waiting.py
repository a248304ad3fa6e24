"""Waiting for what another thread or process does: one helper instead of one per test module."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(
    check: Callable[[], bool], timeout: float = 5.0, *, what: str = "", poll: float = 0.02
) -> None:
    """Return once `check()` is true; AssertionError (naming `what`) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what or 'condition'} not met within {timeout:g} s")
        time.sleep(poll)
