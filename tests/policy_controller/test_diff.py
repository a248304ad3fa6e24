"""Patches from current to desired labels: only differences, and never someone else's label.

Covered:
- nodes: a node already right gets no patch; wanted labels are set, no-longer-wanted owned
  labels removed; the owned-labels annotation records the bare keys in the same patch;
- ownership: a foreign `x=violating` (no policy, not recorded) is never removed; a recorded key
  is removed after its policy is gone; prefixed keys of unknown policies are removed; a bare key
  with another value than `violating` is another writer's: never overwritten, never removed,
  even when recorded (the admission policy refuses both); a damaged annotation is rewritten;
- pods: `violate=<policy>` on pods linking a policy whose node violates it, removed when the
  node recovers or the policy is gone; never added across namespaces; foreign `violate` values
  kept; finished and terminating pods skipped;
- the steady-state differ skips a node only while its resourceVersion and wanted labels stay;
  over any sequence of cycles (wanted labels changing by key, nodes edited by others, patches
  applied) it gives exactly the patches of diffing every node (hypothesis);
- properties (hypothesis): applying the patches converges in one step (a second diff is empty)
  and leaves foreign labels untouched; after a change of the policies, patches touch exactly
  the labels whose desired value changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from policy_controller.desired import WantedLabels, compute_desired
from policy_controller.diff import NodeDiffer, NodePatch, diff_node, diff_nodes, diff_pods
from tas.cluster.model import Node
from tas.policies.model import TASPolicy
from tas.types import Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import OWNED_ANNOTATION
from tests.builders import make_policy, metrics, rule
from tests.policy_controller.support import make_node, make_pod

DEMO = PolicyKey(Namespace("health-metric-demo"), PolicyName("demo-policy"))


def apply_patch(node: Node, patch: NodePatch | None) -> Node:
    if patch is None:
        return node
    labels = {k: v for k, v in node.labels.items() if k not in patch.remove}
    labels.update(patch.set_labels)
    annotations = dict(node.annotations)
    for key, value in patch.annotations.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    return dataclasses.replace(node, labels=labels, annotations=annotations)


def test_a_node_that_already_carries_the_wanted_labels_gets_no_patch() -> None:
    node = make_node(
        "C",
        labels={"demo-policy": "violating", "app": "web"},
        annotations={OWNED_ANNOTATION: '["demo-policy"]'},
    )
    assert diff_node(node, {"demo-policy": "violating"}, {"demo-policy"}) is None


def test_a_new_violation_sets_the_label_and_records_it_in_the_same_patch() -> None:
    patch = diff_node(make_node("C"), {"demo-policy": "violating"}, {"demo-policy"})
    assert patch == NodePatch(
        NodeName("C"),
        set_labels={"demo-policy": "violating"},
        remove=(),
        annotations={OWNED_ANNOTATION: '["demo-policy"]'},
    )


def test_a_recovered_node_loses_the_label_and_the_record() -> None:
    node = make_node(
        "C",
        labels={"demo-policy": "violating"},
        annotations={OWNED_ANNOTATION: '["demo-policy"]'},
    )
    patch = diff_node(node, {}, {"demo-policy"})
    assert patch == NodePatch(
        NodeName("C"), remove=("demo-policy",), annotations={OWNED_ANNOTATION: None}
    )


def test_a_foreign_violating_label_is_never_removed() -> None:
    node = make_node("A", labels={"other-team": "violating", "demo-policy": "violating"})
    patch = diff_node(node, {}, {"demo-policy"})
    assert patch is not None
    assert patch.remove == ("demo-policy",)


def test_a_recorded_label_of_a_deleted_policy_is_removed() -> None:
    node = make_node(
        "A",
        labels={"gone-policy": "violating", "other-team": "violating"},
        annotations={OWNED_ANNOTATION: '["gone-policy"]'},
    )
    patch = diff_node(node, {}, frozenset())
    assert patch is not None
    assert patch.remove == ("gone-policy",)
    assert patch.annotations == {OWNED_ANNOTATION: None}


def test_prefixed_labels_of_unknown_policies_are_removed() -> None:
    node = make_node(
        "A",
        labels={
            "telemetry.aware.scheduling.gone/card": "hot",
            "telemetry.aware.scheduling.cards/card": "hot",
            "example.com/team": "a",
        },
    )
    patch = diff_node(node, {"telemetry.aware.scheduling.cards/card": "hot"}, frozenset())
    assert patch == NodePatch(NodeName("A"), remove=("telemetry.aware.scheduling.gone/card",))


def test_a_policy_named_key_with_another_value_is_left_alone() -> None:
    node = make_node("A", labels={"demo-policy": "blue"})
    assert diff_node(node, {}, {"demo-policy"}) is None


def test_a_policy_named_key_with_another_value_is_never_overwritten() -> None:
    """Another writer's `demo-policy=blue` on a node that violates demo-policy: the controller
    leaves it (the admission policy would refuse the patch), and still records its own key."""
    node = make_node("A", labels={"demo-policy": "blue"})
    patch = diff_node(node, {"demo-policy": "violating"}, {"demo-policy"})
    assert patch == NodePatch(NodeName("A"), annotations={OWNED_ANNOTATION: '["demo-policy"]'})


def test_a_recorded_key_another_writer_changed_is_not_removed() -> None:
    node = make_node(
        "A",
        labels={"gone-policy": "blue"},
        annotations={OWNED_ANNOTATION: '["gone-policy"]'},
    )
    patch = diff_node(node, {}, frozenset())
    assert patch == NodePatch(NodeName("A"), annotations={OWNED_ANNOTATION: None})


def test_a_damaged_annotation_is_rewritten() -> None:
    node = make_node(
        "A", labels={"demo-policy": "violating"}, annotations={OWNED_ANNOTATION: "{not json"}
    )
    patch = diff_node(node, {"demo-policy": "violating"}, {"demo-policy"})
    assert patch == NodePatch(NodeName("A"), annotations={OWNED_ANNOTATION: '["demo-policy"]'})


# ------------------------------------------------------------------------------- pods


def test_pods_linking_a_policy_on_a_violating_node_get_the_violate_label() -> None:
    pods = [
        make_pod("on-c", node="C"),
        make_pod("on-a", node="A"),
        make_pod("other-ns", node="C", namespace="elsewhere"),
        make_pod("unlinked", node="C", policy=None),
        make_pod("pending", node=None),
    ]
    patches = diff_pods(pods, {DEMO: {NodeName("C")}})
    assert [(p.name, dict(p.set_labels), p.remove) for p in patches] == [
        ("on-c", {"violate": "demo-policy"}, ())
    ]


def test_the_violate_label_goes_when_the_node_recovers_or_the_policy_is_gone() -> None:
    pod = make_pod("on-c", node="C", labels={"violate": "demo-policy"})
    nothing: dict[PolicyKey, set[NodeName]] = {DEMO: set()}
    for violating in (nothing, {}):
        patches = diff_pods([pod], violating)
        assert [(p.name, p.remove) for p in patches] == [("on-c", ("violate",))]


def test_a_foreign_violate_label_is_kept() -> None:
    pod = make_pod("web", node="C", policy=None, labels={"violate": "someone-else"})
    assert diff_pods([pod], {DEMO: set()}) == []


def test_finished_and_terminating_pods_are_skipped() -> None:
    done = make_pod("done", node="C", apply=lambda p: dataclasses.replace(p, phase="Succeeded"))
    leaving = make_pod(
        "leaving",
        node="C",
        apply=lambda p: dataclasses.replace(p, deletion_timestamp=datetime(2026, 1, 1, tzinfo=UTC)),
    )
    assert diff_pods([done, leaving], {DEMO: {NodeName("C")}}) == []


# ------------------------------------------------------------------------------- properties

NODE_NAMES = [NodeName(f"n{i}") for i in range(5)]
OPERATORS = ["Equals", "LessThan", "GreaterThan"]


@st.composite
def policy_sets(draw: st.DrawFn) -> list[TASPolicy]:
    policies = []
    for name in draw(st.lists(st.sampled_from(["p", "q", "r"]), unique=True, max_size=3)):
        strategies: dict[str, object] = {}
        if draw(st.booleans()):
            strategies["deschedule"] = [
                rule(
                    draw(st.sampled_from(["m1", "m2"])),
                    draw(st.sampled_from(OPERATORS)),
                    draw(st.integers(0, 4)),
                )
            ]
        if draw(st.booleans()):
            operator = draw(st.sampled_from(OPERATORS))
            strategies["labeling"] = [
                rule(metric, operator, draw(st.integers(0, 4)), [f"k=v{index}"])
                for index, metric in enumerate(
                    draw(st.lists(st.sampled_from(["m1", "m2"]), min_size=1, max_size=2))
                )
            ]
        if not strategies:
            strategies["dontschedule"] = [rule("m1", "Equals", 1)]
        policies.append(make_policy(name, **strategies))  # type: ignore[arg-type]
    return policies


values_strategy = st.dictionaries(
    st.sampled_from(["m1", "m2"]),
    st.dictionaries(st.sampled_from(NODE_NAMES), st.integers(0, 4).map(float)),
)
foreign_labels = st.dictionaries(
    st.sampled_from(["app", "x", "zone", "example.com/team"]),
    st.sampled_from(["violating", "web", "a"]),
)
stale_owned = st.dictionaries(
    st.sampled_from(["telemetry.aware.scheduling.gone/k", "telemetry.aware.scheduling.p/old"]),
    st.just("1"),
)


def start_nodes(draw_foreign: Mapping[NodeName, Mapping[str, str]]) -> list[Node]:
    return [Node(n, labels=dict(draw_foreign.get(n, {}))) for n in NODE_NAMES]


@settings(max_examples=150, deadline=None)
@given(
    policies=policy_sets(),
    values=values_strategy,
    foreign=st.dictionaries(st.sampled_from(NODE_NAMES), foreign_labels),
    stale=st.dictionaries(st.sampled_from(NODE_NAMES), stale_owned),
)
def test_patches_converge_in_one_step_and_leave_foreign_labels_alone(
    policies: list[TASPolicy],
    values: Mapping[str, Mapping[str, float]],
    foreign: dict[NodeName, dict[str, str]],
    stale: dict[NodeName, dict[str, str]],
) -> None:
    nodes = [Node(n, labels={**foreign.get(n, {}), **stale.get(n, {})}) for n in NODE_NAMES]
    state = compute_desired({p.key: p for p in policies}, metrics(values), frozenset(NODE_NAMES))
    patched = [
        apply_patch(n, diff_node(n, state.node_labels.get(n.name, {}), state.deschedule_keys))
        for n in nodes
    ]
    assert diff_nodes(patched, state.node_labels, state.deschedule_keys) == []
    for before, after in zip(nodes, patched, strict=True):
        wanted = state.node_labels.get(before.name, {})
        for key, value in before.labels.items():
            # foreign labels survive, except `<current deschedule policy>=violating`
            ours = key.startswith("telemetry.aware.scheduling.") or (
                value == "violating" and key in state.deschedule_keys
            )
            if key not in wanted and not ours:
                assert after.labels.get(key) == value
        assert {k: v for k, v in after.labels.items() if k in wanted} == wanted
        assert not any(
            k.startswith("telemetry.aware.scheduling.") and k not in wanted for k in after.labels
        )


@settings(max_examples=150, deadline=None)
@given(first=policy_sets(), second=policy_sets(), values=values_strategy)
def test_after_a_policy_change_patches_touch_exactly_the_changed_labels(
    first: list[TASPolicy], second: list[TASPolicy], values: Mapping[str, Mapping[str, float]]
) -> None:
    columns = metrics(values)
    before = compute_desired({p.key: p for p in first}, columns, frozenset(NODE_NAMES))
    nodes = [
        apply_patch(n, diff_node(n, before.node_labels.get(n.name, {}), before.deschedule_keys))
        for n in start_nodes({})
    ]
    after = compute_desired({p.key: p for p in second}, columns, frozenset(NODE_NAMES))
    for node in nodes:
        old = before.node_labels.get(node.name, {})
        new = after.node_labels.get(node.name, {})
        patch = diff_node(node, new, after.deschedule_keys)
        if old == new:
            assert patch is None
            continue
        assert patch is not None
        assert dict(patch.set_labels) == {k: v for k, v in new.items() if old.get(k) != v}
        assert set(patch.remove) == set(old) - set(new)


# ------------------------------------------------------------------------------- NodeDiffer


def test_the_differ_skips_settled_nodes_and_rediffs_changed_ones() -> None:
    differ = NodeDiffer()
    keys = frozenset({"demo-policy"})
    settled = make_node(
        "C",
        labels={"demo-policy": "violating"},
        annotations={OWNED_ANNOTATION: '["demo-policy"]'},
        apply=lambda n: dataclasses.replace(n, resource_version="7"),
    )
    wanted = {NodeName("C"): {"demo-policy": "violating"}}
    assert differ.diff([settled], wanted, keys) == []
    assert differ.diff([settled], wanted, keys) == []
    # Someone removed the label: a new resourceVersion, so the node is diffed again.
    stripped = dataclasses.replace(settled, labels={}, resource_version="8")
    (patch,) = differ.diff([stripped], wanted, keys)
    assert patch.set_labels == {"demo-policy": "violating"}
    # The wanted labels changed while the node did not: diffed again.
    (patch,) = differ.diff([settled], {}, keys)
    assert patch.remove == ("demo-policy",)


_KEYS = ["p1", "p2", "telemetry.aware.scheduling.p1/a", "telemetry.aware.scheduling.p2/a"]
_VALUES = ["violating", "1", "2"]
wanted_rounds = st.dictionaries(
    st.sampled_from(["A", "B", "C", "D"]),
    st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(
    rounds=st.lists(
        st.tuples(wanted_rounds, st.lists(st.sampled_from(["A", "B", "C", "D"]), max_size=2)),
        min_size=1,
        max_size=6,
    ),
    keys=st.sampled_from([frozenset({"p1"}), frozenset({"p1", "p2"})]),
)
def test_the_differ_gives_the_patches_of_diffing_every_node_over_any_cycles(
    rounds: list[tuple[dict[str, dict[str, str]], list[str]]], keys: frozenset[str]
) -> None:
    cluster = {
        name: make_node(name, apply=lambda n: dataclasses.replace(n, resource_version="1"))
        for name in ("A", "B", "C", "D")
    }
    version = 1
    differ = NodeDiffer()
    for wanted_per_node, edited in rounds:
        for name in edited:  # someone else changes the node: our labels may go
            version += 1
            cluster[name] = dataclasses.replace(
                cluster[name], labels={"other": str(version)}, resource_version=str(version)
            )
        nodes = list(cluster.values())
        wanted = WantedLabels.of_nodes(
            {NodeName(n): labels for n, labels in wanted_per_node.items() if labels}
        )
        patches = differ.diff(nodes, wanted, keys)
        assert patches == diff_nodes(nodes, wanted_per_node, keys)  # type: ignore[arg-type]
        for patch in patches:  # the cluster applies them, with a new resourceVersion
            version += 1
            cluster[patch.node] = dataclasses.replace(
                apply_patch(cluster[patch.node], patch), resource_version=str(version)
            )
