"""TASPolicy: the resource model and its validation.

A policy is validated once, when it is read (from a file or from the cluster), so that
evaluation in `tas.rules` cannot fail. Validation never stops at the first problem: every
problem is reported with its path (policy, strategy, rule index, field), and a bad policy is
rejected as a whole while other policies keep working.

Errors:
    PolicyError                 anything wrong with policy input
      PolicyValidationError     one policy document with one or more `PolicyProblem`s
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
)
from pydantic_core import ErrorDetails

from tas.quantity import QuantityError, parse_quantity
from tas.types import MetricName, Namespace, PolicyKey, PolicyName
from tas.vocabulary import GROUP, KIND, LABELING_PREFIX, VERSION

API_VERSION = f"{GROUP}/{VERSION}"


_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_METRIC_NAME = re.compile(r"^[a-zA-Z0-9_-]+$")


class Operator(enum.StrEnum):
    """Comparison of a node's metric value against a rule's target."""

    EQUALS = "Equals"
    LESS_THAN = "LessThan"
    GREATER_THAN = "GreaterThan"
    # Extensions beyond TAS; the three TAS operators keep their meaning.
    GREATER_OR_EQUAL = "GreaterOrEqual"
    LESS_OR_EQUAL = "LessOrEqual"
    NOT_EQUALS = "NotEquals"


class LogicalOperator(enum.StrEnum):
    ANY_OF = "anyOf"
    ALL_OF = "allOf"


class StrategyName(enum.StrEnum):
    DONTSCHEDULE = "dontschedule"
    SCHEDULEONMETRIC = "scheduleonmetric"
    DESCHEDULE = "deschedule"
    LABELING = "labeling"


@dataclass(frozen=True, slots=True)
class PolicyProblem:
    """One thing wrong with one policy document; `path` is dotted, e.g. `spec.strategies.x`."""

    source: str
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.source}: " if self.source else ""
        return f"{where}{self.path}: {self.message}"


class PolicyError(Exception):
    """Anything wrong with policy input."""


class PolicyValidationError(PolicyError):
    """A policy document that cannot be applied; `problems` lists every reason at once."""

    def __init__(self, problems: Sequence[PolicyProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(str(p) for p in self.problems))


def is_valid_label_name(text: str) -> bool:
    return len(text) <= 63 and _LABEL_NAME.match(text) is not None


def is_valid_label_value(text: str) -> bool:
    return text == "" or is_valid_label_name(text)


@dataclass(frozen=True, slots=True)
class Label:
    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


def _parse_label(text: object) -> Label:
    if not isinstance(text, str):
        raise ValueError(f"label must be a string 'key=value', got {text!r}")
    key, sep, value = text.partition("=")
    if not sep or "=" in value:
        raise ValueError(f"label {text!r} must be exactly one 'key=value'")
    if not is_valid_label_name(key):
        raise ValueError(
            f"label {text!r}: key {key!r} must be 1-63 characters of [A-Za-z0-9-_.], "
            "starting and ending alphanumeric (it is placed under "
            f"'{LABELING_PREFIX}<policy>/')"
        )
    if not is_valid_label_value(value):
        raise ValueError(
            f"label {text!r}: value {value!r} must be empty or 1-63 characters of "
            "[A-Za-z0-9-_.], starting and ending alphanumeric"
        )
    return Label(key=key, value=value)


class Rule(BaseModel):
    """One comparison of a metric against a target."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    metricname: MetricName = Field(min_length=1)
    operator: Operator
    target: float = 0.0
    labels: tuple[Label, ...] = ()

    @field_validator("metricname")
    @classmethod
    def _metric_name_pattern(cls, value: str) -> str:
        if not _METRIC_NAME.match(value):
            raise ValueError(f"metric name {value!r} must match ^[a-zA-Z0-9_-]+$")
        return value

    @field_validator("target", mode="before")
    @classmethod
    def _target_number(cls, value: object) -> float:
        if value is None:
            return 0.0
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise ValueError(f"target must be a number or a quantity string, got {value!r}")
        try:
            return parse_quantity(value)
        except QuantityError as error:
            raise ValueError(str(error)) from error

    @field_validator("labels", mode="before")
    @classmethod
    def _labels_key_value(cls, value: object) -> tuple[Label, ...]:
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            raise ValueError(f"labels must be a list of 'key=value' strings, got {value!r}")
        labels: list[Label] = []
        problems: list[str] = []
        for index, item in enumerate(value):
            try:
                labels.append(_parse_label(item))
            except ValueError as error:
                problems.append(f"[{index}] {error}")
        if problems:
            raise ValueError("; ".join(problems))
        return tuple(labels)

    def describe(self) -> str:
        """The rule as TAS logs it, e.g. `health_metric Equals 1`."""
        return f"{self.metricname} {self.operator.value} {format_number(self.target)}"


