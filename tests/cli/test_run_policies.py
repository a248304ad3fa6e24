"""`tas run --policies`: the file is followed into the in-memory cluster, as `kubectl apply`.

Covered (the one `PolicyFileWatcher`, with `tas run`'s reload, `apply_policy_files`):
- the documents become the cluster's TASPolicy objects at the first poll;
- an edit reaches the object (a new generation), and nothing is applied again while the
  file is unchanged;
- a document taken out of the file deletes its object;
- a file that no longer parses keeps what the cluster has, and is read again once fixed.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import yaml

from embedded.cluster import InMemoryCluster
from tas.policies.files import PolicyFileWatcher
from tas.types import Namespace, PolicyKey, PolicyName
from tas_cli.run import apply_policy_files
from tests.builders import policy_document, rule

A = PolicyKey(Namespace("default"), PolicyName("a"))
B = PolicyKey(Namespace("default"), PolicyName("b"))


def write(path: Path, *documents: object, mtime_ns: int) -> None:
    path.write_text(yaml.safe_dump_all(documents))
    os.utime(path, ns=(mtime_ns, mtime_ns))  # a new mtime even on a coarse clock


def watch(path: Path) -> tuple[PolicyFileWatcher, InMemoryCluster]:
    cluster = InMemoryCluster()
    return PolicyFileWatcher(path, functools.partial(apply_policy_files, cluster=cluster)), cluster


def targets(cluster: InMemoryCluster) -> dict[PolicyKey, object]:
    return {
        d.key: d.body["spec"]["strategies"]["dontschedule"]["rules"][0]["target"]
        for d in cluster.list_policy_documents()
    }


def test_the_file_becomes_the_clusters_objects_and_follows_edits(tmp_path: Path) -> None:
    path = tmp_path / "policies.yaml"
    a1 = policy_document("a", dontschedule=[rule("health_metric", "Equals", 1)])
    b1 = policy_document("b", dontschedule=[rule("health_metric", "Equals", 1)])
    write(path, a1, b1, mtime_ns=1)
    watcher, cluster = watch(path)
    assert watcher.poll() is True
    assert targets(cluster) == {A: 1, B: 1}
    assert watcher.poll() is False  # unchanged: not applied again

    a2 = policy_document("a", dontschedule=[rule("health_metric", "Equals", 2)])
    write(path, a2, mtime_ns=2)
    assert watcher.poll() is True
    assert targets(cluster) == {A: 2}  # edited, and b deleted
    (document,) = cluster.list_policy_documents()
    assert document.body["metadata"]["generation"] == 2


def test_a_file_that_no_longer_parses_keeps_the_clusters_objects(tmp_path: Path) -> None:
    path = tmp_path / "policies.yaml"
    write(path, policy_document("a", dontschedule=[rule("m", "Equals", 1)]), mtime_ns=1)
    watcher, cluster = watch(path)
    watcher.poll()
    path.write_text("kind: [unclosed\n")
    os.utime(path, ns=(2, 2))
    assert watcher.poll() is True
    assert targets(cluster) == {A: 1}
    write(path, policy_document("a", dontschedule=[rule("m", "Equals", 3)]), mtime_ns=3)
    watcher.poll()
    assert targets(cluster) == {A: 3}
