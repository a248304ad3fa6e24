"""The health demo's node and pod as the API server holds them, and changes to them, for the
tests of what admission lets the components change (test_admission_policy,
test_owned_labels_and_taints): `after(obj, change)` is the object as the API server would store
it once changed; `CONTROLLER` is the user the shipped policy controller runs as."""

from __future__ import annotations

import copy
from collections.abc import Callable

from tas.vocabulary import POLICY_LABEL
from tests.deploy.kustomize import Document
from tests.deploy.pipeline import DEPLOY, find, rendered
from tests.k8s_emulator import realistic
from tests.k8s_emulator.rbac import User

NAMESPACE = "telemetry-aware-scheduling"
DEMO = "health-metric-demo"
POLICY = "demo-policy"


def controller_account() -> tuple[str, str]:
    """The ServiceAccount (namespace, name) the shipped controller Deployment's pods run as."""
    objects = rendered(DEPLOY / "cluster")
    deployment = find(objects, "Deployment", "tas-policy-controller")
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    return find(objects, "ServiceAccount", account)["metadata"]["namespace"], account


ACCOUNT = controller_account()
CONTROLLER = User.service_account(*ACCOUNT)


Change = Callable[[Document], None]


def demo_node(**labels: str) -> Document:
    return realistic.node("node-c", labels=labels)


def with_annotation(obj: Document, key: str, value: str) -> Document:
    obj["metadata"].setdefault("annotations", {})[key] = value
    return obj


def demo_pod(**labels: str) -> Document:
    return realistic.pod(
        "demo-1", namespace=DEMO, node="node-c", labels={POLICY_LABEL: POLICY, **labels}
    )


def after(obj: Document, change: Change) -> Document:
    """The object as the API server would store it: changed, with its own fields moved on."""
    new = copy.deepcopy(obj)
    change(new)
    metadata = new["metadata"]
    metadata["resourceVersion"] = str(int(metadata.get("resourceVersion", "1")) + 1)
    metadata["generation"] = int(metadata.get("generation", 1)) + 1
    entry = {"manager": "tas", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1"}
    metadata["managedFields"] = [*metadata.get("managedFields", []), entry]
    return new


def labels(**values: str | None) -> Change:
    def change(obj: Document) -> None:
        current = obj["metadata"].setdefault("labels", {})
        for key, value in values.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = value

    return change


def label(key: str, value: str | None) -> Change:
    return labels(**{key: value})


def annotation(key: str, value: str | None) -> Change:
    def change(obj: Document) -> None:
        current = obj["metadata"].setdefault("annotations", {})
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value

    return change


def both(*changes: Change) -> Change:
    def change(obj: Document) -> None:
        for one in changes:
            one(obj)

    return change


def nothing(obj: Document) -> None:
    pass


def image(obj: Document) -> None:
    obj["spec"]["containers"][0]["image"] = "registry.example/miner:latest"


def taint(obj: Document) -> None:
    obj["spec"]["taints"] = [{"key": "evil", "value": "true", "effect": "NoExecute"}]


def unschedulable(obj: Document) -> None:
    obj["spec"]["unschedulable"] = True


def node_name(obj: Document) -> None:
    obj["spec"]["nodeName"] = "node-a"


def pod_phase(obj: Document) -> None:
    obj["status"]["phase"] = "Failed"


def node_not_ready(obj: Document) -> None:
    for condition in obj["status"]["conditions"]:
        if condition["type"] == "Ready":
            condition["status"] = "False"


def owner(obj: Document) -> None:
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "gone", "uid": "0000-gone"}
    ]


def finalizer(obj: Document) -> None:
    obj["metadata"]["finalizers"] = ["example.com/never-released"]
