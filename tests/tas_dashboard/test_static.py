"""The page's assets: served by the project, nothing fetched from elsewhere.

Covered: uPlot is the npm package's files, unchanged (checksums), with its MIT license beside
them; the page and its script load nothing from another host (no external network).
"""

from __future__ import annotations

import hashlib
import re

import pytest

from tas_dashboard.app import STATIC

UPLOT = STATIC / "vendor" / "uplot"
#: sha256 of the files in the npm package uplot@1.6.32 (dist/ and LICENSE).
CHECKSUMS = {
    "uPlot.iife.min.js": "19c8d4c6ad88929a79f4ae49d6f7161566dfd0ba3d15cc495e974f787eb78f1f",
    "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
    "LICENSE": "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd",
}


@pytest.mark.parametrize("name", sorted(CHECKSUMS))
def test_the_vendored_chart_library_is_the_packages_file_unchanged(name: str) -> None:
    assert hashlib.sha256((UPLOT / name).read_bytes()).hexdigest() == CHECKSUMS[name]


def test_the_license_and_the_version_travel_with_it() -> None:
    assert "The MIT License" in (UPLOT / "LICENSE").read_text()
    assert "uplot@1.6.32" in (UPLOT / "README.md").read_text()


@pytest.mark.parametrize("name", ["index.html", "app.js", "charts.js", "explain.js", "style.css"])
def test_the_page_loads_nothing_from_another_host(name: str) -> None:
    text = (STATIC / name).read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"""(fetch|EventSource|import)\(\s*["'`](https?:)?//""", text)
    assert "@import" not in text
