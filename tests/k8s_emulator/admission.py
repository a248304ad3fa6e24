"""Validating admission policies, evaluated on updates as the API server evaluates them.

The emulator enforces RBAC from the shipped manifests (`rbac.py`); it enforces the shipped
ValidatingAdmissionPolicies the same way, so a test that runs a component as its
ServiceAccount also shows that the policies admit everything the component writes. The model is
the API server's `validating` admission plugin (k8s.io/apiserver/pkg/admission/plugin/policy/
validating: `dispatcher.go`, `validator.go`; the request and its matching in
`plugin/cel` and `webhook/predicates/rules`):

- Every update (PUT or PATCH, of an object or of a subresource) that a ServiceAccount sends is
  admitted here, after the patch is applied and before it is stored; the test's own requests
  (no token, or the admin token) are neither authorized nor admitted.
- A stored ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1) applies when a rule of
  its `matchConstraints.resourceRules` matches (operations, apiGroups, apiVersions, resources
  with `*`, `pods/*` (which includes pods themselves), `*/status` and `*/*`, resourceNames,
  scope) and no rule of `excludeResourceRules` does, through each binding naming it
  (`policyName`) whose `matchResources.resourceRules` match, when it has any.
- Its `matchConditions` then decide: one false, the policy is skipped; all true, it is
  evaluated; an error (and none false) is a failure. Its `variables` are evaluated in order,
  each seeing the ones before it; one that fails fails only the expressions that read it.
  Its `validations` run in order, and the first that is not true denies, with its
  `messageExpression` (a one-line string), else its `message`, else `failed expression: <expr>`,
  and its `reason` (Invalid, 422, by default). A failure denies under `failurePolicy: Fail` (the
  default) and is ignored under `Ignore`. A denial refuses the request when the binding's
  `validationActions` hold `Deny`; `Warn` and `Audit` leave no trace here.
- The CEL inputs are the API server's: `object` and `oldObject` as they would be stored and as
  they are, and `request`, an admission/v1 AdmissionRequest as `runtime.
  DefaultUnstructuredConverter` renders it: its empty `omitempty` fields (`subResource` of an
  update of the object itself, `namespace` of a cluster-scoped one) are absent, so reading them
  without `has()` fails on a cluster and fails here.
- The refusal is the API server's Status: `<resource> "<name>" is forbidden:
  ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied request: <message>`, with
  that text again in `details.causes`.

The CEL is cel-python's (`celpy`): the standard library and macros of the CEL specification,
with RE2 regular expressions. Kubernetes adds extension libraries (strings such as `join` and
`split`, lists, quantities, the authorizer, optional values `?.`): an expression using one fails
here (and so denies), so a policy that needs them fails its tests instead of passing untested.
cel-python does not type-check; the API server type-checks `request` but declares `object` and
`oldObject` dynamic, which is how cel-python treats every input.

Not modelled, and refused with a 500 that names the field rather than guessed: `paramKind` and
`paramRef`, `auditAnnotations`, non-empty `namespaceSelector` and `objectSelector`. The server
admits no create, delete or connect (`refusal` evaluates a CREATE a test builds, with a null
`oldObject`, as the API server does). The policies are read from the store on every admitted
update (a sorted list, fine for the clusters tests build; the scale benchmark's
requests are the test's own and skip admission).
"""

from __future__ import annotations

import functools
import threading
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import celpy
from celpy import celtypes
from celpy.adapter import json_to_cel
from celpy.evaluation import CELEvalError

from tests.k8s_emulator.rbac import User
from tests.k8s_emulator.resources import ResourceType
from tests.k8s_emulator.store import ApiError, Object

#: The test API's names of the two kinds (tests/k8s_emulator/resources.py).
POLICIES = "validatingadmissionpolicies"
BINDINGS = "validatingadmissionpolicybindings"

#: The HTTP code of a denial's reason (`reasonToCode` in dispatcher.go).
_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}
#: A messageExpression's result longer than this is dropped (celconfig).
_MAX_MESSAGE_BYTES = 5 * 1024


@dataclass(frozen=True, slots=True)
class Update:
    """One update request, as admission sees it."""

    resource: ResourceType
    name: str
    user: User
    namespace: str = ""
    subresource: str = ""
    #: UPDATE, or CREATE (evaluated by `refusal` for the admission tests; the server admits
    #: updates only, see the module docstring). A create has no `oldObject` (CEL null).
    operation: str = "UPDATE"

    @property
    def group(self) -> str:
        return self.resource.api_version.rpartition("/")[0]

    def request(self) -> Object:
        """The CEL `request`: an admission/v1 AdmissionRequest, as the API server converts it
        (`CreateAdmissionRequest`, then `ToUnstructured`: empty `omitempty` fields absent)."""
        group, _, version = self.resource.api_version.rpartition("/")
        kind = {"group": group, "version": version, "kind": self.resource.kind}
        resource = {"group": group, "version": version, "resource": self.resource.plural}
        user_info: Object = {"username": self.user.name} if self.user.name else {}
        if self.user.groups:
            user_info["groups"] = list(self.user.groups)
        request: Object = {
            "uid": str(uuid.uuid4()),
            "kind": kind,
            "resource": resource,
            "requestKind": dict(kind),
            "requestResource": dict(resource),
            "name": self.name,
            "operation": self.operation,
            "userInfo": user_info,
            "dryRun": False,
        }
        if self.subresource:
            request["subResource"] = request["requestSubResource"] = self.subresource
        if self.namespace:
            request["namespace"] = self.namespace
        return request


