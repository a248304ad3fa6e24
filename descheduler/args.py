"""What every part of the policy file is read with: a reader that notes problems instead of
raising, and the namespace filter every plugin takes.

The config reader, the profile parser and each plugin's `parse_args` read their mapping with a
`FieldReader`, so every problem in the file is collected with its path
(`profiles[0].pluginConfig[1].args.thresholds.cpu`) and reported at once, and a field nobody
read is reported as unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class NamespaceFilter:
    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        if self.include and namespace not in self.include:
            return False
        return namespace not in self.exclude


class FieldReader:
    """Reads one mapping, noting problems with their path instead of raising."""

    def __init__(self, raw: object, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        self.seen: set[str] = set()
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            self.problem(path, f"must be a mapping, got {type(raw).__name__}")
            raw = {}
        self.raw: Mapping[str, Any] = raw

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str) -> Any:
        self.seen.add(key)
        return self.raw.get(key)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(self.at(key), f"must be true or false, got {value!r}")
            return default
        return value

    def integer(self, key: str, default: int | None, *, minimum: int = 0) -> int | None:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(self.at(key), f"must be an integer, got {value!r}")
            return default
        if value < minimum:
            self.problem(self.at(key), f"must be at least {minimum}, got {value}")
            return default
        return value

    def number(self, key: str, default: float, *, low: float, high: float) -> float:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(self.at(key), f"must be a number, got {value!r}")
            return default
        if not low <= value <= high:
            self.problem(self.at(key), f"must be between {low:g} and {high:g}, got {value}")
            return default
        return float(value)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(self.at(key), f"must be a list of strings, got {value!r}")
            return ()
        return tuple(value)

    def namespaces(self, key: str = "namespaces") -> NamespaceFilter:
        inner = FieldReader(self.get(key), self.at(key), self.problems)
        result = NamespaceFilter(
            frozenset(inner.strings("include")), frozenset(inner.strings("exclude"))
        )
        inner.finish()
        if result.include and result.exclude:
            self.problem(self.at(key), "give include or exclude, not both")
        return result

    def finish(self) -> None:
        for key in self.raw:
            if key not in self.seen:
                self.problem(self.at(str(key)), "unknown field")
