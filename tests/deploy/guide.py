"""docs/deploy.md read as the deployment tests read it: its shell blocks and lines, a section,
each profile's install steps and the uninstall's deletes, and the namespaces this project's
kustomizations may create (and so delete)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.deploy.pipeline import ROOT

GUIDE = ROOT / "docs" / "deploy.md"
#: The namespaces this project's kustomizations may create (and so delete).
OWNED_NAMESPACES = {"telemetry-aware-scheduling", "tas-monitoring"}


def shell_blocks(path: Path) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.DOTALL)


def shell_lines(path: Path) -> list[str]:
    """The guide's shell lines, continuation lines joined, comments and heredoc bodies left out."""
    lines: list[str] = []
    for block in shell_blocks(path):
        heredoc = None
        for line in block.replace("\\\n", " ").splitlines():
            if heredoc is not None:
                heredoc = None if line.strip() == heredoc else heredoc
                continue
            code = line.split(" #", 1)[0].strip()
            if code and not code.startswith("#"):
                lines.append(code)
            if found := re.search(r"<<\s*'?(\w+)'?", code):
                heredoc = found.group(1)
    return lines


def section(title: str) -> str:
    """The guide's section `title` (from its `## ` heading to the next)."""
    text = GUIDE.read_text(encoding="utf-8")
    start = text.index(f"## {title}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def install_steps(profile: str) -> list[str]:
    """The shell lines of the guide's install steps for `profile`, continuation lines joined."""
    (block,) = [
        b
        for b in shell_blocks(GUIDE)
        if "# 1. the CRD" in b and f"-k deploy/profiles/{profile} " in b
    ]
    lines = [line.split(" #", 1)[0].strip() for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def uninstall_deletes() -> list[list[str]]:
    """The words of each `kubectl delete` of the guide's uninstall steps."""
    uninstall = section("11. Uninstall and rollback")
    steps = re.findall(r"```sh\n(.*?)```", uninstall, flags=re.DOTALL)
    first = steps[0]  # the uninstall steps; the policies' own block follows
    return [
        shlex.split(line.split(" #", 1)[0])
        for line in first.splitlines()
        if line.startswith("kubectl delete")
    ]
