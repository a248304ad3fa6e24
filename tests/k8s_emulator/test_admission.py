"""The emulator evaluates ValidatingAdmissionPolicies on updates as the API server does.

Covered (the policy's CEL evaluated by cel-python; over real HTTP where the case is about the
request or the answer):
- matching: a resource rule's operations, group, version and resources (`pods` is not
  `pods/status`; `pods/*` is pods and every subresource; `*` no subresource), resourceNames,
  scope and excludeResourceRules; a policy takes effect only through a binding, and a binding's
  own resource rules narrow it; `Warn` and `Audit` bindings do not deny;
- matchConditions: one false skips the policy; an error denies under `failurePolicy: Fail` and
  is ignored under `Ignore`;
- variables: in order, each seeing those before it; a failing one fails only what reads it;
- validations: the first that is not true denies, with its messageExpression (a one-line
  string), else its message, else `failed expression: ...`; an error denies under Fail;
- the CEL inputs: `object` as it would be stored, `oldObject` as it is, `request` with the
  user, the resource and (absent on an update of the object itself) the subresource; an
  expression that needs a Kubernetes CEL extension fails, and so denies;
- the refusal: the API server's Status (422 Invalid, or the validation's reason: Forbidden
  403), message and causes; the object is unchanged and the refusal is a `Denial`;
- who is admitted: a ServiceAccount's updates, not the test's own requests;
- a field the emulator does not evaluate (paramKind, selectors) is a 500 naming it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import kubernetes.client as k8s
import pytest

from tests.k8s_emulator import KubeEmulator
from tests.k8s_emulator.admission import Refusal, Update, refusal
from tests.k8s_emulator.rbac import User
from tests.k8s_emulator.resources import BY_PLURAL
from tests.k8s_emulator.store import ApiError

Document = dict[str, Any]
API = "admissionregistration.k8s.io/v1"
ROBOT = User.service_account("tools", "robot")
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    "status": {"phase": "Running"},
}


def policy(
    *validations: Document,
    rules: list[Document] | None = None,
    name: str = "p",
    **spec: Any,
) -> Document:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "matchConstraints": {
                "resourceRules": rules
                or [
                    {
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "operations": ["UPDATE"],
                        "resources": ["pods"],
                    }
                ]
            },
            "validations": list(validations),
            **spec,
        },
    }


def binding(policy_name: str = "p", actions: tuple[str, ...] = ("Deny",), **spec: Any) -> Document:
    return {
        "apiVersion": API,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"{policy_name}-binding"},
        "spec": {"policyName": policy_name, "validationActions": list(actions), **spec},
    }


def no_image_change(**extra: Any) -> Document:
    return {"expression": "object.spec == oldObject.spec", **extra}


def relabelled(obj: Document) -> Document:
    new = copy.deepcopy(obj)
    new["metadata"]["labels"]["app"] = "db"
    return new


def reimaged(obj: Document) -> Document:
    new = copy.deepcopy(obj)
    new["spec"]["containers"][0]["image"] = "evil"
    return new


def decide(
    policies: list[Document],
    bindings: list[Document],
    change: Callable[[Document], Document] = reimaged,
    *,
    subresource: str = "",
    user: User = ROBOT,
) -> Refusal | None:
    update = Update(BY_PLURAL["pods"], "p", user, namespace="ns", subresource=subresource)
    return refusal(policies=policies, bindings=bindings, update=update, obj=change(POD), old=POD)


# --- matching ------------------------------------------------------------------------------


def rule(resources: list[str], **extra: Any) -> Document:
    return {
        "apiGroups": [""],
        "apiVersions": ["v1"],
        "operations": ["UPDATE"],
        "resources": resources,
        **extra,
    }


@pytest.mark.parametrize(
    ("rules", "subresource", "matched"),
    [
        pytest.param([rule(["pods"])], "", True, id="pods"),
        pytest.param([rule(["pods"])], "status", False, id="pods is not pods/status"),
        pytest.param([rule(["pods/*"])], "", True, id="pods/* includes pods"),
        pytest.param([rule(["pods/*"])], "ephemeralcontainers", True, id="pods/* subresources"),
        pytest.param([rule(["*/status"])], "status", True, id="*/status"),
        pytest.param([rule(["*"])], "status", False, id="* has no subresources"),
        pytest.param([rule(["*/*"])], "resize", True, id="*/*"),
        pytest.param([rule(["nodes"])], "", False, id="another resource"),
        pytest.param([{**rule(["pods"]), "operations": ["CREATE"]}], "", False, id="operation"),
        pytest.param([{**rule(["pods"]), "apiGroups": ["apps"]}], "", False, id="group"),
        pytest.param([{**rule(["pods"]), "apiVersions": ["v2"]}], "", False, id="version"),
        pytest.param([rule(["pods"], resourceNames=["q"])], "", False, id="resourceNames"),
        pytest.param([rule(["pods"], resourceNames=["p"])], "", True, id="resourceNames p"),
        pytest.param([rule(["pods"], scope="Cluster")], "", False, id="scope Cluster"),
        pytest.param([rule(["pods"], scope="Namespaced")], "", True, id="scope Namespaced"),
    ],
)
def test_resource_rules_match_as_the_api_server_s(
    rules: list[Document], subresource: str, matched: bool
) -> None:
    denied = decide([policy(no_image_change(), rules=rules)], [binding()], subresource=subresource)
    assert (denied is not None) is matched


def test_excluded_resources_are_not_matched() -> None:
    excluded = policy(no_image_change())
    excluded["spec"]["matchConstraints"]["excludeResourceRules"] = [rule(["pods"])]
    assert decide([excluded], [binding()]) is None


@pytest.mark.parametrize(
    ("bindings", "denied"),
    [
        pytest.param([], False, id="no binding"),
        pytest.param([binding("other")], False, id="a binding of another policy"),
        pytest.param([binding(actions=("Warn", "Audit"))], False, id="warn and audit"),
        pytest.param([binding(actions=("Deny", "Audit"))], True, id="deny and audit"),
        pytest.param(
            [binding(matchResources={"resourceRules": [rule(["nodes"])]})],
            False,
            id="the binding's rules narrow",
        ),
        pytest.param(
            [binding(matchResources={"resourceRules": [rule(["pods"])]})], True, id="and match"
        ),
    ],
)
def test_a_policy_denies_only_through_a_binding_with_deny(
    bindings: list[Document], denied: bool
) -> None:
    assert (decide([policy(no_image_change())], bindings) is not None) is denied


# --- conditions, variables, validations ----------------------------------------------------


@pytest.mark.parametrize(
    ("condition", "failure_policy", "denied"),
    [
        pytest.param("request.userInfo.username == 'someone'", "Fail", False, id="false"),
        pytest.param(f"request.userInfo.username == '{ROBOT.name}'", "Fail", True, id="true"),
        pytest.param("request.nope == 1", "Fail", True, id="error, Fail"),
        pytest.param("request.nope == 1", "Ignore", False, id="error, Ignore"),
    ],
)
def test_match_conditions_select_the_requests_a_policy_judges(
    condition: str, failure_policy: str, denied: bool
) -> None:
    judged = policy(
        no_image_change(),
        matchConditions=[{"name": "who", "expression": condition}],
        failurePolicy=failure_policy,
    )
    assert (decide([judged], [binding()]) is not None) is denied


def test_variables_see_those_before_them_and_fail_only_where_read() -> None:
    variables = [
        {"name": "broken", "expression": "object.nope"},
        {"name": "app", "expression": "object.metadata.labels['app']"},
        {"name": "isWeb", "expression": "variables.app == 'web'"},
    ]
    reads_app = policy({"expression": "variables.isWeb"}, variables=variables)
    assert decide([reads_app], [binding()], relabelled) is not None
    assert decide([reads_app], [binding()], lambda o: o) is None
    reads_broken = policy({"expression": "variables.broken == 1"}, variables=variables)
    denied = decide([reads_broken], [binding()], lambda o: o)
    assert denied is not None
    assert denied.message.startswith("expression 'variables.broken == 1' resulted in error")


@pytest.mark.parametrize(
    ("validation", "message"),
    [
        pytest.param(
            no_image_change(messageExpression="'image of ' + object.metadata.name", message="m"),
            "image of p",
            id="messageExpression",
        ),
        pytest.param(
            no_image_change(messageExpression="'two\\nlines'", message=" fallback "),
            "fallback",
            id="multi-line falls back to message",
        ),
        pytest.param(
            no_image_change(messageExpression="object.nope", message="fallback"),
            "fallback",
            id="failing messageExpression",
        ),
        pytest.param(no_image_change(), "failed expression: object.spec == oldObject.spec", id="-"),
    ],
)
def test_the_first_failing_validation_says_why(validation: Document, message: str) -> None:
    first = policy(validation, {"expression": "false", "message": "second"})
    denied = decide([first], [binding()])
    assert denied == Refusal("p", "p-binding", message, "Invalid")


def test_the_request_names_user_resource_and_subresource_as_the_api_server_s() -> None:
    request = policy(
        {
            "expression": "request.userInfo.username == 'system:serviceaccount:tools:robot'"
            " && 'system:serviceaccounts:tools' in request.userInfo.groups"
            " && request.resource.resource == 'pods' && request.kind.kind == 'Pod'"
            " && request.namespace == 'ns' && request.name == 'p'"
            " && request.operation == 'UPDATE' && !has(request.subResource)"
        }
    )
    assert decide([request], [binding()]) is None
    status = policy({"expression": "request.subResource == 'status'"}, rules=[rule(["pods/*"])])
    assert decide([status], [binding()], subresource="status") is None
    # Absent on an update of the pod itself: reading it without has() fails, as on a cluster.
    denied = decide([status], [binding()])
    assert denied is not None
    assert "resulted in error" in denied.message


def test_an_expression_needing_a_kubernetes_extension_fails_closed() -> None:
    joined = policy({"expression": "['a', 'b'].join(',') == 'a,b'"})
    denied = decide([joined], [binding()])
    assert denied is not None
    assert "resulted in error" in denied.message


def test_an_unmodelled_field_is_refused_by_name() -> None:
    with_params = policy(no_image_change(), paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
    with pytest.raises(ApiError, match="paramKind"):
        decide([with_params], [binding()])
    selecting = binding(matchResources={"objectSelector": {"matchLabels": {"a": "b"}}})
    with pytest.raises(ApiError, match="objectSelector"):
        decide([policy(no_image_change())], [selecting])


# --- over HTTP -----------------------------------------------------------------------------


@pytest.fixture
def robot(kube_emulator: KubeEmulator) -> k8s.CoreV1Api:
    """The core API as `tools/robot`, which may patch pods; a policy forbids image changes."""
    api = kube_emulator
    api.apply(
        [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": "robot", "namespace": "tools"},
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "pods"},
                "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}],
            },
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": "pods"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "pods",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "tools"}],
            },
            policy(no_image_change(message="no new images", reason="Forbidden"), name="images"),
            binding("images"),
        ]
    )
    api.create("pods", POD, namespace="ns")
    return k8s.CoreV1Api(api.api_client(token=api.token_for("tools", "robot")))


def test_a_denied_update_is_the_api_server_s_status_and_changes_nothing(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    before = kube_emulator.get("pods", "p", namespace="ns")
    patch = {"spec": {"containers": [{"name": "c", "image": "evil"}]}}
    with pytest.raises(k8s.ApiException) as refused:
        robot.patch_namespaced_pod("p", "ns", patch)
    message = (
        "ValidatingAdmissionPolicy 'images' with binding 'images-binding' denied request: "
        "no new images"
    )
    assert refused.value.status == 403
    assert json.loads(refused.value.body or "{}") == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "p" is forbidden: {message}',
        "reason": "Forbidden",
        "details": {"name": "p", "kind": "pods", "causes": [{"message": message}]},
        "code": 403,
    }
    assert kube_emulator.get("pods", "p", namespace="ns") == before
    (denial,) = kube_emulator.denials
    assert (denial.user, denial.method, denial.path) == (
        ROBOT.name,
        "PATCH",
        "/api/v1/namespaces/ns/pods/p",
    )


def test_allowed_updates_and_the_test_s_own_requests_pass(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    robot.patch_namespaced_pod("p", "ns", {"metadata": {"labels": {"app": "db"}}})
    admin = k8s.CoreV1Api(kube_emulator.api_client())
    admin.patch_namespaced_pod("p", "ns", {"spec": {"containers": [{"name": "c", "image": "v2"}]}})
    pod = kube_emulator.get("pods", "p", namespace="ns")
    assert pod is not None
    assert pod["metadata"]["labels"]["app"] == "db"
    assert pod["spec"]["containers"][0]["image"] == "v2"
    assert kube_emulator.denials == []
