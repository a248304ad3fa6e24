"""Authentication and RBAC authorization, as the API server does them, for the emulator.

Authentication: a request's bearer token names its user. `KubeEmulator.token_for(namespace,
name)` issues one per ServiceAccount (user `system:serviceaccount:<namespace>:<name>`, groups
`system:serviceaccounts`, `system:serviceaccounts:<namespace>`, `system:authenticated`); the
ServiceAccount must exist when the token is used, else 401, as with real tokens. A request with
no token, or with the admin token the emulator's own kubeconfig carries, is the test itself:
it is not authorized at all, so tests that set up and inspect the cluster see no RBAC.

Authorization: the request's attributes are computed from its method, path and query the way
the API server's `RequestInfoFactory` does (verb get/list/watch/create/update/patch/delete/
deletecollection, API group, resource, subresource, namespace, name), then checked against the
Roles, ClusterRoles, RoleBindings and ClusterRoleBindings stored in the emulator (served under
rbac.authorization.k8s.io/v1, so they change while a test runs, as they do on a cluster). A
ClusterRoleBinding grants everywhere; a RoleBinding, to a Role or a ClusterRole, only in its own
namespace. Rules match as `rbac/validation.RuleAllows` does: verbs, apiGroups and resources with
`*`, `*/subresource`, and resourceNames. A refusal is the API server's 403 `Status`, with its
exact message (`responsewriters.forbiddenMessage` and `errors.NewForbidden`).

The `*` of `/apis/custom.metrics.k8s.io/v1beta1/nodes/*/<metric>` is a name like any other:
the request is resource `nodes`, subresource `<metric>`, so a rule on `nodes/*` does not match it
(the custom metrics API itself is `custom_metrics.py`).

Only the RBAC authorizer is modelled: no Node authorizer and no default roles, except that any
authenticated user may read the discovery paths (`system:discovery`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tests.k8s_emulator.store import ApiError

#: The verb of a request by HTTP method, before a request without a name becomes list/watch
#: (GET) or deletecollection (DELETE).
_VERBS = {
    "GET": "get",
    "HEAD": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
#: Subresources of a namespace object: `/api/v1/namespaces/<name>/status` is not a namespace.
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
#: Paths every authenticated user may GET (the `system:discovery` ClusterRole): these, and
#: everything under the prefixes.
_DISCOVERY_PATHS = frozenset({"/api", "/apis", "/healthz", "/livez", "/readyz", "/version"})
_DISCOVERY_PREFIXES = ("/api/", "/apis/", "/openapi/", "/version/")
RBAC_GROUP = "rbac.authorization.k8s.io"


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    account: tuple[str, str] | None = None  # (namespace, name) of a ServiceAccount

    @classmethod
    def service_account(cls, namespace: str, name: str) -> User:
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
        return cls(
            f"system:serviceaccount:{namespace}:{name}",
            (*groups, "system:authenticated"),
            (namespace, name),
        )


@dataclass(frozen=True, slots=True, order=True)
class Access:
    """One kind of API call: a verb on a resource (with its subresource) of an API group."""

    verb: str
    group: str
    resource: str  # "pods", or "pods/eviction" with a subresource

    def __str__(self) -> str:
        where = f"{self.resource}.{self.group}" if self.group else self.resource
        return f"{self.verb} {where}"

    def covers(self, used: Access) -> bool:
        """Whether this grant (wildcards and all) allows the call `used`, as a rule would."""
        resource, _, subresource = used.resource.partition("/")
        attributes = RequestAttributes(
            used.verb, "", True, used.group, resource, subresource, namespace="", name=""
        )
        rule = {"verbs": [self.verb], "apiGroups": [self.group], "resources": [self.resource]}
        return rule_allows(rule, attributes)


@dataclass(frozen=True, slots=True)
class RequestAttributes:
    """What a request asks to do, as the authorizer sees it."""

    verb: str
    path: str
    resource_request: bool = False
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    @property
    def access(self) -> Access:
        return Access(self.verb, self.group, self.combined_resource)


def request_attributes(method: str, path: str, query: Mapping[str, str]) -> RequestAttributes:
    """The attributes of a request, as the API server's `RequestInfoFactory` computes them."""
    verb = _VERBS.get(method.upper(), method.lower())
    parts = [p for p in path.strip("/").split("/") if p]
    group, rest = "", []
    if parts[:1] == ["api"] and len(parts) >= 2:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, rest = parts[1], parts[3:]
    if not rest:  # /api, /apis/<group>/<version>, /version: discovery and the like
        return RequestAttributes(verb=method.lower(), path=path)
    if rest[:1] == ["watch"]:  # the deprecated /watch/ path prefix
        verb, rest = "watch", rest[1:]
    namespace = ""
    if rest[:1] == ["namespaces"] and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name and verb == "get":
        verb = "watch" if query.get("watch") in ("true", "1") else "list"
        name = _exact_name(query.get("fieldSelector", ""))
    if not name and verb == "delete":
        verb = "deletecollection"
    return RequestAttributes(
        verb=verb,
        path=path,
        resource_request=True,
        group=group,
        resource=resource,
        subresource=subresource,
        namespace=namespace,
        name=name,
    )


