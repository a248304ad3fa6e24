"""What every part of the policy file is read with: a reader that notes problems instead of
raising, the namespace filter and the label selectors every plugin takes.

The config reader, the profile parser and each plugin's `parse_args` read their mapping with a
`FieldReader`, so every problem in the file is collected with its path
(`profiles[0].pluginConfig[1].args.thresholds.cpu`) and reported at once, and a field nobody
read is reported as unknown.

Label selectors come in the two shapes Kubernetes users write: the structured
`{matchLabels, matchExpressions}` of a `labelSelector`, and the string form of a
`nodeSelector` (`zone=a,tier!=db,env in (prod,stage),!legacy`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tas.cluster.model import LabelSelector, Requirement
from tas.durations import DurationError, parse_duration

T = TypeVar("T")

#: The operators of a label selector's `matchExpressions`.
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class NamespaceFilter:
    """Upstream's `namespaces: {include, exclude}`. A name ending in `*` is a prefix (an
    extension: the OpenShift profiles exclude every `openshift-*` namespace)."""

    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        if self.include and not _listed(namespace, self.include):
            return False
        return not _listed(namespace, self.exclude)


def _listed(namespace: str, names: frozenset[str]) -> bool:
    if namespace in names:
        return True
    return any(n.endswith("*") and namespace.startswith(n[:-1]) for n in names)


@dataclass(frozen=True, slots=True)
class PodSelection:
    """The namespaces and label selector a plugin's pods must match (upstream's pod filter)."""

    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)
    labels: LabelSelector | None = None

    def matches(self, namespace: str, labels: Mapping[str, str]) -> bool:
        if not self.namespaces.allows(namespace):
            return False
        return self.labels is None or self.labels.matches(labels)


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

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def child(self, key: str) -> FieldReader:
        return FieldReader(self.get(key), self.at(key), self.problems)

    def boolean(self, key: str, default: bool) -> bool:
        return self._typed(key, default, bool, "true or false")

    def integer(
        self, key: str, default: int | None, *, minimum: int = 0, maximum: int | None = None
    ) -> int | None:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(self.at(key), f"must be an integer, got {value!r}")
            return default
        if value < minimum:
            self.problem(self.at(key), f"must be at least {minimum}, got {value}")
            return default
        if maximum is not None and value > maximum:
            self.problem(self.at(key), f"must be at most {maximum}, got {value}")
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

    def string(self, key: str, default: str = "") -> str:
        return self._typed(key, default, str, "a string")

    def _typed(self, key: str, default: T, kind: type[T], wording: str) -> T:
        """The value at `key` when it is a `kind`; `default` when absent or (a problem that
        says it must be `wording`) of another type."""
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, kind):
            self.problem(self.at(key), f"must be {wording}, got {value!r}")
            return default
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str = "") -> str:
        value = self.string(key, default)
        if value and value not in choices:
            self.problem(self.at(key), f"unknown value {value!r}; known: {', '.join(choices)}")
            return default
        return value

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

    def strings_of(self, key: str, known: Sequence[str], *, what: str = "") -> tuple[str, ...]:
        """A list of strings each of which must be one of `known` (each other one is a
        problem at its index, `what` naming what it is: "unknown state 'x'; known: ...")."""
        found = self.strings(key)
        for index, value in enumerate(found):
            if value not in known:
                self.problem(
                    f"{self.at(key)}[{index}]",
                    f"unknown {what + ' ' if what else ''}{value!r}; known: {', '.join(known)}",
                )
        return found

    def each(self, key: str) -> list[FieldReader]:
        """A list of mappings, a reader for each (its path `key[index]`); absent: none."""
        raw = self.get(key) or []
        if not isinstance(raw, list):
            self.problem(self.at(key), "must be a list")
            return []
        return [
            FieldReader(item, f"{self.at(key)}[{index}]", self.problems)
            for index, item in enumerate(raw)
        ]

    def percentages(
        self, key: str, *, known: Sequence[str] = (), what: str = "resource", high: float = 100
    ) -> dict[str, float]:
        """A mapping of names (each one of `known`, when given) to percentages from 0 to
        `high` (math.inf: no bound), as thresholds are written; each bad entry is a problem
        at its own path and left out."""
        raw = self.get(key)
        if raw is None:
            return {}
        if not isinstance(raw, Mapping):
            self.problem(self.at(key), f"must map {what} names to percentages, got {raw!r}")
            return {}
        bounds = f"0..{high:g}" if math.isfinite(high) else "of 0 or more"
        found: dict[str, float] = {}
        for name, value in raw.items():
            where = f"{self.at(key)}.{name}"
            if known and name not in known:
                self.problem(where, f"unknown {what} {name!r}; known: {', '.join(known)}")
            elif (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not 0 <= value <= high
            ):
                self.problem(where, f"must be a percentage {bounds}, got {value!r}")
            else:
                found[str(name)] = float(value)
        return found

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            self.problem(self.at(key), f"must be a list of integers, got {value!r}")
            return ()
        return tuple(value)

    def duration(self, key: str) -> float | None:
        """A Go duration (`5m`, `1h30m`) or a number of seconds; None when absent."""
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            self.problem(self.at(key), f"must be a duration like 5m or 1h30m, got {value!r}")
            return None
        try:
            return parse_duration(str(value))
        except DurationError as error:
            self.problem(self.at(key), str(error))
            return None

    def namespaces(self, key: str = "namespaces") -> NamespaceFilter:
        inner = FieldReader(self.get(key), self.at(key), self.problems)
        result = NamespaceFilter(
            frozenset(inner.strings("include")), frozenset(inner.strings("exclude"))
        )
        inner.finish()
        if result.include and result.exclude:
            self.problem(self.at(key), "give include or exclude, not both")
        return result

    def label_selector(self, key: str = "labelSelector") -> LabelSelector | None:
        """A `{matchLabels, matchExpressions}` selector; None when absent."""
        raw = self.get(key)
        if raw is None:
            return None
        return parse_label_selector(raw, self.at(key), self.problems)

    def node_selector(self, key: str = "nodeSelector") -> LabelSelector | None:
        """Upstream's `nodeSelector` string (`k=v,k2 in (a,b)`), the policy's and the
        DefaultEvictor's alike; a `{k: v}` mapping is accepted for convenience (k=v, ...).
        None when absent or empty."""
        raw = self.get(key)
        if raw is None or raw == "":
            return None
        if isinstance(raw, Mapping):
            return LabelSelector(match_labels={str(k): str(v) for k, v in raw.items()})
        if not isinstance(raw, str):
            self.problem(self.at(key), f"must be a label selector like 'k=v,k2!=v2', got {raw!r}")
            return None
        try:
            return parse_selector_string(raw)
        except SelectorSyntaxError as error:
            self.problem(self.at(key), str(error))
            return None

    def pod_selection(self) -> PodSelection:
        """`namespaces` and `labelSelector`, the pod filter most upstream plugins take."""
        return PodSelection(namespaces=self.namespaces(), labels=self.label_selector())

    def finish(self) -> None:
        for key in self.raw:
            if key not in self.seen:
                self.problem(self.at(str(key)), "unknown field")


def parse_label_selector(raw: object, path: str, problems: list[str]) -> LabelSelector:
    r = FieldReader(raw, path, problems)
    labels = r.get("matchLabels") or {}
    match_labels: dict[str, str] = {}
    if not isinstance(labels, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        r.problem(r.at("matchLabels"), f"must map label names to values, got {labels!r}")
    else:
        match_labels = dict(labels)
    expressions: list[Requirement] = []
    for e in r.each("matchExpressions"):
        key = e.string("key")
        operator = e.string("operator")
        values = e.strings("values")
        e.finish()
        if not key:
            e.problem(e.at("key"), "is required")
        if operator not in SELECTOR_OPERATORS:
            e.problem(
                e.at("operator"),
                f"unknown operator {operator!r}; known: {', '.join(SELECTOR_OPERATORS)}",
            )
            continue
        if operator in ("In", "NotIn") and not values:
            e.problem(e.at("values"), f"{operator} needs at least one value")
        if operator in ("Exists", "DoesNotExist") and values:
            e.problem(e.at("values"), f"{operator} takes no values")
        expressions.append(Requirement(key=key, operator=operator, values=values))
    r.finish()
    return LabelSelector(match_labels=match_labels, match_expressions=tuple(expressions))


_SET_TERM = re.compile(r"^\s*([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


class SelectorSyntaxError(ValueError):
    """A label selector string that does not parse."""


def parse_selector_string(text: str) -> LabelSelector:
    """A label selector in its string form (`kubectl -l`, upstream's `nodeSelector`)."""
    requirements: list[Requirement] = []
    for term in _split_terms(text):
        set_term = _SET_TERM.match(term)
        if set_term:
            key, op, values = set_term.groups()
            parts = tuple(v.strip() for v in values.split(",") if v.strip())
            requirements.append(Requirement(key, "In" if op == "in" else "NotIn", parts))
            continue
        if "!=" in term:
            key, _, value = term.partition("!=")
            requirements.append(Requirement(key.strip(), "NotIn", (value.strip(),)))
        elif "=" in term:
            key, _, value = term.partition("==" if "==" in term else "=")
            requirements.append(Requirement(key.strip(), "In", (value.strip(),)))
        elif term.startswith("!"):
            requirements.append(Requirement(term[1:].strip(), "DoesNotExist"))
        else:
            requirements.append(Requirement(term, "Exists"))
        if not requirements[-1].key or " " in requirements[-1].key:
            raise SelectorSyntaxError(f"{term!r} is not a label selector term")
    return LabelSelector(match_expressions=tuple(requirements))


def _split_terms(text: str) -> list[str]:
    """Commas separate terms, except inside the parentheses of `in (a,b)`."""
    terms, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
        else:
            current += char
    terms.append(current.strip())
    return [t for t in terms if t]
