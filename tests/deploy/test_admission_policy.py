"""Label ownership, enforced by admission: the shipped ValidatingAdmissionPolicy, evaluated.

deploy/cluster/policy-controller-admission.yaml lets the policy controller's ServiceAccount
change on pods and nodes only the labels and the annotation it owns. Its CEL is evaluated here
with cel-python (through the API emulator's admission, tests/k8s_emulator/admission.py), on
realistic objects (tests/k8s_emulator/realistic.py) and the request the API server builds.

Covered:
- what is shipped: deploy/cluster (and so deploy/custom-metrics) renders the policy and its
  binding, admissionregistration.k8s.io/v1, `failurePolicy: Fail`, `validationActions: [Deny]`,
  updates of pods and nodes and of all their subresources, and every validation says what it
  refuses;
- who is matched: the ServiceAccount the shipped controller Deployment runs as, and no one
  else (the descheduler, a user of the same name in another namespace, an administrator, a
  request without a username, where the condition must not fail): their forbidden changes are
  admitted, not matched;
- admitted: every kind of write the controller makes (`<policy>=violating` with its owned-
  labels annotation, set and removed; labeling-strategy labels set, changed and removed; a
  damaged annotation rewritten; `violate=<policy>` set to the linked policy and removed, also
  with a foreign value; an update that changes nothing), with the API server's own fields
  (resourceVersion, managedFields, generation) moving as on every write;
- denied, each with a message naming what was refused: a pod's image, a node's taint and
  unschedulable, a spec field, a pod's and a node's status, a write through a subresource,
  another label set, removed or changed (also to `violating` from another value, and from
  `violating` to another), a key under another prefix, `violate` set to a policy the pod does
  not link, an annotation on a pod, a node annotation not owned, the owned annotation with
  something not a list of label names, owner references and finalizers;
- every validation of the policy is the one refusing at least one of those changes (none is
  dead);
- over real HTTP, with deploy/cluster applied to the API emulator (which enforces its RBAC and
  this policy): the controller's reconciler, as its ServiceAccount, runs a deschedule and a
  labeling policy through violation, recovery, a label moving between nodes and the policies'
  deletion, and no request is refused; the same token's patch of a pod's image, a node's taint
  or another label is refused with the API server's 403 Status and changes nothing, while the
  descheduler's taint is admitted (deploy/descheduler-taints applied).

The CEL: cel-python implements the CEL specification's standard library and macros (RE2
regular expressions), not Kubernetes' extension libraries (strings such as `join`, lists,
quantities, the authorizer, optional values `?.`), so the policy keeps to the standard ones; an
expression using an extension would fail here, and deny. Neither can it type-check; the API
server declares `object` and `oldObject` dynamic, so it checks no more than the fields of
`request`, and the policy reads `request.subResource`, absent from an update of the object
itself, only after `has()`. The messages name the first refused key (`[0]`), since joining a
list needs the strings extension.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import kubernetes.client as k8s
import pytest
from prometheus_client import CollectorRegistry

from policy_controller.reconciler import Reconciler
from policy_controller.self_metrics import ControllerMetrics
from policy_controller.settings import ControllerSettings
from tas.adapters.cluster.informer import Backoff
from tas.adapters.cluster.kubernetes import KubernetesCluster
from tas.cluster.interface import ResourceKind
from tas.policies.cluster import ClusterPolicyLoader
from tas.policies.store import PolicyStore
from tas.vocabulary import OWNED_ANNOTATION, POD_VIOLATION_LABEL, POLICY_LABEL
from tests import waiting
from tests.builders import ManualClock, health_policy_document, policy_document, rule
from tests.deploy.changes import (
    ACCOUNT,
    CONTROLLER,
    DEMO,
    NAMESPACE,
    POLICY,
    Change,
    after,
    annotation,
    both,
    demo_node,
    demo_pod,
    finalizer,
    image,
    label,
    labels,
    node_name,
    node_not_ready,
    nothing,
    owner,
    pod_phase,
    taint,
    unschedulable,
    with_annotation,
)
from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, find, rendered
from tests.k8s_emulator import KubeEmulator, realistic
from tests.k8s_emulator.admission import Refusal, Update, refusal
from tests.k8s_emulator.rbac import User
from tests.k8s_emulator.resources import BY_PLURAL
from tests.policy_controller.support import AgingMetricView

CLUSTER = DEPLOY / "cluster"
POLICY_FILE = CLUSTER / "policy-controller-admission.yaml"
NAME = "tas-policy-controller-owned-labels"
LABELING = "telemetry.aware.scheduling.cards/card0"
TIMEOUT = 10.0


def shipped(directory: Path = CLUSTER) -> tuple[Document, Document]:
    objects = rendered(directory)
    return (
        find(objects, "ValidatingAdmissionPolicy", NAME),
        find(objects, "ValidatingAdmissionPolicyBinding", NAME),
    )


def decide(
    obj: Document,
    change: Change,
    *,
    user: User = CONTROLLER,
    subresource: str = "",
    policy: Document | None = None,
) -> Refusal | None:
    shipped_policy, binding = shipped()
    plural = "nodes" if obj["kind"] == "Node" else "pods"
    update = Update(
        BY_PLURAL[plural],
        obj["metadata"]["name"],
        user,
        namespace=obj["metadata"].get("namespace", ""),
        subresource=subresource,
    )
    return refusal(
        policies=[policy or shipped_policy],
        bindings=[binding],
        update=update,
        obj=after(obj, change),
        old=obj,
    )


# --- what is shipped -------------------------------------------------------------------------


@pytest.mark.parametrize("directory", [CLUSTER, DEPLOY / "custom-metrics"], ids=lambda p: p.name)
def test_the_policy_and_its_binding_are_installed_with_the_cluster(directory: Path) -> None:
    policy, binding = shipped(directory)
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert binding["spec"]["policyName"] == NAME
    assert binding["spec"]["validationActions"] == ["Deny"]
    assert policy["spec"]["failurePolicy"] == "Fail"


def test_the_policy_matches_every_update_of_pods_and_nodes_and_their_subresources() -> None:
    policy, _ = shipped()
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert rule["operations"] == ["UPDATE"]
    assert rule["apiGroups"] == [""]
    assert set(rule["resources"]) == {"pods", "pods/*", "nodes", "nodes/*"}


def test_every_validation_says_what_it_refuses() -> None:
    policy, _ = shipped()
    for validation in policy["spec"]["validations"]:
        assert validation["message"].startswith(("the policy controller", "the annotation"))
        assert validation["reason"] == "Forbidden"


# --- who is matched ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "user",
    [
        pytest.param(User.service_account(NAMESPACE, "tas-descheduler"), id="the descheduler"),
        pytest.param(User.service_account("default", "tas-policy-controller"), id="same name"),
        pytest.param(User("kubernetes-admin", ("system:masters",)), id="an administrator"),
        # Read only after has(): an error in a match condition would refuse anyone's update.
        pytest.param(User(""), id="a request without a username"),
    ],
)
def test_other_users_are_not_matched(user: User) -> None:
    assert decide(demo_node(), taint, user=user) is None
    assert decide(demo_pod(), image, user=user) is None
    assert decide(demo_node(zone="a"), label("zone", None), user=user) is None


def test_the_controller_is_the_shipped_deployment_s_service_account() -> None:
    assert CONTROLLER.name == f"system:serviceaccount:{NAMESPACE}:tas-policy-controller"
    assert decide(demo_node(), taint) is not None


# --- admitted: what the controller writes ------------------------------------------------

ADMITTED = [
    pytest.param(
        demo_node(),
        both(label(POLICY, "violating"), annotation(OWNED_ANNOTATION, f'["{POLICY}"]')),
        id="node violating, recorded",
    ),
    pytest.param(
        demo_node(**{POLICY: "violating", "other-policy": "violating"}),
        both(label(POLICY, None), annotation(OWNED_ANNOTATION, '["other-policy"]')),
        id="one violation removed, the record rewritten",
    ),
    pytest.param(
        demo_node(**{POLICY: "violating"}),
        both(label(POLICY, None), annotation(OWNED_ANNOTATION, None)),
        id="node recovered, record removed",
    ),
    pytest.param(demo_node(), label(LABELING, "hot"), id="labeling label set"),
    pytest.param(demo_node(**{LABELING: "hot"}), label(LABELING, "cold"), id="labeling changed"),
    pytest.param(demo_node(**{LABELING: "hot"}), label(LABELING, None), id="labeling removed"),
    pytest.param(
        with_annotation(
            demo_node(**{"telemetry.aware.scheduling.gone/card": "hot", "gone": "violating"}),
            OWNED_ANNOTATION,
            '["gone"]',
        ),
        both(
            labels(**{"telemetry.aware.scheduling.gone/card": None, "gone": None}),
            annotation(OWNED_ANNOTATION, None),
        ),
        id="labels of a deleted policy removed",
    ),
    pytest.param(
        with_annotation(demo_node(**{POLICY: "violating"}), OWNED_ANNOTATION, "{not json"),
        annotation(OWNED_ANNOTATION, f'["{POLICY}"]'),
        id="damaged record rewritten",
    ),
    pytest.param(demo_pod(), label(POD_VIOLATION_LABEL, POLICY), id="pod violate set"),
    pytest.param(
        demo_pod(**{POD_VIOLATION_LABEL: POLICY}),
        label(POD_VIOLATION_LABEL, None),
        id="pod violate removed",
    ),
    pytest.param(
        demo_pod(**{POD_VIOLATION_LABEL: "old-policy"}),
        label(POD_VIOLATION_LABEL, None),
        id="foreign violate value removed",
    ),
    pytest.param(demo_node(), nothing, id="node unchanged"),
    pytest.param(demo_pod(), nothing, id="pod unchanged"),
]


@pytest.mark.parametrize(("obj", "change"), ADMITTED)
def test_the_controller_s_own_writes_are_admitted(obj: Document, change: Change) -> None:
    assert decide(obj, change) is None


# --- denied: everything else -------------------------------------------------------------

DENIED = [
    pytest.param(demo_pod(), image, "", "may not change the spec", id="pod image"),
    pytest.param(demo_pod(), node_name, "", "may not change the spec", id="pod spec field"),
    pytest.param(demo_node(), taint, "", "may not change the spec", id="node taint"),
    pytest.param(demo_node(), unschedulable, "", "may not change the spec", id="node cordoned"),
    pytest.param(demo_pod(), pod_phase, "", "may not change the status", id="pod status"),
    pytest.param(demo_node(), node_not_ready, "", "may not change the status", id="node status"),
    pytest.param(
        demo_pod(), pod_phase, "status", "writes no subresource", id="pod status subresource"
    ),
    pytest.param(
        demo_node(), nothing, "status", "writes no subresource", id="node status subresource"
    ),
    pytest.param(
        demo_node(),
        label("node-role.kubernetes.io/control-plane", ""),
        "",
        "may not change the label node-role.kubernetes.io/control-plane of a node",
        id="node label set",
    ),
    pytest.param(
        demo_node(),
        label("kubernetes.io/hostname", None),
        "",
        "may not change the label kubernetes.io/hostname of a node",
        id="node label removed",
    ),
    pytest.param(
        demo_node(),
        label("topology.kubernetes.io/zone", "zone-9"),
        "",
        "may not change the label topology.kubernetes.io/zone of a node",
        id="node label changed",
    ),
    pytest.param(
        demo_node(disktype="ssd"),
        label("disktype", "violating"),
        "",
        "may not change the label disktype of a node",
        id="bare label overwritten with violating",
    ),
    pytest.param(
        demo_node(disktype="ssd"),
        label("disktype", None),
        "",
        "may not change the label disktype of a node",
        id="bare label removed",
    ),
    pytest.param(
        demo_node(**{POLICY: "violating"}),
        label(POLICY, "blue"),
        "",
        f"may not change the label {POLICY} of a node",
        id="violating changed to another value",
    ),
    pytest.param(
        demo_node(),
        label("telemetry.aware.scheduling/overutilized", "true"),
        "",
        "may not change the label telemetry.aware.scheduling/overutilized of a node",
        id="project prefix without a policy",
    ),
    pytest.param(
        demo_pod(),
        label("app", "other"),
        "",
        "may not change the label app of a pod: it owns only the label violate",
        id="pod label changed",
    ),
    pytest.param(
        demo_pod(),
        label(POLICY_LABEL, None),
        "",
        f"may not change the label {POLICY_LABEL} of a pod",
        id="pod link removed",
    ),
    pytest.param(
        demo_pod(),
        label(POD_VIOLATION_LABEL, "other-policy"),
        "",
        "may set the pod label violate only to the policy the pod links",
        id="violate another policy",
    ),
    pytest.param(
        demo_pod(),
        annotation("sidecar.istio.io/inject", "false"),
        "",
        "may not change the annotation sidecar.istio.io/inject of a pod: it owns none",
        id="pod annotation",
    ),
    pytest.param(
        demo_node(),
        annotation("node.alpha.kubernetes.io/ttl", None),
        "",
        "may not change the annotation node.alpha.kubernetes.io/ttl of a node",
        id="node annotation not owned",
    ),
    pytest.param(
        demo_node(),
        annotation(OWNED_ANNOTATION, "x" * 100),
        "",
        "must be a JSON list of label names",
        id="owned annotation not a list",
    ),
    pytest.param(
        demo_node(),
        annotation(OWNED_ANNOTATION, '["a", "b"]'),
        "",
        "must be a JSON list of label names",
        id="owned annotation not as written",
    ),
    pytest.param(demo_pod(), owner, "", "owner references or finalizers", id="pod owner"),
    pytest.param(demo_node(), finalizer, "", "owner references or finalizers", id="finalizer"),
]


@pytest.mark.parametrize(("obj", "change", "subresource", "message"), DENIED)
def test_every_other_change_is_denied_with_a_message_saying_what(
    obj: Document, change: Change, subresource: str, message: str
) -> None:
    denied = decide(obj, change, subresource=subresource)
    assert denied is not None
    assert (denied.policy, denied.binding, denied.reason) == (NAME, NAME, "Forbidden")
    assert message in denied.message
    assert "\n" not in denied.message


def test_a_denied_change_stays_denied_next_to_owned_ones() -> None:
    change = both(label(POLICY, "violating"), annotation(OWNED_ANNOTATION, f'["{POLICY}"]'), taint)
    assert decide(demo_node(), change) is not None


def test_every_validation_refuses_one_of_the_forbidden_changes() -> None:
    policy, _ = shipped()
    numbered = copy.deepcopy(policy)
    for index, validation in enumerate(numbered["spec"]["validations"]):
        validation.pop("messageExpression", None)
        validation["message"] = f"validation {index}"
    fired = set()
    for case in DENIED:
        obj, change, subresource, _ = cast(tuple[Document, Change, str, str], case.values)
        denied = decide(obj, change, subresource=subresource, policy=numbered)
        assert denied is not None
        fired.add(denied.message)
    assert fired == {f"validation {i}" for i in range(len(policy["spec"]["validations"]))}


# --- over HTTP: the controller on the shipped manifests ------------------------------------


def labeling_policy() -> Document:
    return policy_document(
        "cards", labeling=[rule("card0_temperature", "GreaterThan", 80, labels=["card0=hot"])]
    )


@dataclass
class Controller:
    """The policy controller's reconciler, as its ServiceAccount, on the shipped manifests."""

    api: KubeEmulator
    cluster: KubernetesCluster
    view: AgingMetricView
    loader: ClusterPolicyLoader
    reconciler: Reconciler

    def reconcile(self) -> None:
        self.loader.sync()
        report = self.reconciler.reconcile()
        assert report.ran
        assert report.errors == 0, self.api.denials

    def labels(self, plural: str, name: str, namespace: str | None = None) -> dict[str, str]:
        found = self.api.get(plural, name, namespace=namespace)
        assert found is not None
        return dict(found["metadata"].get("labels") or {})


