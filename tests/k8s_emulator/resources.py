"""The table of resources the emulator serves, and the parsing of their REST paths.

One row per resource; everything else (list, get, create, replace, patch, delete, watch, the
`status` subresource) is generic over the table. Adding a resource is adding a row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ResourceType:
    prefix: str  # "/api/v1" or "/apis/<group>/<version>"
    plural: str
    kind: str
    namespaced: bool
    has_status: bool = False
    #: The test API's name for it, where its plural is taken (metrics.k8s.io "nodes").
    name: str = ""

    @property
    def key(self) -> str:
        """How tests and the store name the resource: `name`, else its plural."""
        return self.name or self.plural

    @property
    def api_version(self) -> str:
        return self.prefix.removeprefix("/api/").removeprefix("/apis/")

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("/api/v1", "nodes", "Node", namespaced=False, has_status=True),
    ResourceType("/api/v1", "pods", "Pod", namespaced=True, has_status=True),
    ResourceType("/api/v1", "events", "Event", namespaced=True),
    ResourceType("/api/v1", "namespaces", "Namespace", namespaced=False, has_status=True),
    ResourceType(
        "/apis/policy/v1", "poddisruptionbudgets", "PodDisruptionBudget", True, has_status=True
    ),
    ResourceType("/apis/coordination.k8s.io/v1", "leases", "Lease", namespaced=True),
    ResourceType(
        "/apis/telemetry.intel.com/v1alpha1", "taspolicies", "TASPolicy", True, has_status=True
    ),
    # Identities and RBAC: what the authorizer (`rbac.py`) reads on every request.
    ResourceType("/api/v1", "serviceaccounts", "ServiceAccount", namespaced=True),
    ResourceType("/apis/rbac.authorization.k8s.io/v1", "roles", "Role", namespaced=True),
    ResourceType("/apis/rbac.authorization.k8s.io/v1", "clusterroles", "ClusterRole", False),
    ResourceType("/apis/rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding", True),
    ResourceType(
        "/apis/rbac.authorization.k8s.io/v1", "clusterrolebindings", "ClusterRoleBinding", False
    ),
    # Validating admission policies, evaluated on every update a ServiceAccount sends
    # (`admission.py`).
    ResourceType(
        "/apis/admissionregistration.k8s.io/v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        False,
        has_status=True,
    ),
    ResourceType(
        "/apis/admissionregistration.k8s.io/v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        False,
    ),
    # What the descheduler reads when its policy asks: priority thresholds by class name,
    # protected storage classes, namespace label selectors, the metrics server's usage.
    ResourceType("/apis/scheduling.k8s.io/v1", "priorityclasses", "PriorityClass", False),
    ResourceType("/api/v1", "persistentvolumeclaims", "PersistentVolumeClaim", True),
    ResourceType("/apis/metrics.k8s.io/v1beta1", "nodes", "NodeMetrics", False, name="nodemetrics"),
    ResourceType("/apis/metrics.k8s.io/v1beta1", "pods", "PodMetrics", True, name="podmetrics"),
    # The rest of what `kubectl apply` sends from deploy/ (stored as given; nothing runs them),
    # so that applying a manifest in the wrong order fails as it does on a cluster.
    ResourceType("/apis/apps/v1", "deployments", "Deployment", True, has_status=True),
    ResourceType("/apis/apps/v1", "daemonsets", "DaemonSet", True, has_status=True),
    ResourceType("/api/v1", "configmaps", "ConfigMap", namespaced=True),
    ResourceType("/api/v1", "secrets", "Secret", namespaced=True),
    ResourceType("/api/v1", "services", "Service", namespaced=True, has_status=True),
    ResourceType("/apis/networking.k8s.io/v1", "networkpolicies", "NetworkPolicy", True),
    ResourceType(
        "/apis/apiextensions.k8s.io/v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        has_status=True,
    ),
)

BY_PLURAL = {r.key: r for r in RESOURCES}
BY_PATH = {(r.prefix, r.plural): r for r in RESOURCES}
BY_KIND = {(r.api_version, r.kind): r for r in RESOURCES}


@dataclass(frozen=True, slots=True)
class Target:
    """What a request path names: a resource, maybe a namespace, a name and a subresource."""

    resource: ResourceType
    namespace: str | None  # None: across all namespaces (or a cluster-scoped resource)
    name: str | None
    subresource: str | None


def parse_path(path: str) -> Target | None:
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        prefix, rest = "/api/v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        prefix, rest = f"/apis/{parts[1]}/{parts[2]}", parts[3:]
    else:
        return None
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        return None
    resource = BY_PATH.get((prefix, rest[0]))
    if resource is None:
        return None
    if namespace is not None and not resource.namespaced:
        return None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    if resource.namespaced and name is not None and namespace is None:
        return None
    return Target(resource, namespace, name, subresource)
