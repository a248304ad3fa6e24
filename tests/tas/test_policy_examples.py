"""The shipped example policies load unchanged and give the documented demo answers."""

from __future__ import annotations

from pathlib import Path

from tas.policies.files import load_policy_path
from tas.rules import filter_nodes, score_nodes
from tas.types import MetricName, NodeName

POLICIES = Path(__file__).resolve().parents[2] / "deploy" / "policies"


def test_every_shipped_policy_is_valid() -> None:
    result = load_policy_path(POLICIES)
    assert result.problems == ()
    assert {str(p.key) for p in result.policies} == {
        "health-metric-demo/demo-policy",
        "default/card-policy",
    }


def test_health_demo_filters_b_and_ranks_a_and_c_above_it() -> None:
    (policy,) = [p for p in load_policy_path(POLICIES).policies if p.name == "demo-policy"]
    nodes = [NodeName("A"), NodeName("B"), NodeName("C")]
    metrics = {
        MetricName("health_metric"): {NodeName("A"): 0.0, NodeName("B"): 1.0, NodeName("C"): 0.0}
    }
    decision = filter_nodes(policy, metrics, nodes)
    assert decision.passed == ("A", "C")
    assert decision.failed == {"B": "demo-policy: health_metric Equals 1 (value 1)"}
    scores = score_nodes(policy, metrics, nodes)
    assert scores["A"] == scores["C"] > scores["B"]
