"""Reading Markdown as GitHub renders it, for the tests that check links into the docs."""

from __future__ import annotations

import re
from pathlib import Path


def heading_anchor(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings."""
    found = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if heading := re.match(r"^#{1,6} (.*)", line):
            found.add(heading_anchor(heading.group(1)))
    return found
