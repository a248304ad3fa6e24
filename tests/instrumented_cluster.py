"""The in-memory cluster with the instrumentation tests need: write counts and failures on cue.

`tas_inmemory.cluster.InMemoryCluster` calls `before_write` with the kind of every write asked for;
this subclass counts them (so a test can assert that a steady state writes nothing) and raises
injected errors from it (so a test can watch a component handle a failing API).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from tas.cluster.interface import ClusterError
from tas_inmemory.cluster import InMemoryCluster, WriteKind


class InstrumentedCluster(InMemoryCluster):
    def __init__(self, **options: Any) -> None:
        self._instrument_lock = threading.Lock()
        self._writes: Counter[WriteKind] = Counter()
        self._failures: dict[WriteKind, list[ClusterError]] = {}
        super().__init__(before_write=self._on_write, **options)

    def write_counts(self) -> Mapping[WriteKind, int]:
        """Writes asked for per kind (including refused and failed ones) since the last reset."""
        with self._instrument_lock:
            return MappingProxyType({kind: self._writes[kind] for kind in WriteKind})

    def total_writes(self) -> int:
        with self._instrument_lock:
            return sum(self._writes.values())

    def reset_write_counts(self) -> None:
        with self._instrument_lock:
            self._writes.clear()

    def inject_failure(self, kind: WriteKind, error: ClusterError, *, times: int = 1) -> None:
        """Make the next `times` writes of `kind` raise `error` (evictions return FAILED)."""
        with self._instrument_lock:
            self._failures.setdefault(kind, []).extend([error] * times)

    def _on_write(self, kind: WriteKind) -> None:
        with self._instrument_lock:
            self._writes[kind] += 1
            pending = self._failures.get(kind)
            error = pending.pop(0) if pending else None
        if error is not None:
            raise error
