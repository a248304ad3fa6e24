"""TASPolicy: the resource model and its validation.

A policy is validated once, when it is read (from a file or from the cluster), so that
evaluation in `tas.rules` cannot fail. Validation never stops at the first problem: every
problem is reported with its path (policy, strategy, rule index, field), and a bad policy is
rejected as a whole while other policies keep working.

A problem is an error (the document is not applied) or a warning: something TAS and these
components accept but that does not do what it seems to (a second scheduleonmetric rule, which
only the first counts; `Equals` there, which orders nothing; a missing target, silently 0).
`check_policy` finds both, and it is the one check: the components' loaders (files and the
cluster) log its warnings, and `tas validate` prints them.

Errors:
    PolicyError                 anything wrong with policy input
      PolicyValidationError     one policy document with one or more `PolicyProblem`s
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
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

from tas.policies.documents import Document, read_documents
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


def higher_is_better(operator: Operator) -> bool | None:
    """How scheduleonmetric orders nodes by this operator; None: no preference (all equal)."""
    if operator in (Operator.GREATER_THAN, Operator.GREATER_OR_EQUAL):
        return True
    if operator in (Operator.LESS_THAN, Operator.LESS_OR_EQUAL):
        return False
    return None


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
    """One thing wrong with one policy document; `path` is dotted, e.g. `spec.strategies.x`.

    `line` (from 1) is where `path` is written, when the document came from a text;
    `document` (from 1) is its place in a text of several documents.
    """

    source: str
    path: str
    message: str
    line: int | None = None
    document: int | None = None
    warning: bool = False

    def __str__(self) -> str:
        """`file:line: document N: warning: path: message`, each part only when known."""
        where = self.source
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        parts = [where] if where else []
        if self.document is not None:
            parts.append(f"document {self.document}")
        if self.warning:
            parts.append("warning")
        if self.path:
            parts.append(self.path)
        return ": ".join([*parts, self.message])


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


@dataclass(frozen=True)
class PolicyCheck:
    """What one policy document is: the policy (None when it has errors), errors, warnings."""

    policy: TASPolicy | None
    problems: tuple[PolicyProblem, ...]
    warnings: tuple[PolicyProblem, ...]


def parse_policy(document: Mapping[str, Any], *, source: str = "") -> TASPolicy:
    """Validate one TASPolicy document (as read from YAML, JSON or the API server).

    Raises `PolicyValidationError` listing every problem found; warnings are not raised
    (`check_policy` returns them).
    """
    checked = check_policy(document, source=source)
    if checked.policy is None:
        raise PolicyValidationError(checked.problems)
    return checked.policy


def check_policy(document: Mapping[str, Any], *, source: str = "") -> PolicyCheck:
    """Every error and warning of one TASPolicy document, and the policy when it has no error."""
    problems: list[PolicyProblem] = []
    warnings: list[PolicyProblem] = []

    def problem(path: str, message: str) -> None:
        problems.append(PolicyProblem(source, path, message))

    if not isinstance(document, Mapping):
        return PolicyCheck(None, (PolicyProblem(source, "", "a policy must be a mapping"),), ())
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
        # Each strategy on its own, so that one bad strategy does not hide what the others say.
        for strategy_name, body in raw.items():
            try:
                strategy = Strategy.model_validate(body)
            except ValidationError as error:
                for item in error.errors():
                    at = ("spec", "strategies", strategy_name, *item["loc"])
                    problem(_location(at), _message(item))
            else:
                if strategy_name in known:
                    strategies[StrategyName(strategy_name)] = strategy
        labeling = strategies.get(StrategyName.LABELING)
        for path, message in _labeling_problems(labeling) if labeling else []:
            problem(f"spec.strategies.labeling.{path}", message)
        for path, message in _ignored_parts(raw, strategies, name=name):
            warnings.append(PolicyProblem(source, path, f"{label}: {message}", warning=True))
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
        return PolicyCheck(None, tuple(problems), tuple(warnings))
    resource_version = metadata.get("resourceVersion", "")
    policy = TASPolicy(
        name=PolicyName(name),
        namespace=Namespace(namespace),
        strategies=strategies,
        resource_version=str(resource_version or ""),
    )
    return PolicyCheck(policy, (), tuple(warnings))


def _ignored_parts(
    raw: Mapping[str, Any], strategies: Mapping[StrategyName, Strategy], *, name: str
) -> list[tuple[str, str]]:
    """What a valid policy says that TAS and these components accept but do not act on.

    Warnings, not errors: the controller applies such a policy (as TAS does), so refusing it
    here would make `tas validate` stricter than what runs. (path, message) pairs.
    """
    found: list[tuple[str, str]] = []
    for strategy_name, strategy in strategies.items():
        at = f"spec.strategies.{strategy_name.value}"
        raw_rules = raw[strategy_name.value].get("rules") or []
        if strategy.policy_name not in (None, "", name):
            found.append(
                (
                    f"{at}.policyName",
                    f"ignored: the policy is always metadata.name ({name!r}), as in TAS",
                )
            )
        for index, rule in enumerate(strategy.rules):
            if rule.labels and strategy_name is not StrategyName.LABELING:
                found.append(
                    (f"{at}.rules[{index}].labels", "ignored: only labeling rules write labels")
                )
            written = raw_rules[index] if index < len(raw_rules) else {}
            if (
                strategy_name is not StrategyName.SCHEDULEONMETRIC
                and isinstance(written, Mapping)
                and written.get("target") is None
            ):
                found.append(
                    (
                        f"{at}.rules[{index}]",
                        f"no target: {rule.metricname} {rule.operator.value} compares with 0 "
                        "(the default); write `target: 0` if 0 is meant",
                    )
                )
        if strategy_name is StrategyName.SCHEDULEONMETRIC:
            found.extend(_scheduleonmetric_ignored(strategy, at))
    return found


def _scheduleonmetric_ignored(strategy: Strategy, at: str) -> list[tuple[str, str]]:
    # TAS's extender reads Rules[0] and nothing else (intel/platform-aware-scheduling,
    # telemetry-aware-scheduling/pkg/telemetryscheduler/telemetryscheduler.go,
    # getSchedulingRule); tas.rules.score_nodes does the same.
    found: list[tuple[str, str]] = []
    first = strategy.rules[0]
    if higher_is_better(first.operator) is None:
        found.append(
            (
                f"{at}.rules[0].operator",
                f"{first.operator.value} orders nothing: every node with a value of "
                f"{first.metricname} scores the same, so this strategy has no effect; use "
                "LessThan (lower value scores higher) or GreaterThan (higher value scores higher)",
            )
        )
    if first.target != 0:
        found.append(
            (
                f"{at}.rules[0].target",
                "ignored: scheduleonmetric orders nodes by the metric's value alone",
            )
        )
    if len(strategy.rules) > 1:
        extra = "rules[1]" if len(strategy.rules) == 2 else f"rules[1..{len(strategy.rules) - 1}]"
        found.append(
            (
                f"{at}.rules[1]",
                f"ignored: only the first scheduleonmetric rule orders nodes (as in TAS), so "
                f"{extra} {'has' if len(strategy.rules) == 2 else 'have'} no effect",
            )
        )
    return found


@dataclass(frozen=True)
class LoadResult:
    """What a file or a text held: the valid policies, every problem of the invalid ones, and
    the warnings of all (a policy with warnings is applied)."""

    policies: tuple[TASPolicy, ...]
    problems: tuple[PolicyProblem, ...]
    warnings: tuple[PolicyProblem, ...] = ()


def _items(document: Document) -> Iterable[tuple[str, object]]:
    """(path prefix, body) of each policy a document holds: itself, or a `List`'s items."""
    body = document.body
    if isinstance(body, Mapping) and str(body.get("kind", "")).endswith("List"):
        items = body.get("items")
        for index, item in enumerate(items if isinstance(items, list) else []):
            yield f"items[{index}]", item
    elif body is not None:
        yield "", body


