"""Fixtures of the deployment tests: the shipped metrics pipeline, running (see pipeline.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.deploy.pipeline import Pipeline, start_pipeline


@pytest.fixture(scope="session")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pipeline]:
    """Real node-exporters (node-a, node-b) and Prometheus, configured as shipped."""
    yield from start_pipeline(tmp_path_factory.mktemp("pipeline"))
