"""Policies from files: one file or a directory of `*.yaml`, `*.yml` and `*.json` files.

`PolicyFileWatcher.poll()` reloads when any file is added, removed or changed, so editing a
policy file takes effect without a restart. What a reload does is the caller's: the components'
`--policies` fill a `PolicyStore` (`into_store`: invalid documents are reported and skipped);
`tas run` applies the documents to its in-memory cluster, as `kubectl apply` would.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from tas.policies.model import LoadResult, PolicyProblem, TASPolicy, load_policies_text
from tas.policies.store import PolicyStore, run_every

POLICY_SUFFIXES = (".yaml", ".yml", ".json")

_Signature = tuple[tuple[str, int, int], ...]


def policy_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(
            p for p in path.iterdir() if p.suffix in POLICY_SUFFIXES and not p.name.startswith(".")
        )
    return [path]


def load_policy_path(path: Path) -> LoadResult:
    """Every policy under `path`, and every problem; an unreadable file is a problem too."""
    policies: list[TASPolicy] = []
    problems: list[PolicyProblem] = []
    warnings: list[PolicyProblem] = []
    if not path.exists():
        return LoadResult((), (PolicyProblem(str(path), "", "no such file or directory"),))
    for file in policy_files(path):
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            problems.append(PolicyProblem(str(file), "", f"cannot read: {error}"))
            continue
        result = load_policies_text(text, source=str(file))
        policies.extend(result.policies)
        problems.extend(result.problems)
        warnings.extend(result.warnings)
    return LoadResult(tuple(policies), tuple(problems), tuple(warnings))


def _signature(path: Path) -> _Signature:
    entries: list[tuple[str, int, int]] = []
    try:
        for file in policy_files(path):
            stat = file.stat()
            entries.append((str(file), stat.st_mtime_ns, stat.st_size))
    except OSError:
        pass
    return tuple(entries)


def into_store(store: PolicyStore) -> Callable[[Path], None]:
    """A reload that makes `store` equal to what the files under its path say."""

    def reload(path: Path) -> None:
        result = load_policy_path(path)
        store.replace(result.policies, result.problems, result.warnings)

    return reload


class PolicyFileWatcher:
    """Calls `reload(path)` at the first poll and whenever a policy file under `path` changes."""

    def __init__(self, path: Path, reload: Callable[[Path], None]) -> None:
        self._path = path
        self._reload = reload
        self._signature: _Signature | None = None

    def poll(self) -> bool:
        """Reload if anything changed since the last poll; True when a reload happened."""
        signature = _signature(self._path)
        if signature == self._signature:
            return False
        self._signature = signature
        self._reload(self._path)
        return True

    def run(self, stop: threading.Event, interval: float = 1.0) -> None:
        """Poll until `stop` is set; meant for a daemon thread."""
        run_every(self.poll, stop, interval, failed=f"Reloading policies from {self._path} failed")
