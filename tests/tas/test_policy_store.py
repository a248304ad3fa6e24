"""The policy store and policies read from files.

Covered:
- a replacement fully replaces: a removed strategy is gone (TAS kept it registered);
- the metric names of current policies are known (what the metric view must refresh);
- a directory of files: invalid files are reported and skipped, valid ones apply;
- the watcher reloads when a file is edited, added or removed, and not otherwise;
- a following thread outlives a failing reload: logged, and the next poll still runs;
- duplicates keep the first definition and say so;
- a policy with warnings (applied, part of it ignored) is applied, and each warning is logged
  once, not at every reload.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path

import pytest

from tas.policies.files import PolicyFileWatcher, into_store
from tas.policies.model import StrategyName
from tas.policies.store import PolicyStore
from tas.types import Namespace, PolicyKey, PolicyName
from tests.builders import make_policy, policy_document, rule

KEY = PolicyKey(Namespace("default"), PolicyName("p"))


def test_an_update_fully_replaces_the_policy() -> None:
    store = PolicyStore()
    store.replace(
        [
            make_policy(
                "p", deschedule=[rule("a", "Equals", 2)], dontschedule=[rule("b", "Equals", 1)]
            )
        ]
    )
    store.replace([make_policy("p", dontschedule=[rule("b", "Equals", 1)])])
    policy = store.snapshot().get(KEY)
    assert policy is not None
    assert set(policy.strategies) == {StrategyName.DONTSCHEDULE}
    assert store.snapshot().metric_names == {"b"}
    assert store.snapshot().generation == 2


def test_listeners_see_every_new_snapshot() -> None:
    store = PolicyStore()
    seen: list[int] = []
    store.subscribe(lambda snapshot: seen.append(len(snapshot.policies)))
    store.replace([make_policy("p", dontschedule=[rule("a", "Equals", 1)])])
    store.replace([])
    assert seen == [1, 0]


def test_the_store_is_loaded_only_once_its_listeners_know_the_policies() -> None:
    """A readiness check reads `loaded`, then the metric view's readiness: by then the view
    must have been told the policies' metrics, or it would report ready without them."""
    store = PolicyStore()
    loaded_while_told: list[bool] = []
    store.subscribe(lambda snapshot: loaded_while_told.append(store.loaded))
    store.replace([make_policy("p", dontschedule=[rule("a", "Equals", 1)])])
    assert loaded_while_told == [False]
    assert store.loaded


def test_a_duplicate_policy_keeps_the_first_and_is_reported() -> None:
    store = PolicyStore()
    first = make_policy("p", dontschedule=[rule("a", "Equals", 1)])
    second = make_policy("p", dontschedule=[rule("b", "Equals", 1)])
    snapshot = store.replace([first, second])
    assert snapshot.get(KEY) == first
    assert "defined more than once" in snapshot.problems[0].message


def write(path: Path, document: object) -> None:
    path.write_text(json.dumps(document))


def test_invalid_files_are_skipped_while_valid_ones_apply(tmp_path: Path) -> None:
    write(tmp_path / "good.yaml", policy_document("p", dontschedule=[rule("a", "Equals", 1)]))
    write(tmp_path / "bad.json", policy_document("q", dontschedule=[rule("a", "Bigger", 1)]))
    (tmp_path / "notes.txt").write_text("not a policy")
    store = PolicyStore()
    PolicyFileWatcher(tmp_path, into_store(store)).poll()
    snapshot = store.snapshot()
    assert list(snapshot.policies) == [KEY]
    assert [p.source for p in snapshot.problems] == [str(tmp_path / "bad.json")]
    assert store.loaded


def test_the_watcher_reloads_on_edit_add_and_remove_only(tmp_path: Path) -> None:
    store = PolicyStore()
    watcher = PolicyFileWatcher(tmp_path, into_store(store))
    assert watcher.poll() is True
    assert watcher.poll() is False
    good = tmp_path / "p.yaml"
    write(good, policy_document("p", dontschedule=[rule("a", "Equals", 1)]))
    assert watcher.poll() is True
    assert KEY in store.snapshot().policies
    write(good, policy_document("p", dontschedule=[rule("a", "Equals", 3)]))
    os.utime(good, ns=(1, 1))  # a different mtime even on coarse clocks
    assert watcher.poll() is True
    policy = store.snapshot().get(KEY)
    assert policy is not None
    assert policy.strategies[StrategyName.DONTSCHEDULE].rules[0].target == 3
    good.unlink()
    assert watcher.poll() is True
    assert store.snapshot().policies == {}


def test_a_missing_path_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    store = PolicyStore()
    PolicyFileWatcher(tmp_path / "absent.yaml", into_store(store)).poll()
    assert "no such file" in store.snapshot().problems[0].message


def test_a_failing_reload_is_logged_and_the_watcher_keeps_polling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "p.yaml").write_text("{}")
    calls: list[int] = []
    failed_once = threading.Event()
    stop = threading.Event()

    def reload(path: Path) -> None:
        calls.append(len(calls))
        if len(calls) == 1:
            failed_once.set()
            raise OSError("disk gone for a moment")
        stop.set()

    watcher = PolicyFileWatcher(tmp_path, reload)
    thread = threading.Thread(target=watcher.run, args=(stop, 0.01), daemon=True)
    with caplog.at_level(logging.ERROR):
        thread.start()
        assert failed_once.wait(5)
        os.utime(tmp_path / "p.yaml", ns=(2, 2))  # a change after the failed reload
        thread.join(5)
    assert calls == [0, 1]
    assert f"Reloading policies from {tmp_path} failed" in caplog.text


def test_a_policy_with_warnings_applies_and_each_warning_is_logged_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write(tmp_path / "p.yaml", policy_document("p", scheduleonmetric=[rule("a", "Equals")]))
    store = PolicyStore()
    reload = into_store(store)
    with caplog.at_level(logging.WARNING, logger="tas.policies.store"):
        reload(tmp_path)
        reload(tmp_path)
    assert list(store.snapshot().policies) == [KEY]
    (warning,) = store.snapshot().warnings
    assert warning.path == "spec.strategies.scheduleonmetric.rules[0].operator"
    logged = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert logged == [f"Policy applied, but: {warning}"]
    assert f"{tmp_path / 'p.yaml'}:1: warning: " in logged[0]
