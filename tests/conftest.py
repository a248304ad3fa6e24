"""Fixtures shared by every test package."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.k8s_emulator import KubeEmulator


@pytest.fixture
def kube_emulator() -> Iterator[KubeEmulator]:
    """A started Kubernetes API emulator on 127.0.0.1 (see tests/k8s_emulator)."""
    with KubeEmulator(bookmark_interval=0.2) as emulator:
        yield emulator
