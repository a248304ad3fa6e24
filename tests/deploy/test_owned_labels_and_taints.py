"""Nobody else may forge what TAS acts on: the admission policies for everyone but the
controller, and the fence around the descheduler's taints, evaluated.

deploy/cluster ships `tas-owned-labels` (every user but the policy controller's ServiceAccount),
deploy/descheduler-taints ships the descheduler's `nodes: patch` with
`tas-descheduler-owned-taints`. Their CEL is evaluated with cel-python through the API emulator's
admission (tests/k8s_emulator/admission.py), on realistic objects, as the request the API server
builds (a create with a null `oldObject`).

Covered:
- installed: the labels policy with deploy/cluster (Deny, Fail, creates and updates of pods and
  nodes); the taint fence with the taints grant and only there; the default install grants the
  descheduler no node patch, and no other shipped role does either;
- denied, for a user, an administrator (system:masters: admission holds for them too), the
  descheduler and the extender: setting, changing and removing `<policy>=violating` on a node,
  a `telemetry.aware.scheduling.<policy>/*` label, the owned-labels annotation; creating a pod
  with `violate=<policy>`, setting, changing and removing it later; creating a node already
  labelled violating or with a labeling-strategy label;
- admitted for them: their own labels (also a key without a prefix valued other than
  `violating`), a kubelet's status update, a pod or node created without TAS's labels; the
  controller itself is not matched;
- the descheduler's fence, admitted: its soft taint and its reservation added and removed next
  to others' taints; denied, each with a message naming what: a NoExecute taint, another taint
  removed or changed, its own key with another effect, unschedulable, a label, an annotation,
  the status, a status subresource write. Every validation of each policy refuses one case.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import cast

import pytest

from tas.vocabulary import OWNED_ANNOTATION, POD_VIOLATION_LABEL, POLICY_LABEL
from tests.deploy.changes import (
    CONTROLLER,
    NAMESPACE,
    POLICY,
    Change,
    after,
    annotation,
    demo_node,
    demo_pod,
    label,
    node_not_ready,
    nothing,
    unschedulable,
    with_annotation,
)
from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, find, rendered
from tests.k8s_emulator.admission import Refusal, Update, refusal
from tests.k8s_emulator.rbac import User
from tests.k8s_emulator.resources import BY_PLURAL

CLUSTER = DEPLOY / "cluster"
TAINTS = DEPLOY / "descheduler-taints"
LABELS_POLICY = "tas-owned-labels"
FENCE = "tas-descheduler-owned-taints"
LABELING = "telemetry.aware.scheduling.cards/card0"
SOFT = "telemetry.aware.scheduling/overutilized"
RESERVED = "telemetry.aware.scheduling/reserved"

USER = User("jane", ("system:authenticated",))
ADMIN = User("kubernetes-admin", ("system:masters",))
DESCHEDULER = User.service_account(NAMESPACE, "tas-descheduler")
EXTENDER = User.service_account(NAMESPACE, "tas-extender")
KUBELET = User("system:node:node-c", ("system:nodes",))
OTHERS = [
    pytest.param(USER, id="a user"),
    pytest.param(ADMIN, id="an administrator"),
    pytest.param(DESCHEDULER, id="the descheduler"),
    pytest.param(EXTENDER, id="the extender"),
]


def policy_pair(directory: Path, name: str) -> tuple[Document, Document]:
    objects = rendered(directory)
    return (
        find(objects, "ValidatingAdmissionPolicy", name),
        find(objects, "ValidatingAdmissionPolicyBinding", name),
    )


def only(directory: Path, name: str) -> tuple[list[Document], list[Document]]:
    policy, binding = policy_pair(directory, name)
    return [policy], [binding]


def everything_shipped() -> tuple[list[Document], list[Document]]:
    """Every admission policy and binding of deploy/cluster with deploy/descheduler-taints."""
    objects = [*rendered(CLUSTER), *rendered(TAINTS)]
    return (
        [o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"],
        [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"],
    )


def request(
    obj: Document,
    change: Change | None,
    *,
    user: User,
    subresource: str = "",
    policies: tuple[list[Document], list[Document]] | None = None,
) -> Refusal | None:
    """The update `change` makes to `obj` (a create of `obj` when `change` is None)."""
    shipped_policies, bindings = policies or everything_shipped()
    plural = "nodes" if obj["kind"] == "Node" else "pods"
    update = Update(
        BY_PLURAL[plural],
        obj["metadata"]["name"],
        user,
        namespace=obj["metadata"].get("namespace", ""),
        subresource=subresource,
        operation="CREATE" if change is None else "UPDATE",
    )
    new = obj if change is None else after(obj, change)
    old = None if change is None else obj
    return refusal(policies=shipped_policies, bindings=bindings, update=update, obj=new, old=old)


# --- what is shipped -------------------------------------------------------------------------


def test_the_labels_policy_is_installed_with_the_cluster_for_creates_and_updates() -> None:
    policy, binding = policy_pair(CLUSTER, LABELS_POLICY)
    assert binding["spec"] == {"policyName": LABELS_POLICY, "validationActions": ["Deny"]}
    assert policy["spec"]["failurePolicy"] == "Fail"
    rules = policy["spec"]["matchConstraints"]["resourceRules"]
    assert {"CREATE", "UPDATE"} <= set(rules[0]["operations"])
    assert {"pods", "nodes"} <= set(rules[0]["resources"])


def node_patchers(directory: Path) -> set[str]:
    """The ClusterRoles of `directory` that may patch or update nodes."""
    return {
        role["metadata"]["name"]
        for role in rendered(directory)
        if role["kind"] == "ClusterRole"
        for rule in role.get("rules") or []
        if {"nodes", "*"} & set(rule.get("resources") or [])
        and {"patch", "update", "*"} & set(rule.get("verbs") or [])
    }


def test_the_default_install_lets_only_the_fenced_controller_patch_a_node() -> None:
    for directory in (CLUSTER, DEPLOY / "custom-metrics"):
        assert node_patchers(directory) == {"tas-policy-controller"}, directory


def test_the_descheduler_s_node_patch_comes_only_with_its_fence() -> None:
    assert node_patchers(TAINTS) == {"tas-descheduler-taints"}
    objects = rendered(TAINTS)
    binding = find(objects, "ClusterRoleBinding", "tas-descheduler-taints")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "tas-descheduler", "namespace": NAMESPACE}
    ]
    policy, fence = policy_pair(TAINTS, FENCE)
    assert fence["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["failurePolicy"] == "Fail"


# --- everyone else: the controller's labels ---------------------------------------------------

FORGED = [
    pytest.param(demo_node(), label(POLICY, "violating"), "label demo-policy", id="node marked"),
    pytest.param(
        demo_node(**{POLICY: "violating"}), label(POLICY, None), "label demo-policy", id="unmarked"
    ),
    pytest.param(
        demo_node(**{POLICY: "violating"}), label(POLICY, "no"), "label demo-policy", id="changed"
    ),
    pytest.param(demo_node(), label(LABELING, "hot"), f"label {LABELING}", id="labeling set"),
    pytest.param(
        demo_node(**{LABELING: "hot"}), label(LABELING, None), "label", id="labeling removed"
    ),
    pytest.param(
        demo_node(**{LABELING: "hot"}), label(LABELING, "cold"), "label", id="labeling changed"
    ),
    pytest.param(demo_node(**{LABELING: "hot"}), None, "label", id="node created labelled"),
    pytest.param(
        demo_node(), annotation(OWNED_ANNOTATION, '["x"]'), OWNED_ANNOTATION, id="record set"
    ),
    pytest.param(
        with_annotation(demo_node(**{POLICY: "violating"}), OWNED_ANNOTATION, f'["{POLICY}"]'),
        annotation(OWNED_ANNOTATION, None),
        OWNED_ANNOTATION,
        id="record removed",
    ),
    pytest.param(
        demo_pod(), label(POD_VIOLATION_LABEL, POLICY), "label violate of a pod", id="pod marked"
    ),
    pytest.param(
        demo_pod(**{POD_VIOLATION_LABEL: POLICY}),
        label(POD_VIOLATION_LABEL, None),
        "label violate",
        id="pod unmarked",
    ),
    pytest.param(
        demo_pod(**{POD_VIOLATION_LABEL: POLICY}),
        label(POD_VIOLATION_LABEL, "other"),
        "label violate",
        id="pod mark changed",
    ),
    pytest.param(
        demo_pod(**{POD_VIOLATION_LABEL: POLICY}), None, "label violate", id="pod created marked"
    ),
    pytest.param(
        demo_node(**{POLICY: "violating"}), None, "label demo-policy", id="node created marked"
    ),
]


@pytest.mark.parametrize("user", OTHERS)
@pytest.mark.parametrize(("obj", "change", "message"), FORGED)
def test_nobody_but_the_controller_may_forge_or_erase_its_labels(
    user: User, obj: Document, change: Change | None, message: str
) -> None:
    denied = request(obj, change, user=user, policies=only(CLUSTER, LABELS_POLICY))
    assert denied is not None
    assert (denied.policy, denied.reason) == (LABELS_POLICY, "Forbidden")
    assert message in denied.message
    assert denied.message.startswith("only the TAS policy controller may")


@pytest.mark.parametrize(("obj", "change", "message"), FORGED)
def test_the_controller_itself_is_not_matched_by_the_labels_policy(
    obj: Document, change: Change | None, message: str
) -> None:
    denied = request(obj, change, user=CONTROLLER)
    assert denied is None or denied.policy != LABELS_POLICY


OWN_BUSINESS = [
    pytest.param(demo_node(), label("tier", "gold"), USER, id="a user's label"),
    pytest.param(demo_node(tier="gold"), label("tier", None), USER, id="a user's label removed"),
    pytest.param(demo_node(), label("example.com/violate", "x"), ADMIN, id="a prefixed label"),
    pytest.param(demo_pod(), label("app", "web"), USER, id="a pod label"),
    pytest.param(demo_pod(), label(POLICY_LABEL, None), USER, id="a pod unlinked"),
    pytest.param(
        demo_node(**{POLICY: "violating"}), node_not_ready, KUBELET, id="a kubelet's status"
    ),
    pytest.param(demo_pod(), None, USER, id="a pod created"),
    pytest.param(demo_node(), None, KUBELET, id="a node registered"),
    pytest.param(demo_node(**{POLICY: "violating"}), nothing, USER, id="an update keeping them"),
]


@pytest.mark.parametrize(("obj", "change", "user"), OWN_BUSINESS)
def test_everyone_keeps_their_own_labels(obj: Document, change: Change | None, user: User) -> None:
    assert request(obj, change, user=user) is None


# --- the descheduler's fence -------------------------------------------------------------------


def taint(key: str, effect: str, value: str = "true") -> dict[str, str]:
    return {"key": key, "value": value, "effect": effect}


NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "effect": "NoExecute",
    "timeAdded": "2026-01-02T03:04:05Z",
}
DEDICATED = taint("dedicated", "NoSchedule", "gpu")


def tainted(*taints: dict[str, str]) -> Document:
    node = demo_node()
    node["spec"]["taints"] = [dict(t) for t in taints]
    return node


def taints(*wanted: dict[str, str]) -> Change:
    def change(obj: Document) -> None:
        obj["spec"]["taints"] = [dict(t) for t in wanted]

    return change


ADMITTED_TAINTS = [
    pytest.param(tainted(DEDICATED), taints(DEDICATED, taint(SOFT, "PreferNoSchedule")), id="soft"),
    pytest.param(tainted(DEDICATED, taint(SOFT, "PreferNoSchedule")), taints(DEDICATED), id="off"),
    pytest.param(tainted(), taints(taint(RESERVED, "NoSchedule", "uid-1")), id="reserved"),
    pytest.param(
        tainted(NOT_READY, taint(RESERVED, "NoSchedule", "uid-1")),
        taints(NOT_READY),
        id="reservation lifted",
    ),
]


@pytest.mark.parametrize(("obj", "change"), ADMITTED_TAINTS)
def test_the_descheduler_may_set_and_clear_its_own_taints(obj: Document, change: Change) -> None:
    assert request(obj, change, user=DESCHEDULER) is None


def labelled(obj: Document) -> None:
    obj["metadata"]["labels"]["kubernetes.io/hostname"] = "elsewhere"


DENIED_TAINTS = [
    pytest.param(
        tainted(), taints(taint("evict", "NoExecute")), "", "taint evict", id="NoExecute added"
    ),
    pytest.param(tainted(DEDICATED), taints(), "", "taint dedicated", id="another's removed"),
    pytest.param(
        tainted(NOT_READY),
        taints({**NOT_READY, "timeAdded": "2026-01-02T03:04:06Z"}),
        "",
        "taint node.kubernetes.io/not-ready",
        id="another's changed",
    ),
    pytest.param(
        tainted(), taints(taint(RESERVED, "NoExecute")), "", "only as NoSchedule", id="own key"
    ),
    pytest.param(tainted(), unschedulable, "", "may not change a node's spec", id="cordon"),
    pytest.param(tainted(), labelled, "", "labels, annotations", id="hostname label"),
    pytest.param(tainted(), label(POLICY, "violating"), "", "labels", id="violating label"),
    pytest.param(tainted(), annotation("a", "b"), "", "annotations", id="annotation"),
    pytest.param(tainted(), node_not_ready, "", "status", id="status"),
    pytest.param(tainted(), nothing, "status", "no subresource", id="status subresource"),
]


@pytest.mark.parametrize(("obj", "change", "subresource", "message"), DENIED_TAINTS)
def test_the_descheduler_may_change_nothing_else_of_a_node(
    obj: Document, change: Change, subresource: str, message: str
) -> None:
    denied = request(
        obj, change, user=DESCHEDULER, subresource=subresource, policies=only(TAINTS, FENCE)
    )
    assert denied is not None
    assert (denied.policy, denied.reason) == (FENCE, "Forbidden")
    assert message in denied.message


def test_the_fence_holds_only_the_descheduler() -> None:
    change = taints(taint("evict", "NoExecute"))
    assert request(tainted(), change, user=USER, policies=only(TAINTS, FENCE)) is None


def numbered(policy: Document) -> Document:
    copied = copy.deepcopy(policy)
    for index, validation in enumerate(copied["spec"]["validations"]):
        validation.pop("messageExpression", None)
        validation["message"] = f"validation {index}"
    return copied


@pytest.mark.parametrize(
    ("directory", "name", "cases", "user"),
    [
        pytest.param(CLUSTER, LABELS_POLICY, FORGED, USER, id="labels"),
        pytest.param(TAINTS, FENCE, DENIED_TAINTS, DESCHEDULER, id="fence"),
    ],
)
def test_every_validation_refuses_one_of_the_hostile_requests(
    directory: Path, name: str, cases: list[pytest.ParameterSet], user: User
) -> None:
    policy, binding = policy_pair(directory, name)
    fired = set()
    for case in cases:
        obj, change, *rest = case.values
        subresource = rest[0] if len(rest) == 2 else ""
        denied = request(
            cast(Document, obj),
            cast(Change | None, change),
            user=user,
            subresource=cast(str, subresource),
            policies=([numbered(policy)], [binding]),
        )
        assert denied is not None
        fired.add(denied.message)
    assert fired == {f"validation {i}" for i in range(len(policy["spec"]["validations"]))}