@pytest.fixture
def controller(kube_emulator: KubeEmulator) -> Iterator[Controller]:
    api = kube_emulator
    api.apply(rendered(CLUSTER))
    for index, name in enumerate(("node-a", "node-b", "node-c")):
        api.create("nodes", realistic.node(name, seed=index))
    api.create("namespaces", {"metadata": {"name": DEMO}})
    api.create("pods", demo_pod())
    api.create("pods", realistic.pod("bystander", namespace=DEMO, node="node-c"))
    api.create("taspolicies", health_policy_document())
    api.create("taspolicies", labeling_policy())
    token = api.token_for(*ACCOUNT)
    cluster = KubernetesCluster(
        api.api_client(token=token),
        watched=[ResourceKind.NODE, ResourceKind.POD, ResourceKind.POLICY],
        pod_label_selectors=(POLICY_LABEL, POD_VIOLATION_LABEL),
        watch_timeout=2.0,
        backoff=lambda: Backoff(initial=0.05, maximum=0.2, jitter=0),
    )
    cluster.start()
    try:
        assert cluster.wait_synced(TIMEOUT)
        view = AgingMetricView(max_age=30)
        store = PolicyStore()
        loader = ClusterPolicyLoader(cluster, store)
        reconciler = Reconciler(
            cluster=cluster,
            policies=store,
            metric_view=view,
            metrics=ControllerMetrics(CollectorRegistry()),
            settings=ControllerSettings(status_refresh_cycles=0),
            clock=ManualClock(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)),
        )
        yield Controller(api, cluster, view, loader, reconciler)
    finally:
        cluster.stop()