@dataclass(frozen=True, slots=True)
class Refusal:
    """A policy's denial: which policy and binding, its message and its reason."""

    policy: str
    binding: str
    message: str
    reason: str = "Invalid"

    def error(self, update: Update) -> ApiError:
        """The API server's Status (`admission.NewForbidden` with the denial's reason)."""
        text = (
            f"ValidatingAdmissionPolicy '{self.policy}' with binding '{self.binding}' "
            f"denied request: {self.message}"
        )
        qualified = update.resource.plural + (f".{update.group}" if update.group else "")
        details: Object = {"name": update.name}
        if update.group:
            details["group"] = update.group
        details["kind"] = update.resource.plural
        details["causes"] = [{"message": text}]
        return ApiError(
            _CODES.get(self.reason, 422),
            self.reason,
            f'{qualified} "{update.name}" is forbidden: {text}',
            details,
        )


def admit_update(
    *,
    policies: Iterable[Object],
    bindings: Iterable[Object],
    update: Update,
    obj: Object,
    old: Object,
) -> None:
    """Refuse the update (raise the API server's ApiError) when a policy denies it."""
    found = refusal(policies=policies, bindings=bindings, update=update, obj=obj, old=old)
    if found is not None:
        raise found.error(update)


def refusal(
    *,
    policies: Iterable[Object],
    bindings: Iterable[Object],
    update: Update,
    obj: Object,
    old: Object | None,
) -> Refusal | None:
    """The first denial among the policies (by name) and their bindings (by name), if any."""
    bound: dict[str, list[Object]] = {}
    for binding in sorted(bindings, key=_name):
        spec = binding.get("spec") or {}
        _refuse_unmodelled(binding, spec, ("paramRef",))
        bound.setdefault(str(spec.get("policyName", "")), []).append(binding)
    inputs: _Inputs | None = None
    for policy in sorted(policies, key=_name):
        spec = policy.get("spec") or {}
        _refuse_unmodelled(policy, spec, ("paramKind", "auditAnnotations"))
        if not _matches(policy, spec.get("matchConstraints") or {}, update, required=True):
            continue
        for binding in bound.get(_name(policy), []):
            binding_spec = binding.get("spec") or {}
            constraints = binding_spec.get("matchResources") or {}
            if not _matches(binding, constraints, update, required=False):
                continue
            if "Deny" not in (binding_spec.get("validationActions") or []):
                continue
            inputs = inputs or _Inputs.of(update, obj, old)
            denial = _evaluate(spec, inputs)
            if denial is not None:
                message, reason = denial
                return Refusal(_name(policy), _name(binding), message, reason)
    return None


# ------------------------------------------------------------------ matching


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _refuse_unmodelled(
    obj: Mapping[str, Any], spec: Mapping[str, Any], fields: Iterable[str]
) -> None:
    unmodelled = [f for f in fields if spec.get(f)]
    for constraints in (spec.get("matchConstraints"), spec.get("matchResources")):
        for selector in ("namespaceSelector", "objectSelector"):
            if (constraints or {}).get(selector):
                unmodelled.append(selector)
    if unmodelled:
        raise ApiError(
            500,
            "InternalError",
            f"the API emulator does not evaluate {', '.join(unmodelled)} "
            f"({obj.get('kind')} {_name(obj)}): see tests/k8s_emulator/admission.py",
        )


def _matches(
    obj: Mapping[str, Any], constraints: Mapping[str, Any], update: Update, *, required: bool
) -> bool:
    """Whether the constraints select the update. A binding without `resourceRules` takes
    what its policy matches; a policy without any matches nothing."""
    rules = constraints.get("resourceRules") or []
    if not rules and not required:
        return True
    excluded = constraints.get("excludeResourceRules") or []
    return any(_rule_matches(r, update) for r in rules) and not any(
        _rule_matches(r, update) for r in excluded
    )


def _rule_matches(rule: Mapping[str, Any], update: Update) -> bool:
    """`rules.Matcher`: operation, group, version, resource/subresource, name, scope."""
    version = update.resource.api_version.rpartition("/")[2]
    names = rule.get("resourceNames") or []
    return (
        _listed(rule.get("operations"), update.operation)
        and _listed(rule.get("apiGroups"), update.group)
        and _listed(rule.get("apiVersions"), version)
        and (not names or update.name in names)
        and _in_scope(str(rule.get("scope", "*")), update)
        and any(_resource_matches(str(r), update) for r in rule.get("resources") or [])
    )


