"""The product's source, read as code: where something is built (composition-root tests)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every folder that ships or measures the product (the tests build parts as they need).
PRODUCT = (
    "tas",
    "tas_cli",
    "extender",
    "policy_controller",
    "descheduler",
    "tas_herd",
    "tas_explain",
    "tas_replay",
    "tas_inmemory",
    "tas_dashboard",
    "tas_simulator",
    "benchmarks",
)


def constructions(path: Path, name: str) -> list[int]:
    """The lines of `path` that call `name` (bare or as an attribute)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == name)
            or (isinstance(node.func, ast.Attribute) and node.func.attr == name)
        )
    ]


def construction_sites(name: str) -> set[str]:
    """Every `file:line` of the product that calls `name`, the file relative to the root."""
    return {
        f"{path.relative_to(ROOT)}:{line}"
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in constructions(path, name)
    }
