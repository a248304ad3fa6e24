"""Reading and validating TASPolicy documents.

Covered:
- TAS policies load unchanged (YAML, JSON, multi-document, List kinds);
- targets: integers, floats, quantity strings; default 0; empty logicalOperator means anyOf;
- every problem is listed at once with its path (policy, strategy, rule index, field):
  unknown strategy, unknown operator, empty rules, malformed labels, mixed operators on one
  label key, bad metric names, a name unusable as a label key for deschedule;
- a bad document does not stop the good ones in the same text;
- `tas validate` prints each problem on its own line and exits 1, 0 for good files; `-` reads
  standard input (what `kubectl get taspolicies -A -o yaml` writes, as the upgrade guide pipes
  it), and a directory means every `*.yaml`, `*.yml` and `*.json` file in it;
- every problem says `file:line:`, documents are counted from 1, a `List`'s item by its path;
- warnings where TAS and the controller accept a policy but ignore part of it (scheduleonmetric
  with Equals, a second scheduleonmetric rule, a rule without target): exit 0 (1 with
  --strict), since an error would refuse what the controller applies;
- a duplicate YAML key is an error with both lines, and the policy is not applied (kubectl
  apply refuses such a file);
- one check: the controller's `--policies` loader and its cluster loader report exactly what
  `tas validate` prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.files import into_store
from tas.policies.model import (
    LogicalOperator,
    Operator,
    PolicyValidationError,
    StrategyName,
    load_policies_text,
    parse_policy,
)
from tas.policies.store import PolicyStore
from tas_inmemory.cluster import InMemoryCluster
from tests.builders import HEALTH_POLICY, policy_document, rule


def problems_of(document: dict[str, object]) -> list[str]:
    with pytest.raises(PolicyValidationError) as raised:
        parse_policy(document, source="f.yaml")
    return [f"{p.path}: {p.message}" for p in raised.value.problems]


def test_the_tas_demo_policy_loads_unchanged() -> None:
    (policy,) = load_policies_text(HEALTH_POLICY.read_text()).policies
    assert policy.name == "demo-policy"
    assert policy.namespace == "health-metric-demo"
    assert set(policy.strategies) == {
        StrategyName.DESCHEDULE,
        StrategyName.DONTSCHEDULE,
        StrategyName.SCHEDULEONMETRIC,
    }
    dontschedule = policy.strategies[StrategyName.DONTSCHEDULE]
    assert dontschedule.logical_operator is LogicalOperator.ANY_OF
    assert [(r.operator, r.target) for r in dontschedule.rules] == [
        (Operator.EQUALS, 1.0),
        (Operator.EQUALS, 2.0),
    ]
    assert policy.strategies[StrategyName.SCHEDULEONMETRIC].rules[0].target == 0


def test_json_multi_document_and_list_kinds_are_read() -> None:
    first = policy_document("one", dontschedule=[rule("m", "Equals", 1)])
    second = policy_document("two", dontschedule=[rule("m", "Equals", 1)])
    as_list = {"apiVersion": "v1", "kind": "List", "items": [second]}
    text = json.dumps(first) + "\n---\n" + json.dumps(as_list)
    result = load_policies_text(text)
    assert result.problems == ()
    assert [p.name for p in result.policies] == ["one", "two"]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(3, 3.0, id="integer"),
        pytest.param(0.25, 0.25, id="float"),
        pytest.param("750m", 0.75, id="milli-quantity"),
        pytest.param("2Ki", 2048.0, id="binary-quantity"),
        pytest.param(None, 0.0, id="absent-means-zero"),
    ],
)
def test_targets_accept_integers_floats_and_quantities(target: object, expected: float) -> None:
    body = rule("m", "GreaterThan", target)
    if target is None:
        del body["target"]
    policy = parse_policy(policy_document(dontschedule=[body]))
    assert policy.strategies[StrategyName.DONTSCHEDULE].rules[0].target == expected


def test_unknown_operator_and_malformed_label_are_reported_together() -> None:
    document = policy_document(
        "bad",
        dontschedule=[rule("m", "Bigger", 1)],
        labeling=[rule("t", "GreaterThan", 80, ["no-equals-sign"])],
    )
    problems = problems_of(document)
    assert len(problems) == 2
    assert problems[0].startswith("spec.strategies.dontschedule.rules[0].operator: ")
    assert "unknown operator 'Bigger'" in problems[0]
    assert problems[1].startswith("spec.strategies.labeling.rules[0].labels: ")
    assert "exactly one 'key=value'" in problems[1]


@pytest.mark.parametrize(
    ("strategies", "path", "fragment"),
    [
        pytest.param(
            {"dontscheduel": [rule("m", "Equals")]},
            "spec.strategies.dontscheduel",
            "unknown strategy",
            id="unknown-strategy",
        ),
        pytest.param(
            {"dontschedule": []},
            "spec.strategies.dontschedule.rules",
            "at least one rule",
            id="empty-rules",
        ),
        pytest.param(
            {"dontschedule": [rule("bad metric!", "Equals")]},
            "spec.strategies.dontschedule.rules[0].metricname",
            "must match",
            id="bad-metric-name",
        ),
        pytest.param(
            {"dontschedule": [rule("m", "Equals", "lots")]},
            "spec.strategies.dontschedule.rules[0].target",
            "not a quantity",
            id="bad-target",
        ),
        pytest.param(
            {"labeling": [rule("m", "Equals", 1, ["-bad-=x"])]},
            "spec.strategies.labeling.rules[0].labels",
            "key '-bad-'",
            id="bad-label-key",
        ),
        pytest.param(
            {"labeling": [rule("m", "Equals", 1, ["k=a b"])]},
            "spec.strategies.labeling.rules[0].labels",
            "value 'a b'",
            id="bad-label-value",
        ),
        pytest.param(
            {"labeling": [rule("a", "GreaterThan", 1, ["k=x"]), rule("b", "LessThan", 1, ["k=y"])]},
            "spec.strategies.labeling.rules[1].operator",
            "must use one operator",
            id="mixed-operators-on-one-key",
        ),
        pytest.param(
            {"labeling": [rule("a", "GreaterThan", 1)]},
            "spec.strategies.labeling.rules[0].labels",
            "needs at least one label",
            id="labeling-rule-without-labels",
        ),
        pytest.param(
            {"dontschedule": ("oneOf", [rule("m", "Equals")])},
            "spec.strategies.dontschedule.logicalOperator",
            "unknown logicalOperator 'oneOf'",
            id="unknown-logical-operator",
        ),
    ],
)
def test_each_problem_names_its_path(
    strategies: dict[str, object], path: str, fragment: str
) -> None:
    problems = problems_of(policy_document("p", **strategies))  # type: ignore[arg-type]
    assert any(p.startswith(path + ":") and fragment in p for p in problems), problems


def test_problems_name_the_policy() -> None:
    (problem,) = problems_of(policy_document("named", dontschedule=[rule("m", "Bigger")]))
    assert "policy 'named'" in problem


def test_a_policy_with_deschedule_needs_a_name_usable_as_a_label_key() -> None:
    problems = problems_of(policy_document("x" * 64, deschedule=[rule("m", "Equals", 2)]))
    assert any(p.startswith("metadata.name:") and "63" in p for p in problems)


def test_missing_name_and_strategies_are_both_reported() -> None:
    problems = problems_of({"apiVersion": "telemetry.intel.com/v1alpha1", "kind": "TASPolicy"})
    assert [p.split(":")[0] for p in problems] == ["metadata", "metadata.name", "spec.strategies"]


def test_a_bad_document_does_not_stop_the_good_ones() -> None:
    good = policy_document("good", dontschedule=[rule("m", "Equals", 1)])
    bad = policy_document("bad", dontschedule=[rule("m", "Bigger", 1)])
    result = load_policies_text(json.dumps(bad) + "\n---\n" + json.dumps(good), source="x.yaml")
    assert [p.name for p in result.policies] == ["good"]
    assert len(result.problems) == 1
    (problem,) = result.problems
    assert (problem.source, problem.document, problem.line) == ("x.yaml", 1, 1)
    assert str(problem).startswith("x.yaml:1: document 1: spec.strategies.dontschedule.rules[0]")


def test_invalid_yaml_is_one_clear_problem() -> None:
    result = load_policies_text("spec: [unclosed", source="broken.yaml")
    assert result.policies == ()
    (problem,) = result.problems
    assert "not valid YAML" in problem.message


def run_validate(*files: Path | str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """`tas validate FILE...` as typed; a `--flag` among `files` is passed as it is."""
    return subprocess.run(
        [sys.executable, "-m", "tas_cli", "validate", *map(str, files)],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def kubectl_get_yaml(*documents: dict[str, object]) -> str:
    """What `kubectl get taspolicies -A -o yaml` writes: a List of live objects."""
    items = []
    for document in documents:
        live = json.loads(json.dumps(document))
        live["metadata"].update(
            uid="0b7e7d3c-0000-4000-8000-000000000001",
            resourceVersion="4242",
            generation=1,
            creationTimestamp="2024-01-01T00:00:00Z",
            managedFields=[{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1"}],
        )
        live["status"] = {"conditions": [{"type": "Compliance", "status": "True"}]}
        items.append(live)
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items, "metadata": {}})


def test_tas_validate_dash_reads_what_kubectl_get_writes_on_standard_input() -> None:
    good = yaml.safe_load(HEALTH_POLICY.read_text(encoding="utf-8"))
    completed = run_validate("-", stdin=kubectl_get_yaml(good))
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout == "<stdin>: ok (health-metric-demo/demo-policy)\n"


def test_tas_validate_dash_reports_a_bad_policy_from_standard_input() -> None:
    bad = policy_document("bad", dontschedule=[rule("m", "Bigger", 1)])
    completed = run_validate("-", stdin=kubectl_get_yaml(bad))
    assert completed.returncode == 1
    (line,) = completed.stderr.strip().splitlines()
    assert line.startswith("<stdin>")
    assert "operator" in line


def test_tas_validate_dir_reads_every_policy_file_in_it(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(HEALTH_POLICY.read_text(encoding="utf-8"))
    (tmp_path / "b.json").write_text(
        json.dumps(policy_document("two", dontschedule=[rule("m", "GreaterThan", 1)]))
    )
    (tmp_path / "c.yml").write_text(json.dumps(policy_document("bad", dontschedule=[])))
    (tmp_path / "notes.txt").write_text("not a policy")
    completed = run_validate(tmp_path)
    assert completed.returncode == 1
    assert f"{tmp_path / 'a.yaml'}: ok (health-metric-demo/demo-policy)" in completed.stdout
    assert f"{tmp_path / 'b.json'}: ok" in completed.stdout
    assert completed.stderr.startswith(str(tmp_path / "c.yml"))
    assert "notes.txt" not in completed.stdout + completed.stderr


def test_tas_validate_refuses_a_directory_without_policy_files(tmp_path: Path) -> None:
    completed = run_validate(tmp_path)
    assert completed.returncode == 1
    assert "no *.yaml, *.yml or *.json file" in completed.stderr


def test_tas_validate_prints_both_problems_and_exits_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    document = policy_document(
        "bad",
        dontschedule=[rule("m", "Bigger", 1)],
        labeling=[rule("t", "GreaterThan", 80, ["oops"])],
    )
    bad.write_text(json.dumps(document))
    completed = run_validate(HEALTH_POLICY, bad)
    assert completed.returncode == 1
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 2
    assert all(line.startswith(f"{bad}:1: spec.strategies.") for line in lines)
    assert "operator" in lines[0]
    assert "labels" in lines[1]
    assert f"{HEALTH_POLICY}: ok" in completed.stdout


def test_tas_validate_exits_0_for_valid_files() -> None:
    completed = run_validate(HEALTH_POLICY)
    assert completed.returncode == 0, completed.stderr
    assert completed.stderr == ""  # TAS's demo policy: its scheduleonmetric has no target
    assert "health-metric-demo/demo-policy" in completed.stdout


HEAD = """\
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata:
  name: p
