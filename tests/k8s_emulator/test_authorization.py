"""The emulator authenticates ServiceAccount tokens and authorizes with RBAC as the API server does.

Covered (through `kubernetes.client` over real HTTP unless the case is about parsing):
- request attributes: verb (list/watch for a GET without a name, deletecollection, the /watch/
  prefix), API group, resource and subresource, namespace (a namespace object is not in one),
  name (also from a `metadata.name` field selector); paths naming no resource (discovery);
- without a token or with the admin token a request is never refused; an unknown token, or the
  token of a ServiceAccount that does not exist, is 401;
- a ClusterRoleBinding grants everywhere; a RoleBinding (to a Role or a ClusterRole) only in its
  own namespace, never across all namespaces;
- rules: a resource does not grant its subresources; `*`, `*/status` and resourceNames match as
  RBAC does; discovery paths are readable by anyone authenticated;
- a refusal is the API server's Forbidden Status, message and details exactly (namespaced,
  cluster scope, subresource, a role that does not exist);
- roles and bindings are read on every request, so a change applies at once;
- what each ServiceAccount was allowed (`accesses`), its roles grant (`grants`), and every
  refusal (`denials`) are recorded.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import httpx
import kubernetes.client as k8s
import pytest

from tests.k8s_emulator import Access, KubeEmulator
from tests.k8s_emulator.rbac import RequestAttributes, request_attributes

NAMESPACE, ACCOUNT = "tools", "robot"
USER = f"system:serviceaccount:{NAMESPACE}:{ACCOUNT}"
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC = f"{RBAC_GROUP}/v1"


def rule(groups: list[str], resources: list[str], verbs: list[str], **extra: Any) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs, **extra}


def role(kind: str, name: str, *rules: dict[str, Any], namespace: str = "") -> dict[str, Any]:
    metadata = {"name": name} | ({"namespace": namespace} if namespace else {})
    return {"apiVersion": RBAC, "kind": kind, "metadata": metadata, "rules": list(rules)}


def binding(kind: str, role_kind: str, role_name: str, *, namespace: str = "") -> dict[str, Any]:
    metadata = {"name": f"{role_name}-binding"} | ({"namespace": namespace} if namespace else {})
    return {
        "apiVersion": RBAC,
        "kind": kind,
        "metadata": metadata,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": role_kind, "name": role_name},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    }


def account() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": ACCOUNT, "namespace": NAMESPACE},
    }


def pod(name: str, namespace: str = "default") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "i"}]},
    }


def refusal(call: Callable[[], object], *, code: int = 403) -> dict[str, Any]:
    """The Status body of a call the emulator must refuse with `code`."""
    with pytest.raises(k8s.ApiException) as refused:
        call()
    assert refused.value.status == code
    body: dict[str, Any] = json.loads(refused.value.body or "{}")
    return body


@pytest.fixture
def robot(kube_emulator: KubeEmulator) -> k8s.CoreV1Api:
    """The core API as the `tools/robot` ServiceAccount (which exists, with no role yet)."""
    kube_emulator.apply([account()])
    token = kube_emulator.token_for(NAMESPACE, ACCOUNT)
    return k8s.CoreV1Api(kube_emulator.api_client(token=token))


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        pytest.param(
            "GET", "/api/v1/nodes", {}, ("list", "", "nodes", "", "", ""), id="list-cluster"
        ),
        pytest.param(
            "GET",
            "/api/v1/pods",
            {"watch": "true"},
            ("watch", "", "pods", "", "", ""),
            id="watch-all-namespaces",
        ),
        pytest.param(
            "GET",
            "/api/v1/watch/namespaces/ns/pods",
            {},
            ("watch", "", "pods", "", "ns", ""),
            id="watch-prefix",
        ),
        pytest.param(
            "GET",
            "/api/v1/namespaces/ns/pods",
            {"fieldSelector": "metadata.name=p"},
            ("list", "", "pods", "", "ns", "p"),
            id="list-one-by-field-selector",
        ),
        pytest.param(
            "POST",
            "/api/v1/namespaces/ns/pods/p/eviction",
            {},
            ("create", "", "pods", "eviction", "ns", "p"),
            id="eviction",
        ),
        pytest.param(
            "PATCH",
            "/apis/telemetry.intel.com/v1alpha1/namespaces/ns/taspolicies/t/status",
            {},
            ("patch", "telemetry.intel.com", "taspolicies", "status", "ns", "t"),
            id="custom-status",
        ),
        pytest.param(
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
            {},
            ("update", "coordination.k8s.io", "leases", "", "ns", "l"),
            id="update",
        ),
        pytest.param(
            "DELETE",
            "/api/v1/namespaces/ns/events",
            {},
            ("deletecollection", "", "events", "", "ns", ""),
            id="deletecollection",
        ),
        pytest.param(
            "GET",
            "/api/v1/namespaces/ns",
            {},
            ("get", "", "namespaces", "", "ns", "ns"),
            id="a-namespace-object",
        ),
        pytest.param(
            "GET",
            "/apis/custom.metrics.k8s.io/v1beta1/nodes/*/health_metric",
            {},
            ("get", "custom.metrics.k8s.io", "nodes", "health_metric", "", "*"),
            id="a-custom-metric-of-every-node",
        ),
        pytest.param(
            "PUT",
            "/api/v1/namespaces/ns/finalize",
            {},
            ("update", "", "namespaces", "finalize", "ns", "ns"),
            id="a-namespace-subresource",
        ),
    ],
)
def test_request_attributes_are_computed_as_the_api_server_does(
    method: str, path: str, query: dict[str, str], expected: tuple[str, ...]
) -> None:
    attributes = request_attributes(method, path, query)
    assert attributes.resource_request
    found = (
        attributes.verb,
        attributes.group,
        attributes.resource,
        attributes.subresource,
        attributes.namespace,
        attributes.name,
    )
    assert found == expected


@pytest.mark.parametrize("path", ["/version", "/api", "/apis/policy/v1", "/metrics"])
def test_a_path_naming_no_resource_is_a_non_resource_request(path: str) -> None:
    assert request_attributes("GET", path, {}) == RequestAttributes(verb="get", path=path)


def test_the_test_itself_is_never_refused(kube_emulator: KubeEmulator) -> None:
    without_token = k8s.CoreV1Api(
        k8s.ApiClient(k8s.Configuration(host=kube_emulator.url))
    ).list_node()
    assert without_token.items == []
    assert k8s.CoreV1Api(kube_emulator.api_client()).list_node().items == []
    assert kube_emulator.denials == []


def test_an_unknown_token_or_a_missing_service_account_is_unauthorized(
    kube_emulator: KubeEmulator,
) -> None:
    for token in ("made-up", kube_emulator.token_for(NAMESPACE, ACCOUNT)):
        core = k8s.CoreV1Api(kube_emulator.api_client(token=token))
        assert refusal(core.list_node, code=401)["reason"] == "Unauthorized"


def test_a_refusal_is_the_api_servers_forbidden_status(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    kube_emulator.create("pods", pod("x"))
    labels = {"metadata": {"labels": {"a": "b"}}}
    status = refusal(functools.partial(robot.patch_namespaced_pod, "x", "default", labels))
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'pods "x" is forbidden: User "{USER}" cannot patch resource "pods" in API '
        'group "" in the namespace "default"',
        "reason": "Forbidden",
        "details": {"name": "x", "kind": "pods"},
        "code": 403,
    }
    assert [str(d) for d in kube_emulator.denials] == [
        f"PATCH /api/v1/namespaces/default/pods/x: {status['message']}"
    ]


def test_a_cluster_scoped_refusal_says_so_and_names_the_group(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    assert refusal(robot.list_node)["message"] == (
        f'nodes is forbidden: User "{USER}" cannot list resource "nodes" in API group "" at '
        "the cluster scope"
    )
    budgets = k8s.PolicyV1Api(robot.api_client)
    watch = functools.partial(
        budgets.list_pod_disruption_budget_for_all_namespaces, watch=True, _preload_content=False
    )
    status = refusal(watch)
    assert status["message"] == (
        f'poddisruptionbudgets.policy is forbidden: User "{USER}" cannot watch resource '
        '"poddisruptionbudgets" in API group "policy" at the cluster scope'
    )
    assert status["details"] == {"group": "policy", "kind": "poddisruptionbudgets"}


def test_a_resource_does_not_grant_its_subresources(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    kube_emulator.apply(
        [
            role("ClusterRole", "pods", rule([""], ["pods"], ["get", "create"])),
            binding("ClusterRoleBinding", "ClusterRole", "pods"),
        ]
    )
    kube_emulator.create("pods", pod("x"))
    robot.read_namespaced_pod("x", "default")  # allowed
    eviction = k8s.V1Eviction(metadata=k8s.V1ObjectMeta(name="x", namespace="default"))
    evict = functools.partial(robot.create_namespaced_pod_eviction, "x", "default", eviction)
    assert refusal(evict)["message"] == (
        f'pods "x" is forbidden: User "{USER}" cannot create resource "pods/eviction" in API '
        'group "" in the namespace "default"'
    )


def test_a_cluster_role_binding_grants_everywhere(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    kube_emulator.apply(
        [
            role("ClusterRole", "reader", rule([""], ["pods"], ["list"])),
            binding("ClusterRoleBinding", "ClusterRole", "reader"),
        ]
    )
    assert robot.list_pod_for_all_namespaces().items == []
    assert robot.list_namespaced_pod("anywhere").items == []


@pytest.mark.parametrize("role_kind", ["Role", "ClusterRole"])
def test_a_role_binding_grants_only_in_its_namespace(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api, role_kind: str
) -> None:
    namespace = "team" if role_kind == "Role" else ""
    kube_emulator.apply(
        [
            role(role_kind, "reader", rule([""], ["pods"], ["list"]), namespace=namespace),
            binding("RoleBinding", role_kind, "reader", namespace="team"),
        ]
    )
    assert robot.list_namespaced_pod("team").items == []
    refusal(functools.partial(robot.list_namespaced_pod, "other"))
    refusal(robot.list_pod_for_all_namespaces)


def test_wildcards_subresource_wildcards_and_resource_names_match_as_rbac_does(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    kube_emulator.apply(
        [
            role(
                "ClusterRole",
                "mixed",
                rule(["*"], ["*/status"], ["patch"]),
                rule([""], ["nodes"], ["*"], resourceNames=["n1"]),
            ),
            binding("ClusterRoleBinding", "ClusterRole", "mixed"),
        ]
    )
    kube_emulator.create("nodes", {"metadata": {"name": "n1"}})
    kube_emulator.create("nodes", {"metadata": {"name": "n2"}})
    kube_emulator.create("pods", pod("x"))
    robot.read_node("n1")  # allowed
    robot.patch_namespaced_pod_status("x", "default", {"status": {"phase": "Running"}})
    refusal(functools.partial(robot.read_node, "n2"))
    refusal(robot.list_node)
    assert {str(a) for a in kube_emulator.accesses(NAMESPACE, ACCOUNT)} == {
        "get nodes",
        "patch pods/status",
    }
    assert kube_emulator.grants(NAMESPACE, ACCOUNT) == {
        Access("patch", "*", "*/status"),
        Access("*", "", "nodes"),
    }


def test_a_binding_to_a_missing_role_is_named_in_the_refusal(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    kube_emulator.apply([binding("ClusterRoleBinding", "ClusterRole", "ghost")])
    assert refusal(robot.list_node)["message"].endswith(
        ': RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found'
    )


def test_roles_are_read_on_every_request_so_changes_apply_at_once(
    kube_emulator: KubeEmulator, robot: k8s.CoreV1Api
) -> None:
    admin = k8s.RbacAuthorizationV1Api(kube_emulator.api_client())
    admin.create_cluster_role(
        k8s.V1ClusterRole(
            metadata=k8s.V1ObjectMeta(name="nodes"),
            rules=[k8s.V1PolicyRule(api_groups=[""], resources=["nodes"], verbs=["list"])],
        )
    )
    refusal(robot.list_node)
    admin.create_cluster_role_binding(
        k8s.V1ClusterRoleBinding(
            metadata=k8s.V1ObjectMeta(name="nodes"),
            role_ref=k8s.V1RoleRef(api_group=RBAC_GROUP, kind="ClusterRole", name="nodes"),
            subjects=[k8s.RbacV1Subject(kind="ServiceAccount", name=ACCOUNT, namespace=NAMESPACE)],
        )
    )
    assert robot.list_node().items == []
    admin.delete_cluster_role_binding("nodes")
    refusal(robot.list_node)
    assert len(kube_emulator.denials) == 2
    assert kube_emulator.accesses(NAMESPACE, ACCOUNT) == {Access("list", "", "nodes")}


@pytest.mark.usefixtures("robot")
def test_discovery_is_open_to_every_authenticated_user(kube_emulator: KubeEmulator) -> None:
    headers = {"Authorization": f"Bearer {kube_emulator.token_for(NAMESPACE, ACCOUNT)}"}
    with httpx.Client(base_url=kube_emulator.url, headers=headers) as client:
        for path in ("/version", "/apis/policy/v1"):
            assert client.get(path).status_code == 404, path  # allowed, then not served here
        refused = client.get("/metrics")
    assert refused.status_code == 403
    assert refused.json()["message"] == f'forbidden: User "{USER}" cannot get path "/metrics"'


METRIC_READ = "/apis/custom.metrics.k8s.io/v1beta1/nodes/*/health_metric"


@pytest.mark.parametrize(
    ("resources", "allowed"),
    [
        pytest.param(["nodes/*"], False, id="nodes/*-matches-nothing"),
        pytest.param(["nodes"], False, id="a-resource-not-its-subresources"),
        pytest.param(["*/cpu_pressure"], False, id="another-metric"),
        pytest.param(["*"], True, id="*"),
        pytest.param(["nodes/health_metric"], True, id="exact"),
        pytest.param(["*/health_metric"], True, id="*/metric"),
    ],
)
@pytest.mark.usefixtures("robot")
def test_a_custom_metric_read_is_authorized_as_a_subresource_of_nodes(
    kube_emulator: KubeEmulator, resources: list[str], allowed: bool
) -> None:
    kube_emulator.apply(
        [
            role("ClusterRole", "metrics", rule(["custom.metrics.k8s.io"], resources, ["get"])),
            binding("ClusterRoleBinding", "ClusterRole", "metrics"),
        ]
    )
    kube_emulator.set_custom_metric("health_metric", {"n1": 2})
    headers = {"Authorization": f"Bearer {kube_emulator.token_for(NAMESPACE, ACCOUNT)}"}
    with httpx.Client(base_url=kube_emulator.url, headers=headers) as client:
        answer = client.get(METRIC_READ)
    if allowed:
        assert answer.status_code == 200, answer.text
        assert [i["value"] for i in answer.json()["items"]] == ["2"]
        return
    assert answer.status_code == 403
    assert answer.json()["message"] == (
        f'nodes.custom.metrics.k8s.io "*" is forbidden: User "{USER}" cannot get resource '
        '"nodes/health_metric" in API group "custom.metrics.k8s.io" at the cluster scope'
    )


def test_a_wildcard_grant_covers_the_calls_it_allows() -> None:
    metric = Access("get", "custom.metrics.k8s.io", "nodes/health_metric")
    assert Access("get", "custom.metrics.k8s.io", "*").covers(metric)
    assert Access("get", "custom.metrics.k8s.io", "*/health_metric").covers(metric)
    assert not Access("get", "custom.metrics.k8s.io", "nodes/*").covers(metric)
    assert not Access("list", "custom.metrics.k8s.io", "*").covers(metric)
    assert not Access("get", "", "*").covers(metric)
    assert Access("*", "*", "pods").covers(Access("list", "", "pods"))