def _exact_name(field_selector: str) -> str:
    """A list or watch of `metadata.name=<x>` is a request for the object named x."""
    for term in field_selector.split(","):
        key, _, value = term.partition("=")
        if key.strip() == "metadata.name":  # `metadata.name!=x` leaves `metadata.name!`
            return value.removeprefix("=").strip()
    return ""


# ---------------------------------------------------------------- rules


def rule_allows(rule: Mapping[str, Any], attributes: RequestAttributes) -> bool:
    """`rbac/validation.RuleAllows`: verbs, apiGroups, resources and resourceNames all match."""
    if not attributes.resource_request:
        urls = rule.get("nonResourceURLs") or []
        return _has(rule.get("verbs"), attributes.verb) and any(
            url == "*"
            or url == attributes.path
            or (url.endswith("*") and attributes.path.startswith(url[:-1]))
            for url in urls
        )
    names = rule.get("resourceNames") or []
    return (
        _has(rule.get("verbs"), attributes.verb)
        and _has(rule.get("apiGroups"), attributes.group)
        and _resource_matches(rule.get("resources") or [], attributes)
        and (not names or attributes.name in names)
    )


def _has(values: Iterable[str] | None, wanted: str) -> bool:
    return any(value in ("*", wanted) for value in values or ())


def _resource_matches(resources: Iterable[str], attributes: RequestAttributes) -> bool:
    for resource in resources:
        if resource in ("*", attributes.combined_resource):
            return True
        if attributes.subresource and resource == f"*/{attributes.subresource}":
            return True
    return False


# ---------------------------------------------------------------- bindings


#: Reads a stored object: (plural, namespace or None, name) -> the object, or None.
Lookup = Callable[[str, str | None, str], Mapping[str, Any] | None]


@dataclass(frozen=True, slots=True)
class BoundRole:
    """A role a subject holds, and where: `namespace` is None for a ClusterRoleBinding."""

    binding: str
    rules: tuple[Mapping[str, Any], ...]
    namespace: str | None