spec:
  strategies:
"""  # six lines: a strategy's name is on line 7

#: Policies TAS and the controller apply although part of what they say does nothing, with the
#: warning `tas validate` prints (line, path, the message's start).
IGNORED = [
    pytest.param(
        """\
    scheduleonmetric:
      rules:
        - metricname: health_metric
          operator: Equals
""",
        (10, "spec.strategies.scheduleonmetric.rules[0].operator", "Equals orders nothing"),
        id="scheduleonmetric-equals",
    ),
    pytest.param(
        """\
    scheduleonmetric:
      rules:
        - metricname: health_metric
          operator: LessThan
        - metricname: cpu_pressure
          operator: LessThan
""",
        (11, "spec.strategies.scheduleonmetric.rules[1]", "ignored: only the first"),
        id="second-scheduleonmetric-rule",
    ),
    pytest.param(
        """\
    dontschedule:
      rules:
        - metricname: health_metric
          operator: Equals
          target: 1
        - metricname: health_metric
          operator: GreaterThan
""",
        (12, "spec.strategies.dontschedule.rules[1]", "no target: health_metric GreaterThan"),
        id="rule-without-target",
    ),
]


@pytest.mark.parametrize(("strategies", "expected"), IGNORED)
def test_tas_validate_warns_where_tas_applies_a_policy_but_ignores_part_of_it(
    tmp_path: Path, strategies: str, expected: tuple[int, str, str]
) -> None:
    line, path, start = expected
    file = tmp_path / "p.yaml"
    file.write_text(HEAD + strategies)
    completed = run_validate(file)
    assert completed.returncode == 0, completed.stderr
    (warning,) = completed.stderr.splitlines()
    assert warning.startswith(f"{file}:{line}: warning: {path}: policy 'p': {start}")
    assert completed.stdout == f"{file}: ok (default/p), 1 warning\n"
    strict = run_validate("--strict", file)
    assert strict.returncode == 1
    assert strict.stderr == completed.stderr


def test_tas_validate_refuses_a_duplicate_key_naming_both_lines(tmp_path: Path) -> None:
    file = tmp_path / "p.yaml"
    file.write_text(
        HEAD
        + """\
    dontschedule:
      rules:
        - metricname: health_metric
          operator: Equals
          target: 1
          target: 2
