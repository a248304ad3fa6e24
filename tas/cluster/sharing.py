"""One object for each distinct value a cache holds many times over.

A cluster's pods repeat themselves: every replica of a workload has the same namespace, owner,
labels, requests, tolerations and images, and thousands of pods name the same few hundred
nodes. Parsed from JSON, each pod would hold its own copy of each; shared, a 150,000-pod cache
holds one copy per distinct value, which is most of the difference between a cache that fits
the components' memory limit and one that does not (docs/deploy.md, "Sizing").

`SharedValues` hands back the object it already holds for an equal value (strings, the keys
and values of the mappings, are interned: `sys.intern`, one copy while anything holds it). It
is bounded: when
it holds `max_entries` values it forgets them all and starts over, so values no record uses
any more (the labels of a ReplicaSet long gone) cost at most one table's worth. Records built
before a reset keep their objects; only sharing with later records is lost, until the new
table has seen them again.

Shared values are read-only by contract: the model's records are frozen, and their mappings
are typed `Mapping`. A caller that mutated a shared mapping would change it for every record
holding it; none may.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Mapping
from typing import TypeVar

H = TypeVar("H", bound=Hashable)

#: Distinct values kept before the table starts over: far above what one cluster's pods share
#: (namespaces, nodes, workloads, label values), far below what would hold every pod's own.
DEFAULT_MAX_ENTRIES = 200_000

_EMPTY: Mapping[str, str] = {}
_EMPTY_NUMBERS: Mapping[str, float] = {}


class SharedValues:
    """See the module docstring. Not thread-safe: each cache's single watch thread owns one."""

    def __init__(self, *, max_entries: int = DEFAULT_MAX_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, not {max_entries}")
        self._max_entries = max_entries
        self._values: dict[Hashable, object] = {}
        #: Mappings by their items: a dict cannot be a key, so it is kept beside its items.
        self._mappings: dict[tuple[tuple[str, object], ...], Mapping[str, object]] = {}

    def __len__(self) -> int:
        return len(self._values) + len(self._mappings)

    def value(self, value: H) -> H:
        """The object held for `value` (a string, a tuple, a frozen record), or `value`."""
        found = self._values.get(value)
        if found is not None:
            return found  # type: ignore[return-value]  # equal key, same type: stored by us
        self._remember(value, value)
        return value

    def strings(self, values: Mapping[str, object]) -> Mapping[str, str]:
        """A mapping of strings (labels, a node selector) as one shared, read-only dict."""
        if not values:
            return _EMPTY
        items = tuple((sys.intern(str(k)), sys.intern(str(v))) for k, v in values.items())
        return self._mapping(items)

    def numbers(self, values: Mapping[str, float]) -> Mapping[str, float]:
        """A mapping of quantities (requests, allocatable) as one shared, read-only dict."""
        if not values:
            return _EMPTY_NUMBERS
        items = tuple((sys.intern(k), v) for k, v in values.items())
        return self._mapping(items)

    def _mapping(self, items: tuple[tuple[str, H], ...]) -> Mapping[str, H]:
        found = self._mappings.get(items)
        if found is None:
            self._make_room()
            found = self._mappings[items] = dict(items)
        return found  # type: ignore[return-value]  # built here from `items`

    def _remember(self, key: Hashable, value: object) -> None:
        self._make_room()
        self._values[key] = value

    def _make_room(self) -> None:
        if len(self) >= self._max_entries:
            self._values.clear()
            self._mappings.clear()


class NoSharing(SharedValues):
    """Every value as given: for converting one object, where sharing buys nothing."""

    def __init__(self) -> None:
        super().__init__(max_entries=1)

    def value(self, value: H) -> H:
        return value

    def strings(self, values: Mapping[str, object]) -> Mapping[str, str]:
        return {str(k): str(v) for k, v in values.items()}

    def numbers(self, values: Mapping[str, float]) -> Mapping[str, float]:
        return dict(values)
