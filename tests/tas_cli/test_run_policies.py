"""`tas run --policies`: the file is followed into the in-memory cluster, as `kubectl apply`.

Covered (the one `PolicyFileWatcher`, with `tas run`'s reload, `apply_policy_files`):
- the documents become the cluster's TASPolicy objects at the first poll;
- an edit reaches the object (a new generation), and nothing is applied again while the
  file is unchanged;
- a document taken out of the file deletes its object;
- a file that no longer parses keeps what the cluster has, and is read again once fixed;
- a document with a duplicate key (which `tas validate` and `kubectl apply` refuse) is not
  applied: its object stays as it was, a log line names the file and line, and the file's
  other documents are applied.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import pytest
import yaml

from tas.policies.files import PolicyFileWatcher
from tas.types import Namespace, PolicyKey, PolicyName
from tas_inmemory.apply import apply_policy_files
from tas_inmemory.cluster import InMemoryCluster
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


def test_a_document_with_a_duplicate_key_is_not_applied_and_says_where(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policies.yaml"
    write(path, policy_document("a", dontschedule=[rule("m", "Equals", 1)]), mtime_ns=1)
    watcher, cluster = watch(path)
    watcher.poll()
    edited = yaml.safe_dump(policy_document("a", dontschedule=[rule("m", "Equals", 2)]))
    # The same key twice: YAML alone would quietly keep the later `target: 3`.
    doubled = edited.replace("target: 2\n", "target: 2\n        target: 3\n")
    assert doubled != edited
    b = yaml.safe_dump(policy_document("b", dontschedule=[rule("m", "Equals", 1)]))
    path.write_text(f"{doubled}---\n{b}")
    os.utime(path, ns=(2, 2))
    with caplog.at_level(logging.ERROR, logger="tas"):
        assert watcher.poll() is True
    assert targets(cluster) == {A: 1, B: 1}
    line = next(i for i, text in enumerate(doubled.splitlines(), 1) if "target: 3" in text)
    (said,) = [r.getMessage() for r in caplog.records if "duplicate key" in r.getMessage()]
    assert said.startswith(f"{path}:{line}: spec.strategies.dontschedule.rules[0].target: ")
    assert said.endswith("policy default/a left as it was")
