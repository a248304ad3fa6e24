"""A Kubernetes API server emulator for tests: real HTTP on 127.0.0.1, the real REST protocol.

The official `kubernetes` client talks to it unchanged (no monkeypatching): point a
`kubernetes.client.Configuration(host=emulator.url)` at it, or take `emulator.api_client()`.

Served resources (a table in `resources.py`): core/v1 nodes, pods (+ `eviction`, `status`),
events, namespaces, serviceaccounts, persistentvolumeclaims; policy/v1 poddisruptionbudgets;
coordination.k8s.io/v1 leases; telemetry.intel.com/v1alpha1 taspolicies (+ `status`, + the
cluster-wide list); rbac.authorization.k8s.io/v1 roles, clusterroles, rolebindings,
clusterrolebindings; scheduling.k8s.io/v1 priorityclasses; apps/v1 deployments and daemonsets,
core/v1 configmaps, secrets and services, networking.k8s.io/v1 networkpolicies,
apiextensions.k8s.io/v1 customresourcedefinitions
(stored as given: nothing runs them); admissionregistration.k8s.io/v1
validatingadmissionpolicies and validatingadmissionpolicybindings (enforced: below);
metrics.k8s.io/v1beta1 nodes and pods (NodeMetrics and PodMetrics, stored as given); and the
custom metrics API (custom.metrics.k8s.io/v1beta1 `nodes/*/<metric>`, as prometheus-adapter
answers it: `custom_metrics.py`), whose values a test sets.

Authentication and RBAC (`rbac.py`): a request with a ServiceAccount's token is authorized
against the stored roles and bindings as the API server does, and refused with its 403 Status
and message; a request without a token or with `admin_token` (the default of `api_client()`,
`configuration()` and `write_kubeconfig()`) is the test's own and is never refused.

Admission (`admission.py`): every update (PUT, PATCH) a ServiceAccount sends passes the stored
ValidatingAdmissionPolicies and their bindings as on the API server (their CEL evaluated by
cel-python), and a denial is the API server's Status, recorded in `denials` like RBAC's.

Protocol: list with `metadata.resourceVersion`, `labelSelector`, `fieldSelector`; watch
(`?watch=true&resourceVersion=N`, chunked newline-delimited ADDED / MODIFIED / DELETED /
BOOKMARK events, an ERROR event with a 410 Status when N is older than the kept history);
create (POST, 409 AlreadyExists), replace (PUT, 409 on a stale resourceVersion), merge and
strategic-merge patch, JSON patch with `test` (422 when it fails), delete; the `status`
subresource; evictions that honour PodDisruptionBudgets (`status.disruptionsAllowed`, 429
when none is left, decremented on success). Errors are `Status` objects. With
`KubeEmulator(namespace_lifecycle=True)` an API client's create in a namespace that does not
exist is refused (404 `namespaces "x" not found`), as the NamespaceLifecycle admission does.

Test API::

    with KubeEmulator() as api:                      # or api = KubeEmulator().start(); api.stop()
        api.create("nodes", {"metadata": {"name": "n1"}})
        api.create("pods", pod_dict, namespace="default")
        client = api.api_client()                    # kubernetes.client.ApiClient
        ...
        api.get("nodes", "n1")                       # the stored dict, or None
        api.objects("pods", namespace="default")     # stored dicts, sorted
        api.merge("nodes", "n1", {"metadata": {"labels": {"a": "b"}}})  # as another client
        api.merge("taspolicies", "p", {"status": {...}}, namespace="ns", status=True)
        api.delete("pods", "p1", namespace="default")
        api.requests / api.writes() / api.clear_requests()   # RecordedRequest log
        api.set_history_window(2); api.compact()     # make resume points expire (410)
        api.fail_next(r"/nodes", status=503, times=2)  # inject errors
        api.break_watches()                          # end every open watch stream
        api.bookmark_interval = 0.2                  # seconds between BOOKMARKs (if asked)

        api.apply(yaml.safe_load_all(manifest))      # Namespaces, ServiceAccounts, RBAC, ...
        token = api.token_for("ns", "sa")            # a ServiceAccount's bearer token
        api.api_client(token=token); api.write_kubeconfig(path, token=token)
        api.denials                                  # every refused request (Denial)
        api.accesses("ns", "sa")                     # {Access(verb, group, resource)} allowed
        api.grants("ns", "sa")                       # {Access(...)} its roles grant
        api.set_custom_metric("health_metric", {"n1": 2})  # served by custom.metrics.k8s.io

Resource names in the test API are the plurals of the table ("nodes", "pods", "events",
"poddisruptionbudgets", "leases", "taspolicies", "namespaces", "serviceaccounts", "roles",
"clusterroles", "rolebindings", "clusterrolebindings", "priorityclasses",
"persistentvolumeclaims", "deployments", "daemonsets", "configmaps", "secrets", "services",
"networkpolicies",
"customresourcedefinitions", "validatingadmissionpolicies", "validatingadmissionpolicybindings"),
except where the plural is taken: the metrics.k8s.io resources are "nodemetrics" and
"podmetrics".
"""

from tests.k8s_emulator.rbac import Access
from tests.k8s_emulator.resources import RESOURCES, ResourceType
from tests.k8s_emulator.server import Denial, KubeEmulator, RecordedRequest
from tests.k8s_emulator.store import ApiError, ObjectStore

__all__ = [
    "RESOURCES",
    "Access",
    "ApiError",
    "Denial",
    "KubeEmulator",
    "ObjectStore",
    "RecordedRequest",
    "ResourceType",
]
