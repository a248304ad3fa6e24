"""`make run`'s first run installs the project editable: with its packages at the project root
declared (`package-dir = {"" = "."}`), setuptools takes its quiet `.pth` route instead of the
import finder whose "BuildBackendWarning: Editable installation ... !!" banner it printed."""

from __future__ import annotations

import tomllib

from tests.processes import ROOT


def test_the_packages_at_the_root_are_declared_so_the_editable_install_is_quiet() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "."}
    found = setuptools["packages"]["find"]["include"]
    assert all((ROOT / name.rstrip("*")).is_dir() for name in found)
