"""Fixtures shared by every test package, and how the suite is shared out between processes.

`make test` runs the tests on every core (pytest-xdist, `-n auto --dist loadgroup`): each test
goes to whichever worker is free, except that the tests of one module that share a module- or
class-scoped fixture (one Prometheus, one set of simulator runs) all go to one worker, so the
fixture is built once rather than once per worker. A session-scoped fixture is built once per
worker. Every test owns its ports (`tests.processes.free_port`) and its files (`tmp_path`,
which xdist gives each worker a directory of its own for).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.k8s_emulator import KubeEmulator

#: The fixture scopes whose tests stay on one worker (the module's: "class" is within one).
_SHARED_WITHIN_A_MODULE = frozenset({"module", "class"})


@pytest.fixture
def kube_emulator() -> Iterator[KubeEmulator]:
    """A started Kubernetes API emulator on 127.0.0.1 (see tests/k8s_emulator)."""
    with KubeEmulator(bookmark_interval=0.2) as emulator:
        yield emulator


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that shares a module- or class-scoped fixture with the other
    tests of its module (its module's path), or None for a test any worker may run alone."""
    if not isinstance(item, pytest.Function):
        return None
    for definitions in item._fixtureinfo.name2fixturedefs.values():
        if any(definition.scope in _SHARED_WITHIN_A_MODULE for definition in definitions):
            return item.path.relative_to(item.config.rootpath).as_posix()
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test sharing a module's fixture with its module's xdist group (see above);
    xdist's `--dist loadgroup` then sends the group to one worker. Nothing without xdist."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        group = shared_fixture_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
