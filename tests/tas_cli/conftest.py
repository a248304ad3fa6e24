"""Fixtures of the command-line tests: `tas_dashboard`, the page's app over the demo world in this
process (tests/tas_dashboard/harness.py), for the commands that talk to a running `tas run`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.tas_dashboard.harness import Harness


@pytest.fixture
def dashboard(tmp_path: Path) -> Iterator[Harness]:
    with Harness(tmp_path) as harness:
        yield harness