class Strategy(BaseModel):
    """A named strategy: rules joined by a logical operator."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    policy_name: str | None = Field(default=None, alias="policyName")
    logical_operator: LogicalOperator = Field(
        default=LogicalOperator.ANY_OF, alias="logicalOperator"
    )
    rules: tuple[Rule, ...]

    @field_validator("rules", mode="before")
    @classmethod
    def _at_least_one_rule(cls, value: object) -> object:
        if isinstance(value, list | tuple) and not value:
            raise ValueError("at least one rule is required")
        return value

    @field_validator("logical_operator", mode="before")
    @classmethod
    def _empty_means_any_of(cls, value: object) -> object:
        return LogicalOperator.ANY_OF if value in (None, "") else value


class TASPolicy(BaseModel):
    """A validated TASPolicy: identity plus its strategies."""

    model_config = ConfigDict(frozen=True)

    name: PolicyName
    namespace: Namespace
    strategies: Mapping[StrategyName, Strategy]
    resource_version: str = ""

    @property
    def key(self) -> PolicyKey:
        return PolicyKey(self.namespace, self.name)

    def strategy(self, name: StrategyName) -> Strategy | None:
        return self.strategies.get(name)


class _Spec(BaseModel):
    model_config = ConfigDict(extra="ignore")

    strategies: dict[str, Strategy]


def _labeling_problems(strategy: Strategy) -> list[tuple[str, str]]:
    """Checks across labeling rules; (path below the strategy, message) pairs."""
    seen: dict[str, tuple[int, Operator]] = {}
    problems: list[tuple[str, str]] = []
    for index, rule in enumerate(strategy.rules):
        if not rule.labels:
            problems.append((f"rules[{index}].labels", "a labeling rule needs at least one label"))
        for label in rule.labels:
            first = seen.setdefault(label.key, (index, rule.operator))
            if first[1] is not rule.operator:
                problems.append(
                    (
                        f"rules[{index}].operator",
                        f"label key {label.key!r} is also written by rules[{first[0]}] with "
                        f"operator {first[1].value}; rules sharing a label key must use one "
                        "operator",
                    )
                )
    return problems


def format_number(value: float) -> str:
    """Integers without a decimal point, as TAS prints targets and values."""
    return str(int(value)) if value.is_integer() else repr(value)


def _location(loc: tuple[int | str, ...]) -> str:
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif item == "[key]":
            continue
        else:
            parts.append(("." if parts else "") + item)
    return "".join(parts)


def _message(item: ErrorDetails) -> str:
    """Pydantic's error, said the way a policy author needs to read it."""
    field_name = item["loc"][-1] if item["loc"] else "value"
    kind = item["type"]
    if kind == "enum":
        expected = (item.get("ctx") or {}).get("expected", "")
        return f"unknown {field_name} {item['input']!r}; expected {expected}"
    if kind == "missing":
        return f"{field_name} is required"
    if kind == "extra_forbidden":
        return f"unknown field {field_name!r}"
    return str(item["msg"]).removeprefix("Value error, ")