def subject_matches(subject: Mapping[str, Any], user: User, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user.name == f"system:serviceaccount:{namespace}:{name}"
    if kind == "User":
        return user.name == name
    if kind == "Group":
        return name in user.groups
    return False


def bound_roles(
    user: User,
    *,
    cluster_bindings: Iterable[Mapping[str, Any]],
    namespace_bindings: Iterable[Mapping[str, Any]],
    role: Lookup,
) -> Iterator[BoundRole | str]:
    """The roles bound to `user`, or, for a binding whose role is missing, the RBAC error."""
    for binding in cluster_bindings:
        yield from _bound(binding, user, None, role)
    for binding in namespace_bindings:
        namespace = str((binding.get("metadata") or {}).get("namespace") or "")
        yield from _bound(binding, user, namespace, role)


def _bound(
    binding: Mapping[str, Any], user: User, namespace: str | None, role: Lookup
) -> Iterator[BoundRole | str]:
    subjects = binding.get("subjects") or []
    if not any(subject_matches(s, user, namespace or "") for s in subjects):
        return
    ref = binding.get("roleRef") or {}
    kind, name = ref.get("kind"), str(ref.get("name") or "")
    if kind == "ClusterRole":
        found = role("clusterroles", None, name)
        missing = f'clusterrole.{RBAC_GROUP} "{name}" not found'
    elif kind == "Role" and namespace is not None:
        found = role("roles", namespace, name)
        missing = f'role.{RBAC_GROUP} "{name}" not found'
    else:
        return
    binding_name = str((binding.get("metadata") or {}).get("name") or "")
    if found is None:
        yield missing
        return
    yield BoundRole(binding_name, tuple(found.get("rules") or ()), namespace)


def authorize(
    user: User, attributes: RequestAttributes, roles: Iterable[BoundRole | str]
) -> tuple[bool, str]:
    """(allowed, reason); the reason lists missing roles, as the RBAC authorizer's does."""
    path = attributes.path
    discovery = path in _DISCOVERY_PATHS or path.startswith(_DISCOVERY_PREFIXES)
    if discovery and attributes.verb == "get" and not attributes.resource_request:
        return True, ""
    errors: list[str] = []
    for bound in roles:
        if isinstance(bound, str):
            errors.append(bound)
            continue
        # A namespaced grant covers requests in its namespace only, never the cluster scope.
        if bound.namespace is not None and bound.namespace != attributes.namespace:
            continue
        if any(rule_allows(rule, attributes) for rule in bound.rules):
            return True, ""
    if not errors:
        return False, ""
    # utilerrors.NewAggregate: one error as it is, several in brackets.
    return False, "RBAC: " + (errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")


def granted(roles: Iterable[BoundRole | str]) -> set[Access]:
    """Every (verb, group, resource) the roles grant, anywhere (wildcards stay `*`)."""
    found: set[Access] = set()
    for bound in roles:
        if isinstance(bound, str):
            continue
        for rule in bound.rules:
            for verb in rule.get("verbs") or ():
                for group in rule.get("apiGroups") or ():
                    for resource in rule.get("resources") or ():
                        found.add(Access(verb, group, resource))
    return found


# ---------------------------------------------------------------- answers


def _go_quote(text: str) -> str:
    """Go's %q for the strings that occur here."""
    return json.dumps(text, ensure_ascii=False)


def forbidden(user: User, attributes: RequestAttributes, reason: str = "") -> ApiError:
    """The API server's 403: `responsewriters.Forbidden` around `errors.NewForbidden`."""
    who = _go_quote(user.name)
    verb = attributes.verb
    if not attributes.resource_request:
        message = f"User {who} cannot {verb} path {_go_quote(attributes.path)}"
    else:
        resource = _go_quote(attributes.combined_resource)
        group = _go_quote(attributes.group)
        scope = (
            f"in the namespace {_go_quote(attributes.namespace)}"
            if attributes.namespace
            else "at the cluster scope"
        )
        message = f"User {who} cannot {verb} resource {resource} in API group {group} {scope}"
    if reason:
        message = f"{message}: {reason}"
    details: dict[str, Any] = {}
    if not attributes.resource_request:
        return ApiError(403, "Forbidden", f"forbidden: {message}", details)
    qualified = attributes.resource + (f".{attributes.group}" if attributes.group else "")
    if attributes.name:
        details["name"] = attributes.name
        subject = f"{qualified} {_go_quote(attributes.name)}"
    else:
        subject = qualified
    if attributes.group:
        details["group"] = attributes.group
    details["kind"] = attributes.resource
    return ApiError(403, "Forbidden", f"{subject} is forbidden: {message}", details)


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")