"""
    )
    completed = run_validate(file)
    assert completed.returncode == 1
    assert completed.stderr == (
        f"{file}:12: spec.strategies.dontschedule.rules[0].target: duplicate key (also on line "
        "11): YAML keeps only this one, and kubectl apply refuses the file\n"
    )
    assert completed.stdout == ""


def test_every_problem_carries_its_line_and_documents_count_from_1(tmp_path: Path) -> None:
    file = tmp_path / "two.yaml"
    good = HEAD + "    dontschedule:\n      rules: [{metricname: m, operator: Equals, target: 1}]\n"
    bad = HEAD.replace("name: p", "name: q") + (
        "    deschedule:\n"  # line 17 of the file: the second document starts on line 10
        "      rules:\n"
        "        - metricname: m\n"
        "          operator: Bigger\n"
        "          target: 1\n"
    )
    file.write_text(good + "---\n" + bad)
    completed = run_validate(file)
    assert completed.returncode == 1
    (line,) = completed.stderr.splitlines()
    assert line.startswith(
        f"{file}:19: document 2: spec.strategies.deschedule.rules[0].operator: policy 'q': "
        "unknown operator 'Bigger'"
    )


def test_tas_validate_dash_names_a_list_item_and_its_line() -> None:
    good = policy_document("good", dontschedule=[rule("m", "Equals", 1)])
    bad = policy_document("bad", dontschedule=[rule("m", "Bigger", 1)])
    text = kubectl_get_yaml(good, bad)
    completed = run_validate("-", stdin=text)
    assert completed.returncode == 1
    (line,) = completed.stderr.splitlines()
    operator_line = next(
        number
        for number, written in enumerate(text.splitlines(), start=1)
        if "operator: Bigger" in written
    )
    assert line.startswith(
        f"<stdin>:{operator_line}: items[1].spec.strategies.dontschedule.rules[0].operator: "
        "policy 'bad': unknown operator 'Bigger'"
    )


@pytest.mark.parametrize(
    "strategies",
    [
        *(pytest.param(case.values[0], id=case.id) for case in IGNORED),
        pytest.param(
            "    dontschedule:\n      rules:\n        - {metricname: m, operator: Bigger}\n",
            id="unknown-operator",
        ),
        pytest.param(
            "    deschedule:\n      rules: [{metricname: m, operator: Equals, target: 1}]\n"
            "    deschedule:\n      rules: [{metricname: m, operator: Equals, target: 2}]\n",
            id="duplicate-strategy",
        ),
    ],
)
def test_the_controller_s_loaders_report_what_tas_validate_prints(
    tmp_path: Path, strategies: str
) -> None:
    file = tmp_path / "p.yaml"
    file.write_text(HEAD + strategies)
    printed = run_validate(file).stderr.splitlines()
    from_files = PolicyStore()
    into_store(from_files)(tmp_path)  # what `tas controller --policies DIR` runs
    snapshot = from_files.snapshot()
    assert [str(p) for p in (*snapshot.problems, *snapshot.warnings)] == printed
    # The cluster holds what kubectl applied (no lines there): the same findings, by path.
    document = yaml.safe_load(file.read_text())
    cluster, from_cluster = InMemoryCluster(), PolicyStore()
    cluster.apply_policy(document)
    ClusterPolicyLoader(cluster, from_cluster).sync()
    held = from_cluster.snapshot()
    found_in_file = [(p.path, p.message) for p in (*snapshot.problems, *snapshot.warnings)]
    if not any("duplicate key" in line for line in printed):
        assert [(p.path, p.message) for p in (*held.problems, *held.warnings)] == found_in_file
        assert (list(held.policies) == []) == bool(snapshot.problems)
    else:  # the file is refused; the cluster never holds such an object (kubectl refuses it)
        assert snapshot.policies == {}