def _duplicated(document: Document, prefix: str) -> bool:
    """Whether a duplicate key touches the policy at `prefix`: inside it, or around the items
    of a `List` (which then all read differently than written)."""
    return any(
        not prefix or d.path.startswith(f"{prefix}.") or not d.path.startswith("items[")
        for d in document.duplicates
    )


def load_policies_text(text: str, *, source: str = "") -> LoadResult:
    """Read every TASPolicy in a YAML or JSON text (multi-document and `List` kinds allowed).

    Every problem carries its line; in a text of several documents, the document's number
    (from 1). A duplicate key is an error of its document, as `kubectl apply` makes it.
    """
    try:
        documents = list(read_documents(text))
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        reason = getattr(error, "problem", None) or str(error)
        line = mark.line + 1 if mark is not None else None
        problem = PolicyProblem(source, "", f"not valid YAML: {reason}", line=line)
        return LoadResult((), (problem,))
    several = len(documents) > 1
    policies: list[TASPolicy] = []
    problems: list[PolicyProblem] = []
    warnings: list[PolicyProblem] = []

    def placed(found: PolicyProblem, document: Document, prefix: str) -> PolicyProblem:
        path = f"{prefix}.{found.path}" if prefix and found.path else prefix or found.path
        return replace(
            found,
            path=path,
            line=document.line_of(path),
            document=document.number if several else None,
        )

    for document in documents:
        problems.extend(
            PolicyProblem(
                source,
                duplicate.path,
                duplicate.why,
                line=duplicate.line,
                document=document.number if several else None,
            )
            for duplicate in document.duplicates
        )
        for prefix, body in _items(document):
            if not isinstance(body, Mapping):
                not_a_policy = PolicyProblem(source, "", "a policy document must be a mapping")
                problems.append(placed(not_a_policy, document, prefix))
                continue
            checked = check_policy(body, source=source)
            problems.extend(placed(p, document, prefix) for p in checked.problems)
            warnings.extend(placed(w, document, prefix) for w in checked.warnings)
            if checked.policy is not None and not _duplicated(document, prefix):
                policies.append(checked.policy)
    return LoadResult(tuple(policies), tuple(problems), tuple(warnings))
