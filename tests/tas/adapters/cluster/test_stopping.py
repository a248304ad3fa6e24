"""Stopping the cluster adapter and the elector is prompt, against quiet watches and a dead API.

The emulator here sends no bookmarks, as a real API server sends about one a minute, so every
watch is blocked in a read when the stop comes.

Covered:
- `KubernetesCluster.stop()` aborts every quiet watch: it returns, and every watch thread has
  ended, well within a second (not after the watch's server-side timeout);
- a stop that comes while a watch is being opened (before there is a response to abort) still
  ends the informer at once;
- `LeaderElector.release()` against an API server that accepts connections but never answers
  gives up within its timeout, and leaves the elector a follower.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from tas.adapters.cluster.informer import Informer
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.adapters.cluster.leader import LeaderElector
from tas.cluster.codec import TypedCodec
from tas.cluster.convert import NODES, node_from_api
from tests.k8s_emulator import KubeEmulator
from tests.processes import black_hole


@pytest.fixture
def quiet_api() -> Iterator[KubeEmulator]:
    with KubeEmulator(bookmark_interval=3600.0) as emulator:
        emulator.create("nodes", {"metadata": {"name": "n1"}})
        yield emulator


def watch_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("watch-")}


def test_stop_aborts_every_quiet_watch_at_once(quiet_api: KubeEmulator) -> None:
    before = watch_threads()
    cluster = KubernetesCluster(quiet_api.api_client())
    cluster.start()
    assert cluster.wait_synced(10)
    started = watch_threads() - before
    assert len(started) == len(cluster.informers)
    time.sleep(0.3)  # every watch open, and blocked in a read

    began = time.monotonic()
    cluster.stop()
    seconds = time.monotonic() - began

    assert seconds < 0.5
    assert not any(thread.is_alive() for thread in started)


def test_a_stop_while_the_watch_is_being_opened_ends_the_informer_at_once(
    quiet_api: KubeEmulator,
) -> None:
    core = client.CoreV1Api(quiet_api.api_client())
    stop = threading.Event()

    def list_node(**arguments: Any) -> Any:
        if arguments.get("watch"):
            # The stop comes now, while the watch request is on its way: `close()` finds no
            # response to abort yet.
            stop.set()
            informer.close()
        return core.list_node(**arguments)

    informer: Informer[Any] = Informer(
        name="nodes",
        list_call=list_node,
        codec=TypedCodec(NODES, node_from_api),
        on_change=lambda *_: None,
    )
    thread = threading.Thread(target=informer.run, args=(stop,), daemon=True)
    thread.start()

    thread.join(2)

    assert not thread.is_alive(), "the informer waited for its watch to time out"
    assert informer.synced.is_set()


def test_release_gives_up_within_its_timeout_when_the_api_does_not_answer(
    kube_emulator: KubeEmulator,
) -> None:
    api_client = kube_emulator.api_client()
    elector = LeaderElector(api_client, name="lease", namespace="default", identity="a")
    assert elector.try_acquire_or_renew()
    with black_hole() as url:  # accepts connections (into its backlog), never answers
        api_client.configuration.host = url

        began = time.monotonic()
        elector.release(timeout=0.3)
        seconds = time.monotonic() - began

    assert seconds < 1.0
    assert not elector.is_leader
