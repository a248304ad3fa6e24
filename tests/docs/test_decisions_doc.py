"""docs/decisions.md can be navigated, and every pointer into it leads somewhere; the README stays
short enough to read.

Covered:
- the table of contents lists every section heading (`##` and `###`) of decisions.md, in order,
  and each entry's anchor is its heading's;
- every link or reference to decisions.md anywhere in the repository (docs, README, code
  comments and docstrings, generated text) names an anchor or a quoted heading that exists;
- README.md is at most 250 lines.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.docs.markdown import anchors, heading_anchor

ROOT = Path(__file__).resolve().parents[2]
DECISIONS = ROOT / "docs" / "decisions.md"
README_MOST_LINES = 250
#: Where pointers into decisions.md can live: the product, its tests, docs and deployment files.
SEARCHED = ("*.md", "*.py", "*.yaml", "*.toml", "Makefile")
SKIPPED = {".venv", ".git", "node_modules", "comparison", "run", "build", "dist"}


def headings(text: str) -> list[str]:
    body = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.findall(r"^#{2,3} (.*)$", body, re.M)


def test_the_table_of_contents_lists_every_section_in_order() -> None:
    text = DECISIONS.read_text(encoding="utf-8")
    contents = text.split("\n## ", 1)[0]
    entries = re.findall(r"^ *- \[([^\]]+)\]\(#([^)]+)\)$", contents, re.M)
    assert [title for title, _ in entries] == headings(text)
    for title, anchor in entries:
        assert anchor == heading_anchor(title), title


def repository_files() -> list[Path]:
    found = []
    for pattern in SEARCHED:
        for path in ROOT.rglob(pattern):
            parts = set(path.relative_to(ROOT).parts[:-1])
            if not parts & SKIPPED and path.is_file():
                found.append(path)
    return sorted(set(found))


def test_every_pointer_into_decisions_md_resolves() -> None:
    found = anchors(DECISIONS)
    titles = headings(DECISIONS.read_text(encoding="utf-8"))
    checked = 0
    for path in repository_files():
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8", errors="replace"))
        where = path.relative_to(ROOT)
        for anchor in re.findall(r"decisions\.md#([\w-]+)", text):
            assert anchor in found, f"{where}: decisions.md#{anchor}: no such heading"
            checked += 1
        for quoted in re.findall(r"decisions\.md, \"([^\"]+)\"", text):
            assert any(title.startswith(quoted) for title in titles), (
                f"{where}: decisions.md, {quoted!r}: no heading begins so"
            )
            checked += 1
        if path == DECISIONS:
            for anchor in re.findall(r"\]\(#([\w-]+)\)", text):
                assert anchor in found, f"decisions.md: #{anchor}: no such heading"
                checked += 1
    assert checked > 10


def test_the_readme_is_at_most_250_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MOST_LINES, f"README.md is {len(lines)} lines"