def _listed(values: Iterable[str] | None, value: str) -> bool:
    listed = list(values or [])
    return "*" in listed or value in listed


def _resource_matches(entry: str, update: Update) -> bool:
    # `pods` is the pods themselves, `pods/*` pods and every subresource, `*/status` every
    # resource's status, `*` every resource without its subresources.
    resource, _, subresource = entry.partition("/")
    return resource in ("*", update.resource.plural) and subresource in ("*", update.subresource)


def _in_scope(scope: str, update: Update) -> bool:
    # A Namespace object is cluster-scoped, although its requests carry its own name.
    namespaced = bool(update.namespace) and update.resource.plural != "namespaces"
    if scope == "Namespaced":
        return namespaced
    if scope == "Cluster":
        return not namespaced
    return True


# ------------------------------------------------------------------ evaluation


@dataclass(frozen=True, slots=True)
class _Inputs:
    """The CEL variables of one request, converted once for every policy."""

    values: Mapping[str, celtypes.Value]

    @classmethod
    def of(cls, update: Update, obj: Object, old: Object | None) -> _Inputs:
        return cls(
            {
                "object": json_to_cel(obj),
                "oldObject": json_to_cel(old) if old is not None else None,
                "request": json_to_cel(update.request()),
            }
        )


class _Failure:
    """An expression that could not be evaluated (a CEL error, or one it cannot compile)."""

    def __init__(self, expression: str, error: Exception) -> None:
        self.error = CELEvalError(str(error)) if not isinstance(error, CELEvalError) else error
        self.message = f"expression '{expression}' resulted in error: {_describe(error)}"


def _describe(error: Exception) -> str:
    # celpy's errors carry (message, Python exception type, arguments): the message is the news.
    if error.args and isinstance(error.args[0], str):
        return error.args[0]
    return str(error)


def _evaluate(spec: Mapping[str, Any], inputs: _Inputs) -> tuple[str, str] | None:
    """(message, reason) when the policy denies, None when it admits or does not apply."""
    fail = spec.get("failurePolicy", "Fail") != "Ignore"
    activation: dict[str, Any] = dict(inputs.values)
    failures: list[str] = []
    for condition in spec.get("matchConditions") or []:
        result = _run(str(condition.get("expression", "")), activation)
        if isinstance(result, _Failure):
            failures.append(f"matchCondition '{condition.get('name')}': {result.message}")
        elif not _true(result):
            return None  # a false condition: the policy does not apply
    if failures:
        return (failures[0], "Invalid") if fail else None
    # Variables are evaluated in order; a failed one is kept as its CEL error value, so only
    # the expressions that read it fail (the API server evaluates variables lazily).
    variables: dict[celtypes.StringType, Any] = {}
    for variable in spec.get("variables") or []:
        activation["variables"] = celtypes.MapType(variables)
        value = _run(str(variable.get("expression", "")), activation)
        variables[celtypes.StringType(variable.get("name", ""))] = (
            value.error if isinstance(value, _Failure) else value
        )
    activation["variables"] = celtypes.MapType(variables)
    for validation in spec.get("validations") or []:
        expression = str(validation.get("expression", ""))
        result = _run(expression, activation)
        if isinstance(result, _Failure):
            if fail:
                return result.message, "Invalid"
            continue
        if not _true(result):
            return _message(validation, activation), str(validation.get("reason") or "Invalid")
    return None


def _message(validation: Mapping[str, Any], activation: Mapping[str, Any]) -> str:
    """`validator.go`: the messageExpression's one-line string, else `message`, else the
    failed expression."""
    expression = validation.get("messageExpression")
    if expression:
        value = _run(str(expression), activation)
        if isinstance(value, str):  # celtypes.StringType, or the str a concatenation gives
            text = str(value).strip()
            if text and "\n" not in text and len(text.encode()) <= _MAX_MESSAGE_BYTES:
                return text
    message = str(validation.get("message") or "").strip()
    if message:
        return message
    return f"failed expression: {str(validation.get('expression', '')).strip()}"


def _true(result: Any) -> bool:
    return isinstance(result, celtypes.BoolType) and bool(result)


def _run(expression: str, activation: Mapping[str, Any]) -> Any:
    """The expression's value, or a `_Failure`; never raises."""
    try:
        return _program(expression).evaluate(dict(activation))
    except Exception as error:  # every failure to evaluate is the policy's failure, as on a cluster
        return _Failure(expression, error)


_COMPILING = threading.Lock()


@functools.cache
def _program(expression: str) -> celpy.Runner:
    """The compiled expression, once per text (the parser is not shared across threads)."""
    with _COMPILING:
        environment = celpy.Environment()
        return environment.program(environment.compile(expression))
