"""The cluster adapter's tests share `start(**options)`: a KubernetesCluster over the test
module's `api` (the API emulator, filled as that module needs), with a short watch timeout and a
fast backoff unless the test says otherwise, started, and stopped at the test's end."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tas.adapters.cluster.informer import Backoff
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tests.k8s_emulator import KubeEmulator


@pytest.fixture
def start(api: KubeEmulator) -> Iterator[Callable[..., KubernetesCluster]]:
    started: list[KubernetesCluster] = []

    def start(**options: Any) -> KubernetesCluster:
        options.setdefault("watch_timeout", 2.0)
        options.setdefault("backoff", lambda: Backoff(initial=0.05, maximum=0.2, jitter=0))
        cluster = KubernetesCluster(api.api_client(), **options)
        started.append(cluster)
        cluster.start()
        return cluster

    yield start
    for cluster in started:
        cluster.stop()