def parse_policy(document: Mapping[str, Any], *, source: str = "") -> TASPolicy:
    """Validate one TASPolicy document (as read from YAML, JSON or the API server).

    Raises `PolicyValidationError` listing every problem found.
    """
    problems: list[PolicyProblem] = []

    def problem(path: str, message: str) -> None:
        problems.append(PolicyProblem(source, path, message))

    if not isinstance(document, Mapping):
        raise PolicyValidationError([PolicyProblem(source, "", "a policy must be a mapping")])
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping):
        metadata = {}
        problem("metadata", "metadata with a name is required")
    name = metadata.get("name")
    label = f"policy {name!r}" if isinstance(name, str) and name else "policy"
    if not isinstance(name, str) or not name:
        problem("metadata.name", "a policy name is required")
        name = ""
    elif len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        problem("metadata.name", f"{name!r} is not a valid Kubernetes object name")
    namespace = metadata.get("namespace") or "default"
    if not isinstance(namespace, str) or not is_valid_label_name(namespace):
        problem("metadata.namespace", f"{namespace!r} is not a valid namespace")
    kind = document.get("kind", KIND)
    if kind != KIND:
        problem("kind", f"expected kind {KIND!r}, got {kind!r}")
    api_version = document.get("apiVersion", API_VERSION)
    if api_version != API_VERSION:
        problem("apiVersion", f"expected {API_VERSION!r}, got {api_version!r}")

    strategies: dict[StrategyName, Strategy] = {}
    spec = document.get("spec")
    if not isinstance(spec, Mapping) or not isinstance(spec.get("strategies"), Mapping):
        problem("spec.strategies", "a mapping of strategy name to strategy is required")
    else:
        raw = spec["strategies"]
        known = {s.value for s in StrategyName}
        for strategy_name in raw:
            if strategy_name not in known:
                problem(
                    f"spec.strategies.{strategy_name}",
                    f"unknown strategy {strategy_name!r}; known: {', '.join(sorted(known))}",
                )
        try:
            parsed = _Spec.model_validate({"strategies": dict(raw)})
        except ValidationError as error:
            for item in error.errors():
                problem(_location(("spec", *item["loc"])), _message(item))
        else:
            strategies = {StrategyName(k): v for k, v in parsed.strategies.items() if k in known}
            labeling = strategies.get(StrategyName.LABELING)
            for path, message in _labeling_problems(labeling) if labeling else []:
                problem(f"spec.strategies.labeling.{path}", message)
        deschedule = raw.get(StrategyName.DESCHEDULE)
        if deschedule is not None and name and not is_valid_label_name(name):
            problem(
                "metadata.name",
                f"{label} has a deschedule strategy, so its name must be usable as a node "
                "label key (at most 63 characters)",
            )

    if problems:
        for index, found in enumerate(problems):
            if not found.path.startswith("metadata"):
                problems[index] = PolicyProblem(source, found.path, f"{label}: {found.message}")
        raise PolicyValidationError(problems)
    resource_version = metadata.get("resourceVersion", "")
    return TASPolicy(
        name=PolicyName(name),
        namespace=Namespace(namespace),
        strategies=strategies,
        resource_version=str(resource_version or ""),
    )


@dataclass(frozen=True)
class LoadResult:
    """What a file or a text held: the valid policies and every problem of the invalid ones."""

    policies: tuple[TASPolicy, ...]
    problems: tuple[PolicyProblem, ...]


def _documents(loaded: Iterable[object]) -> Iterable[object]:
    for document in loaded:
        if document is None:
            continue
        if isinstance(document, Mapping) and str(document.get("kind", "")).endswith("List"):
            items = document.get("items")
            yield from items if isinstance(items, list) else []
        else:
            yield document


def load_policies_text(text: str, *, source: str = "") -> LoadResult:
    """Read every TASPolicy in a YAML or JSON text (multi-document and `List` kinds allowed)."""
    try:
        loaded = list(yaml.safe_load_all(text))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        reason = getattr(error, "problem", None) or str(error)
        return LoadResult((), (PolicyProblem(source, where, f"not valid YAML: {reason}"),))
    policies: list[TASPolicy] = []
    problems: list[PolicyProblem] = []
    for index, document in enumerate(_documents(loaded)):
        where = source if len(loaded) == 1 else f"{source}[document {index}]"
        if not isinstance(document, Mapping):
            problems.append(PolicyProblem(where, "", "a policy document must be a mapping"))
            continue
        try:
            policies.append(parse_policy(document, source=where))
        except PolicyValidationError as error:
            problems.extend(error.problems)
    return LoadResult(tuple(policies), tuple(problems))