def test_the_controller_s_writes_are_all_admitted_over_http(controller: Controller) -> None:
    api = controller.api
    card = "telemetry.aware.scheduling.cards/card0"
    controller.view.set("health_metric", {"node-a": 0, "node-b": 0, "node-c": 2})
    controller.view.set("card0_temperature", {"node-a": 90, "node-b": 30, "node-c": 60})
    controller.reconcile()
    assert controller.labels("nodes", "node-c")[POLICY] == "violating"
    assert controller.labels("pods", "demo-1", DEMO)[POD_VIOLATION_LABEL] == POLICY
    assert controller.labels("nodes", "node-a")[card] == "hot"
    assert card not in controller.labels("nodes", "node-b")

    # Recovery, and the labeling label moving from one node to another.
    controller.view.set("health_metric", {"node-c": 0})
    controller.view.set("card0_temperature", {"node-a": 30, "node-b": 95})
    controller.reconcile()
    assert POLICY not in controller.labels("nodes", "node-c")
    assert POD_VIOLATION_LABEL not in controller.labels("pods", "demo-1", DEMO)
    assert card not in controller.labels("nodes", "node-a")
    assert controller.labels("nodes", "node-b")[card] == "hot"

    # The policies deleted: every label of theirs goes.
    controller.view.set("health_metric", {"node-c": 2})
    controller.reconcile()
    api.delete("taspolicies", POLICY, namespace=DEMO)
    api.delete("taspolicies", "cards", namespace="default")
    waiting.eventually(
        lambda: not controller.cluster.list_policy_documents(),
        TIMEOUT,
        what="the deleted policies gone from the cache",
    )
    controller.reconcile()
    for node in api.objects("nodes"):
        assert not {POLICY, card} & set(node["metadata"].get("labels") or {})
        assert OWNED_ANNOTATION not in (node["metadata"].get("annotations") or {})

    writes = [r for r in api.writes() if r.user == CONTROLLER.name]
    patched = {r.path.rsplit("/", 2)[-2] for r in writes if r.method == "PATCH"}
    assert {"nodes", "pods"} <= patched  # the policy was on the path of both
    assert api.denials == []


