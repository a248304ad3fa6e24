"""The dashboard tests' fixtures: `browser`, a headless Chromium
(tests/tas_dashboard/browser.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from selenium import webdriver

from tests.tas_dashboard.browser import chromium


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    with chromium() as driver:
        yield driver
