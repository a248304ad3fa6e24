"""The TASPolicy CRD (crds/taspolicy.yaml) against the policy model and against Kubernetes.

Covered:
- identity: group, version, kind and names are exactly TAS's; namespaced; status subresource;
  printer columns point at fields the schema declares;
- the CRD document is a valid apiextensions.k8s.io/v1 CustomResourceDefinition for every
  Kubernetes version we support (schemas shipped offline by `kubernetes-validate`), and its
  openAPIV3Schema obeys the structural-schema rules the API server enforces;
- every shipped policy passes the schema and the model; valid variations (extension operators,
  quantity targets, empty logicalOperator) pass both;
- bad policies (unknown operator or strategy, bad metric name, empty or missing rules, bad
  labels, bad targets) are rejected by both the schema and the model;
- a property: on generated policies the schema and the model agree, except where documented;
- the one documented difference: a bare fractional target is refused by the API server (it must
  be quoted) while the model takes it.

The schema is checked with `jsonschema` the way `kubectl apply` (strict field validation) sees
it: an object with `properties` and no `x-kubernetes-preserve-unknown-fields` accepts no other
field. CEL rules (`x-kubernetes-validations`) are not evaluated here.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tas.policies.model import Operator, PolicyValidationError, StrategyName, parse_policy

ROOT = Path(__file__).resolve().parents[1]
CRD_PATH = ROOT / "crds" / "taspolicy.yaml"
EXAMPLE_POLICIES = sorted(
    [*(ROOT / "deploy" / "policies").glob("*.yaml"), *(ROOT / "deploy").glob("*/*policy.yaml")]
)
#: The oldest Kubernetes minor this CRD must install on (CEL validation rules are on by default
#: from 1.25), and the newest one the offline schemas know.
KUBERNETES_VERSIONS = ("1.25", kubernetes_validate.utils.latest_version())

Document = dict[str, Any]


def load_crd() -> Document:
    document: Document = yaml.safe_load(CRD_PATH.read_text(encoding="utf-8"))
    return document


def open_api_schema() -> Document:
    schema: Document = load_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def as_strict_json_schema(node: Any) -> Any:
    """The CRD schema as jsonschema sees it under strict field validation."""
    if isinstance(node, list):
        return [as_strict_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: as_strict_json_schema(value) for key, value in node.items()}
    if "properties" in node and not node.get("x-kubernetes-preserve-unknown-fields"):
        out.setdefault("additionalProperties", False)
    return out


@functools.cache
def strict_validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(as_strict_json_schema(open_api_schema()))


def schema_errors(document: Document) -> list[str]:
    validator = strict_validator()
    return [
        f"{'.'.join(str(p) for p in error.absolute_path)}: {error.message}"
        for error in validator.iter_errors(document)
    ]


def model_errors(document: Document) -> list[str]:
    try:
        parse_policy(document)
    except PolicyValidationError as error:
        return [str(problem) for problem in error.problems]
    return []


def make_policy(apply: Callable[[Document], None] | None = None) -> Document:
    """The health demo policy, optionally changed by `apply`."""
    document: Document = {
        "apiVersion": "telemetry.intel.com/v1alpha1",
        "kind": "TASPolicy",
        "metadata": {"name": "demo-policy", "namespace": "health-metric-demo"},
        "spec": {
            "strategies": {
                "deschedule": {
                    "rules": [{"metricname": "health_metric", "operator": "Equals", "target": 2}]
                },
                "dontschedule": {
                    "rules": [
                        {"metricname": "health_metric", "operator": "Equals", "target": 1},
                        {"metricname": "health_metric", "operator": "Equals", "target": 2},
                    ]
                },
                "scheduleonmetric": {
                    "rules": [{"metricname": "health_metric", "operator": "LessThan"}]
                },
                "labeling": {
                    "rules": [
                        {
                            "metricname": "gpu_temperature",
                            "operator": "GreaterThan",
                            "target": 80,
                            "labels": ["gpu=hot"],
                        }
                    ]
                },
            }
        },
    }
    if apply is not None:
        apply(document)
    return document


def rule(document: Document, strategy: str = "dontschedule", index: int = 0) -> Document:
    found: Document = document["spec"]["strategies"][strategy]["rules"][index]
    return found


def walk_schema(node: Document, path: str = "") -> Iterator[tuple[str, Document]]:
    yield path, node
    for key in ("properties",):
        for name, child in node.get(key, {}).items():
            yield from walk_schema(child, f"{path}.{name}")
    if isinstance(node.get("items"), dict):
        yield from walk_schema(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from walk_schema(node["additionalProperties"], f"{path}{{}}")


# --- identity -------------------------------------------------------------------------------


def test_the_crd_has_exactly_the_identity_of_tas() -> None:
    crd = load_crd()
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    assert crd["metadata"]["name"] == "taspolicies.telemetry.intel.com"
    spec = crd["spec"]
    assert spec["group"] == "telemetry.intel.com"
    assert spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "TASPolicy",
        "listKind": "TASPolicyList",
        "plural": "taspolicies",
        "singular": "taspolicy",
    }
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns_show_compliance_violating_nodes_and_age_from_declared_fields() -> None:
    (version,) = load_crd()["spec"]["versions"]
    columns = {c["name"]: c for c in version["additionalPrinterColumns"]}
    assert {"Compliance", "Violating", "Age"} <= set(columns)
    assert columns["Age"]["jsonPath"] == ".metadata.creationTimestamp"
    declared = {path for path, _ in walk_schema(open_api_schema())}
    for column in columns.values():
        if column["jsonPath"].startswith(".status."):
            assert column["jsonPath"] in declared, column


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_crd_is_a_valid_custom_resource_definition_for_kubernetes(version: str) -> None:
    kubernetes_validate.validate(load_crd(), version, strict=True)


def test_a_crd_with_a_misspelt_field_is_caught_by_the_kubernetes_schema_check() -> None:
    # Guards the check above: it must be able to fail.
    crd = load_crd()
    crd["spec"]["versions"][0]["servd"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(crd, KUBERNETES_VERSIONS[-1], strict=True)


def test_the_schema_is_structural() -> None:
    # The API server's rules for structural schemas (apiextensions v1 refuses anything else).
    problems: list[str] = []
    for path, node in walk_schema(open_api_schema()):
        int_or_string = node.get("x-kubernetes-int-or-string") is True
        preserve = node.get("x-kubernetes-preserve-unknown-fields") is True
        if "type" not in node and not (int_or_string or preserve):
            problems.append(f"{path or '<root>'}: no type")
        if "properties" in node and "additionalProperties" in node:
            problems.append(f"{path}: both properties and additionalProperties")
        if "anyOf" in node and not (
            int_or_string and node["anyOf"] == [{"type": "integer"}, {"type": "string"}]
        ):
            problems.append(f"{path}: anyOf outside the int-or-string form")
        if int_or_string and "type" in node:
            problems.append(f"{path}: int-or-string must not have a type")
        for forbidden in ("oneOf", "not", "$ref", "definitions", "uniqueItems"):
            if forbidden in node:
                problems.append(f"{path}: {forbidden} is not allowed")
        fields = ("properties", "additionalProperties")
        open_ended = preserve or any(f in node for f in fields) or path == ".metadata"
        if node.get("type") == "object" and not open_ended:
            problems.append(f"{path}: an object without fields prunes everything")
    metadata = open_api_schema()["properties"]["metadata"]
    if metadata != {"type": "object"}:
        problems.append(".metadata: only type object is allowed at the root")
    assert problems == []


def test_the_schema_names_exactly_the_models_strategies_and_operators() -> None:
    strategies = open_api_schema()["properties"]["spec"]["properties"]["strategies"]
    assert set(strategies["properties"]) == {s.value for s in StrategyName}
    for name, strategy in strategies["properties"].items():
        operators = strategy["properties"]["rules"]["items"]["properties"]["operator"]["enum"]
        assert set(operators) == {o.value for o in Operator}, name


# --- policies accepted ----------------------------------------------------------------------


def test_the_repository_ships_example_policies() -> None:
    names = {p.name for p in EXAMPLE_POLICIES}
    assert {"health-policy.yaml", "labeling-policy.yaml"} <= names


@pytest.mark.parametrize("path", EXAMPLE_POLICIES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_shipped_policy_passes_the_schema_and_the_model(path: Path) -> None:
    for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
        if document is None:
            continue
        assert schema_errors(document) == []
        assert model_errors(document) == []


def _set(path: str, value: Any) -> Callable[[Document], None]:
    def apply(document: Document) -> None:
        *parents, last = path.split("/")
        node: Any = document
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return apply


def _drop(path: str) -> Callable[[Document], None]:
    def apply(document: Document) -> None:
        *parents, last = path.split("/")
        node: Any = document
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        del node[last]

    return apply


DS = "spec/strategies/dontschedule"
DS_RULE = f"{DS}/rules/0"
LABEL_RULE = "spec/strategies/labeling/rules/0"

VALID = [
    pytest.param(None, id="the demo policy with all four strategies"),
    pytest.param(_set(f"{DS}/logicalOperator", "allOf"), id="allOf"),
    pytest.param(_set(f"{DS}/logicalOperator", ""), id="empty logicalOperator means anyOf"),
    pytest.param(_set(f"{DS}/policyName", "demo-policy"), id="policyName kept for TAS"),
    pytest.param(_drop(f"{DS_RULE}/target"), id="target omitted defaults to 0"),
    pytest.param(_set(f"{DS_RULE}/target", -3), id="negative integer target"),
    pytest.param(_set(f"{DS_RULE}/target", "500m"), id="quantity target 500m"),
    pytest.param(_set(f"{DS_RULE}/target", "0.5"), id="quoted fractional target"),
    pytest.param(_set(f"{DS_RULE}/target", "2Ki"), id="binary suffix target"),
    pytest.param(_set(f"{DS_RULE}/target", "1e3"), id="exponent target"),
    pytest.param(_set(f"{DS_RULE}/operator", "GreaterOrEqual"), id="extension GreaterOrEqual"),
    pytest.param(_set(f"{DS_RULE}/operator", "LessOrEqual"), id="extension LessOrEqual"),
    pytest.param(_set(f"{DS_RULE}/operator", "NotEquals"), id="extension NotEquals"),
    pytest.param(_set(f"{DS_RULE}/metricname", "node-health_2"), id="dash digits underscore"),
    pytest.param(_set(f"{LABEL_RULE}/labels", ["gpu=hot", "fan="]), id="label with empty value"),
    pytest.param(_set(f"{DS_RULE}/labels", ["a=b"]), id="labels on a non-labeling rule"),
    pytest.param(_set("spec/strategies", {}), id="no strategy at all"),
]


@pytest.mark.parametrize("apply", VALID)
def test_a_valid_policy_passes_the_schema_and_the_model(
    apply: Callable[[Document], None] | None,
) -> None:
    document = make_policy(apply)
    assert schema_errors(document) == []
    assert model_errors(document) == []


# --- policies rejected ----------------------------------------------------------------------

INVALID = [
    pytest.param(_set(f"{DS_RULE}/operator", "Bigger"), "operator", id="unknown operator"),
    pytest.param(_set(f"{DS_RULE}/operator", "equals"), "operator", id="operator in wrong case"),
    pytest.param(_drop(f"{DS_RULE}/operator"), "operator", id="missing operator"),
    pytest.param(_set(f"{DS_RULE}/metricname", "health metric"), "metricname", id="space"),
    pytest.param(_set(f"{DS_RULE}/metricname", "cpu{x}"), "metricname", id="braces in metric"),
    pytest.param(_set(f"{DS_RULE}/metricname", ""), "metricname", id="empty metric name"),
    pytest.param(_drop(f"{DS_RULE}/metricname"), "metricname", id="missing metric name"),
    pytest.param(_set(f"{DS}/rules", []), "rules", id="empty rules"),
    pytest.param(_drop(f"{DS}/rules"), "rules", id="missing rules"),
    pytest.param(_set(f"{DS}/logicalOperator", "oneOf"), "logicalOperator", id="oneOf"),
    pytest.param(_set("spec/strategies/dontschedul", {"rules": []}), "dontschedul", id="typo"),
    pytest.param(_set(f"{DS_RULE}/target", "lots"), "target", id="target not a quantity"),
    pytest.param(_set(f"{DS_RULE}/target", True), "target", id="boolean target"),
    pytest.param(_set(f"{DS_RULE}/target", [1]), "target", id="list target"),
    pytest.param(_set(f"{DS_RULE}/treshold", 1), "treshold", id="unknown rule field"),
    pytest.param(_drop(f"{LABEL_RULE}/labels"), "labels", id="labeling rule without labels"),
    pytest.param(_set(f"{LABEL_RULE}/labels", []), "labels", id="labeling rule, empty labels"),
    pytest.param(_set(f"{LABEL_RULE}/labels", ["a=b=c"]), "labels", id="two equals signs"),
    pytest.param(_set(f"{LABEL_RULE}/labels", ["hot"]), "labels", id="label without value"),
    pytest.param(_set(f"{LABEL_RULE}/labels", ["-gpu=hot"]), "labels", id="bad label key"),
    pytest.param(_set(f"{LABEL_RULE}/labels", ["k=" + "v" * 64]), "labels", id="value too long"),
    pytest.param(_set(f"{LABEL_RULE}/labels", ["k" * 64 + "=v"]), "labels", id="key too long"),
    pytest.param(_drop("spec/strategies"), "strategies", id="no strategies map"),
]


@pytest.mark.parametrize(("apply", "field"), INVALID)
def test_a_bad_policy_is_rejected_by_the_schema_and_by_the_model(
    apply: Callable[[Document], None], field: str
) -> None:
    document = make_policy(apply)
    from_schema = schema_errors(document)
    from_model = model_errors(document)
    assert from_schema, "the schema accepted it"
    assert from_model, "the model accepted it"
    assert any(field in message for message in from_model), from_model


def test_an_unknown_operator_is_named_by_both_the_schema_and_the_model() -> None:
    document = make_policy(_set(f"{DS_RULE}/operator", "Bigger"))
    (from_schema,) = schema_errors(document)
    assert from_schema.startswith("spec.strategies.dontschedule.rules.0.operator:")
    assert "'Bigger' is not one of" in from_schema
    (from_model,) = model_errors(document)
    assert "spec.strategies.dontschedule.rules[0].operator" in from_model
    assert "unknown operator 'Bigger'" in from_model


def test_a_bare_fractional_target_must_be_quoted_for_the_api_server_but_the_model_takes_it() -> (
    None
):
    # int-or-string has no room for floats: the documented way is `target: "0.5"`.
    document = make_policy(_set(f"{DS_RULE}/target", 0.5))
    assert schema_errors(document) != []
    assert model_errors(document) == []
    quoted = make_policy(_set(f"{DS_RULE}/target", "0.5"))
    assert schema_errors(quoted) == model_errors(quoted) == []


def test_status_fields_the_controller_adds_later_are_kept() -> None:
    document = make_policy()
    document["status"] = {
        "compliance": "Violating",
        "message": "1 node violates demo-policy",
        "violatingNodeCount": 1,
        "violatingNodes": {"deschedule": ["node-c"], "dontschedule": ["node-b", "node-c"]},
        "lastEvaluation": "2026-11-21T10:00:00Z",
        "somethingNew": {"any": "shape"},
    }
    assert schema_errors(document) == []
    document["status"]["violatingNodeCount"] = -1
    assert schema_errors(document) != []


# --- schema and model agree -----------------------------------------------------------------


def _mostly(valid: list[Any], invalid: list[Any]) -> st.SearchStrategy[Any]:
    """Valid values four times as often as invalid ones, so one bad field decides a case."""
    return st.sampled_from(valid * 4 + invalid)


_OPERATORS = _mostly([o.value for o in Operator], ["Bigger", "lessthan", ""])
_METRICS = _mostly(["health_metric", "cpu-usage", "x1"], ["", "a b", "node:cpu", "ü"])
_TARGETS = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    _mostly(["1", "0.25", "500m", "2Ki", "1e3", "-4", ".5"], ["abc", "1.2.3", "5 Mi", "1e"]),
)
_LABEL_VALUES = _mostly(["hot", "", "a.b-c_d"], ["-x", "x" * 64, "has space", "a=b"])
_LOGICAL = _mostly(["anyOf", "allOf", ""], ["oneOf"])


@st.composite
def _rules(draw: st.DrawFn, *, labeling: bool) -> list[Document]:
    rules = []
    for index in range(draw(st.integers(min_value=0, max_value=3))):
        item: Document = {"metricname": draw(_METRICS), "operator": draw(_OPERATORS)}
        if draw(st.booleans()):
            item["target"] = draw(_TARGETS)
        labels = draw(st.integers(min_value=-1, max_value=2 if labeling else 1))
        if labels >= 0:
            # One key per rule: mixed operators on a shared key is a model-only check.
            item["labels"] = [f"key{index}-{n}={draw(_LABEL_VALUES)}" for n in range(labels)]
        rules.append(item)
    return rules


@st.composite
def _policies(draw: st.DrawFn) -> Document:
    names = draw(
        st.sets(st.sampled_from([*(s.value for s in StrategyName), "dontSchedule"]), max_size=3)
    )
    strategies: Document = {}
    for name in names:
        strategy: Document = {"rules": draw(_rules(labeling=name == "labeling"))}
        if draw(st.booleans()):
            strategy["logicalOperator"] = draw(_LOGICAL)
        strategies[name] = strategy
    return make_policy(_set("spec/strategies", strategies))


@settings(max_examples=300, deadline=None)
@given(_policies())
def test_the_schema_and_the_model_accept_exactly_the_same_generated_policies(
    document: Document,
) -> None:
    original = copy.deepcopy(document)
    accepted_by_schema = schema_errors(document) == []
    accepted_by_model = model_errors(document) == []
    assert document == original
    assert accepted_by_schema == accepted_by_model, (
        schema_errors(document),
        model_errors(document),
    )