def _refused(call: Callable[[], Any]) -> dict[str, Any]:
    with pytest.raises(k8s.ApiException) as raised:
        call()
    status: dict[str, Any] = json.loads(raised.value.body or "{}")
    assert raised.value.status == status["code"]
    return status


def test_a_stolen_controller_token_cannot_change_an_image_or_a_taint(
    controller: Controller,
) -> None:
    api = controller.api
    token = api.token_for(*ACCOUNT)
    core = k8s.CoreV1Api(api.api_client(token=token))
    pod_before = api.get("pods", "demo-1", namespace=DEMO)
    node_before = api.get("nodes", "node-a")

    container = {"name": "web", "image": "registry.example/miner:latest"}
    status = _refused(
        lambda: core.patch_namespaced_pod("demo-1", DEMO, {"spec": {"containers": [container]}})
    )
    assert status["code"] == 403
    assert status["reason"] == "Forbidden"
    assert status["message"].startswith(
        f"pods \"demo-1\" is forbidden: ValidatingAdmissionPolicy '{NAME}' with binding "
        f"'{NAME}' denied request: the policy controller may not change the spec"
    )
    status = _refused(lambda: core.patch_node("node-a", {"spec": {"taints": [taint_of()]}}))
    assert "may not change the spec" in status["message"]
    status = _refused(lambda: core.patch_node("node-a", {"metadata": {"labels": {"gpu": "a"}}}))
    assert "may not change the label gpu of a node" in status["message"]

    assert api.get("pods", "demo-1", namespace=DEMO) == pod_before
    assert api.get("nodes", "node-a") == node_before
    assert [d.user for d in api.denials] == [CONTROLLER.name] * 3

    # The descheduler's soft taint is its own business, with deploy/descheduler-taints applied
    # (its role may then patch nodes, fenced to its own taints).
    api.apply(rendered(DEPLOY / "descheduler-taints"))
    descheduler = api.token_for(NAMESPACE, "tas-descheduler")
    k8s.CoreV1Api(api.api_client(token=descheduler)).patch_node(
        "node-a", {"spec": {"taints": [taint_of()]}}
    )
    node = api.get("nodes", "node-a")
    assert node is not None
    assert node["spec"]["taints"] == [taint_of()]


def taint_of() -> dict[str, str]:
    return {
        "key": "telemetry.aware.scheduling/overutilized",
        "value": "true",
        "effect": "PreferNoSchedule",
    }
