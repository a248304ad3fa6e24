"""`make run`'s first run installs the project editable: with its packages at the project root
declared (`package-dir = {"" = "."}`), setuptools takes its quiet `.pth` route instead of the
import finder whose "BuildBackendWarning: Editable installation ... !!" banner it printed."""

from __future__ import annotations

import tomllib

import setuptools  # type: ignore[import-untyped]  # no stubs in the environment

from tests.processes import ROOT


def test_the_packages_at_the_root_are_declared_so_the_editable_install_is_quiet() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    setuptools = project["tool"]["setuptools"]
    assert setuptools["package-dir"] == {"": "."}
    found = setuptools["packages"]["find"]["include"]
    assert all((ROOT / name.rstrip("*")).is_dir() for name in found)


def test_the_wheel_installs_the_products_packages_and_neither_benchmarks_nor_tests() -> None:
    """What `pip install` puts in site-packages: as `[tool.setuptools.packages.find]` finds it
    (namespace packages included, pyproject's default)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    find = project["tool"]["setuptools"]["packages"]["find"]
    packages = setuptools.find_namespace_packages(
        where=str(ROOT), include=find["include"], exclude=find.get("exclude", ())
    )
    top_level = {name.split(".")[0] for name in packages}
    assert "benchmarks" not in top_level
    assert "tests" not in top_level
    assert {"tas", "tas_cli", "extender", "policy_controller", "descheduler"} <= top_level
