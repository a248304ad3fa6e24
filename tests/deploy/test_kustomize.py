"""Every kustomization, rendered: what `kubectl apply -k` sends is valid and does what it says.

Covered:
- every kustomization under deploy/ and crds/ renders (tests/deploy/kustomize.py), and where a
  kubectl is installed, its `kubectl kustomize` output is the same set of objects;
- every rendered object is valid for the newest Kubernetes that `kubernetes-validate` knows
  and for the oldest we support (strict: a misspelt field fails); the only objects without a
  schema are the Prometheus Operator's ServiceMonitor and PrometheusRule (checked in
  test_prometheus.py) and the TASPolicy CRD's own objects;
- `kubectl apply -f crds/` reads only the CRD (the kustomization is `crds/Kustomization`), and
  `kubectl apply -k crds/` installs the same CRD;
- deploy/custom-metrics switches exactly the three components' metric source to
  `custom-metrics` (their command lines still parse with their own parsers) and grants exactly
  `get` on everything in the custom metrics API (`*`: a read of `nodes/*/<metric>` is resource
  `nodes`, subresource `<metric>`, which `nodes/*` never matches) to exactly their three
  ServiceAccounts;
- deploy/monitoring runs node-exporter with only the textfile collector;
- the renderer's own rules: JSON 6902 operations (a failed `test` stops the build), strategic
  merges by the keys Kubernetes uses, `images` (a new name, tag or digest for an image named
  with any tag, and no other image), a LabelTransformer that labels only the kinds it names, a
  Component applied to what its kustomization holds, and refusals of what it does not
  implement.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.kustomize import (
    Document,
    KustomizeError,
    PatchTestFailedError,
    component_dirs,
    identity,
    image_name,
    json_patch,
    kustomization_dirs,
    render,
    strategic_merge,
)
from tests.deploy.pipeline import DEPLOY, ROOT, find, rendered

KUSTOMIZATIONS = [*kustomization_dirs(DEPLOY), ROOT / "crds"]
KUBERNETES_VERSIONS = ("1.25", kubernetes_validate.utils.latest_version())
#: Kinds without a schema in kubernetes-validate, and where they are checked instead.
CUSTOM_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "tests/deploy/test_prometheus.py",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "tests/deploy/test_prometheus.py",
}
COMPONENTS = ("tas-extender", "tas-policy-controller", "tas-descheduler")
NAMESPACE = "telemetry-aware-scheduling"


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=rel)
def test_every_kustomization_renders(directory: Path) -> None:
    objects = rendered(directory)
    assert objects
    for obj in objects:
        assert {"apiVersion", "kind", "metadata"} <= set(obj)


@functools.cache
def _kubectl() -> str | None:
    """A kubectl whose kustomize knows `patches` (kustomize v4 and later, kubectl 1.21+)."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None
    probe = subprocess.run(
        [kubectl, "version", "--client", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    try:
        version = str(json.loads(probe.stdout).get("kustomizeVersion", ""))
    except ValueError:
        return None
    major = version.removeprefix("v").partition(".")[0]
    return kubectl if major.isdigit() and int(major) >= 4 else None


@pytest.mark.skipif(_kubectl() is None, reason="no kubectl with kustomize v4+ here")
@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=rel)
def test_the_renderer_agrees_with_kubectl_kustomize(directory: Path) -> None:
    kubectl = _kubectl()
    assert kubectl is not None
    result = subprocess.run(
        [kubectl, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    theirs = {identity(o): o for o in yaml.safe_load_all(result.stdout) if o}
    ours = {identity(o): o for o in rendered(directory)}
    assert ours == theirs


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=rel)
def test_every_rendered_object_is_valid_kubernetes(directory: Path, version: str) -> None:
    for obj in rendered(directory):
        where = f"{rel(directory)}: {obj['kind']} {obj['metadata']['name']}"
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.utils.SchemaNotFoundError:
            assert (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS, f"{where}: no schema"
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            pytest.fail(f"{where} {path}: {error.message}")


def test_kubectl_apply_f_crds_reads_only_the_crd() -> None:
    # kubectl apply -f DIR reads the *.json, *.yaml and *.yml files of DIR.
    read = sorted(p for p in (ROOT / "crds").iterdir() if p.suffix in (".json", ".yaml", ".yml"))
    assert [p.name for p in read] == ["taspolicy.yaml"]
    for path in read:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert document["kind"] == "CustomResourceDefinition"
    (crd,) = rendered(ROOT / "crds")
    assert crd == yaml.safe_load((ROOT / "crds" / "taspolicy.yaml").read_text(encoding="utf-8"))


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = importlib.import_module("tas_cli.main").build_parser()
    return parser


def test_custom_metrics_mode_changes_only_the_metric_source_of_the_three_components() -> None:
    base = {identity(o): o for o in rendered(DEPLOY / "cluster")}
    overlay = {identity(o): o for o in rendered(DEPLOY / "custom-metrics")}
    changed = {key for key in base if base[key] != overlay[key]}
    assert {key[3] for key in changed} == set(COMPONENTS)
    for name in COMPONENTS:
        (before,) = find(list(base.values()), "Deployment", name)["spec"]["template"]["spec"][
            "containers"
        ]
        (after,) = find(list(overlay.values()), "Deployment", name)["spec"]["template"]["spec"][
            "containers"
        ]
        at = after["args"].index("--metrics") + 1
        assert after["args"][at] == "custom-metrics"
        assert before["args"][:at] + before["args"][at + 1 :] == (
            after["args"][:at] + after["args"][at + 1 :]
        )
        _parser().parse_args(after["args"])


def test_custom_metrics_mode_grants_get_on_its_api_group_to_the_three_components() -> None:
    added = {identity(o): o for o in rendered(DEPLOY / "custom-metrics")}
    for key in {identity(o) for o in rendered(DEPLOY / "cluster")}:
        added.pop(key)
    roles = [o for o in added.values() if o["kind"] == "ClusterRole"]
    bindings = [o for o in added.values() if o["kind"] == "ClusterRoleBinding"]
    assert len(roles) == len(bindings) == 1
    assert len(added) == 2
    (role,), (binding,) = roles, bindings
    assert role["rules"] == [
        {"apiGroups": ["custom.metrics.k8s.io"], "resources": ["*"], "verbs": ["get"]}
    ]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert sorted((s["namespace"], s["name"]) for s in binding["subjects"]) == sorted(
        (NAMESPACE, name) for name in COMPONENTS
    )


def test_with_the_prometheus_operator_node_exporter_serves_only_textfile_metrics() -> None:
    daemonset = find(rendered(DEPLOY / "monitoring"), "DaemonSet", "tas-node-exporter")
    (container,) = daemonset["spec"]["template"]["spec"]["containers"]
    collectors = {a for a in container["args"] if a.startswith("--collector.")}
    assert collectors == {
        "--collector.disable-defaults",
        "--collector.textfile",
        "--collector.textfile.directory=/tmp/node-metrics",
    }


# --- the renderer ---------------------------------------------------------------------------

POD: Document = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {
        "containers": [
            {"name": "a", "args": ["x", "y"], "volumeMounts": [{"name": "v", "mountPath": "/v"}]},
            {"name": "b", "image": "b:1"},
        ],
        "volumes": [{"name": "v", "emptyDir": {}}],
        "dnsPolicy": "ClusterFirst",
    },
}


@pytest.mark.parametrize(
    ("operations", "path", "expected"),
    [
        pytest.param(
            [{"op": "replace", "path": "/spec/containers/0/args/1", "value": "z"}],
            ("spec", "containers", 0, "args"),
            ["x", "z"],
            id="replace in a list",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/containers/0/args/-", "value": "z"}],
            ("spec", "containers", 0, "args"),
            ["x", "y", "z"],
            id="append",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/containers/0/args/0", "value": "w"}],
            ("spec", "containers", 0, "args"),
            ["w", "x", "y"],
            id="insert",
        ),
        pytest.param(
            [{"op": "remove", "path": "/spec/dnsPolicy"}],
            ("spec", "dnsPolicy"),
            None,
            id="remove",
        ),
        pytest.param(
            [
                {"op": "test", "path": "/metadata/name", "value": "p"},
                {"op": "add", "path": "/metadata/labels", "value": {"a~b/c": "1"}},
            ],
            ("metadata", "labels"),
            {"a~b/c": "1"},
            id="test then add",
        ),
    ],
)
def test_json_patch_operations(
    operations: list[Document], path: tuple[Any, ...], expected: Any
) -> None:
    result: Any = json_patch(POD, operations)
    for step in path[:-1]:
        result = result[step]
    assert result.get(path[-1]) == expected
    assert POD["spec"]["containers"][0]["args"] == ["x", "y"]  # the input is untouched


def test_a_failed_json_patch_test_stops_the_build() -> None:
    with pytest.raises(PatchTestFailedError, match="expected 'q'"):
        json_patch(POD, [{"op": "test", "path": "/metadata/name", "value": "q"}])
    with pytest.raises(KustomizeError, match="no such location"):
        json_patch(POD, [{"op": "replace", "path": "/spec/nothing/here", "value": 1}])
    with pytest.raises(KustomizeError, match="unsupported"):
        json_patch(POD, [{"op": "move", "from": "/a", "path": "/b"}])


def test_a_strategic_merge_merges_containers_volumes_and_mounts_by_their_keys() -> None:
    patch = {
        "spec": {
            "dnsPolicy": "ClusterFirstWithHostNet",
            "containers": [
                {
                    "name": "a",
                    "args": ["--config=/c"],
                    "volumeMounts": [{"name": "w", "mountPath": "/w"}],
                }
            ],
            "volumes": [{"name": "w", "hostPath": {"path": "/w"}}],
        }
    }
    merged = strategic_merge(POD, patch)
    first, second = merged["spec"]["containers"]
    assert first["args"] == ["--config=/c"]  # scalar lists are replaced
    assert [m["mountPath"] for m in first["volumeMounts"]] == ["/w", "/v"]
    assert second == {"name": "b", "image": "b:1"}
    assert [v["name"] for v in merged["spec"]["volumes"]] == ["w", "v"]
    assert merged["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert strategic_merge(POD, {"spec": {"dnsPolicy": None}})["spec"].get("dnsPolicy") is None
    with pytest.raises(KustomizeError, match="directive"):
        strategic_merge(POD, {"spec": {"$patch": "replace"}})


def _kustomization(tmp_path: Path, body: Document, files: dict[str, str] | None = None) -> Path:
    directory = tmp_path / "k"
    directory.mkdir()
    (directory / "kustomization.yaml").write_text(yaml.safe_dump(body))
    for name, text in (files or {}).items():
        (directory / name).write_text(text)
    return directory


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param({"namePrefix": "x-", "resources": []}, "unsupported fields", id="prefix"),
        pytest.param(
            {"resources": [], "configMapGenerator": [{"name": "c", "literals": ["a=b"]}]},
            "disableNameSuffixHash",
            id="hashed generator",
        ),
        pytest.param({"resources": ["missing.yaml"]}, "does not exist", id="missing file"),
        pytest.param(
            {"resources": ["pod.yaml"], "images": [{"name": "b", "newTag": "2", "digest": "d"}]},
            "exclude each other",
            id="tag and digest",
        ),
        pytest.param(
            {"resources": ["pod.yaml"], "transformers": ["pod.yaml"]},
            "only builtin LabelTransformer",
            id="another transformer",
        ),
        pytest.param({"components": ["missing"]}, "does not exist", id="missing component"),
        pytest.param({"resources": ["../outside.yaml"]}, "outside", id="outside the root"),
        pytest.param(
            {
                "resources": ["pod.yaml"],
                "patches": [{"patch": "- op: remove\n  path: /spec", "target": {"kind": "Job"}}],
            },
            "matches no object",
            id="patch without a match",
        ),
    ],
)
def test_the_renderer_refuses_what_it_does_not_implement(
    body: Document, message: str, tmp_path: Path
) -> None:
    (tmp_path / "outside.yaml").write_text(yaml.safe_dump(POD))
    directory = _kustomization(tmp_path, body, {"pod.yaml": yaml.safe_dump(POD)})
    with pytest.raises(KustomizeError, match=message):
        render(directory)


@pytest.mark.parametrize(
    ("image", "name"),
    [
        pytest.param("tas", "tas", id="bare"),
        pytest.param("tas:0.1.0", "tas", id="tag"),
        pytest.param("ghcr.io/o/tas@sha256:ab", "ghcr.io/o/tas", id="digest"),
        pytest.param("registry:5000/tas:1", "registry:5000/tas", id="registry port and tag"),
        pytest.param("registry:5000/tas", "registry:5000/tas", id="registry port"),
    ],
)
def test_an_image_s_name_is_its_reference_without_tag_or_digest(image: str, name: str) -> None:
    assert image_name(image) == name


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        pytest.param({"name": "b", "newName": "r/b", "newTag": "2"}, "r/b:2", id="name and tag"),
        pytest.param({"name": "b", "newName": "r/b"}, "r/b:1", id="name keeps the tag"),
        pytest.param({"name": "b", "digest": "sha256:ab"}, "b@sha256:ab", id="digest"),
    ],
)
def test_images_sets_the_name_tag_or_digest_of_only_the_image_it_names(
    entry: Document, expected: str, tmp_path: Path
) -> None:
    directory = _kustomization(
        tmp_path, {"resources": ["pod.yaml"], "images": [entry]}, {"pod.yaml": yaml.safe_dump(POD)}
    )
    (pod,) = render(directory)
    first, second = pod["spec"]["containers"]
    assert second["image"] == expected
    assert "image" not in first  # a container without an image stays so


def test_a_label_transformer_labels_only_the_kinds_its_field_specs_name(tmp_path: Path) -> None:
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    transformer = {
        "apiVersion": "builtin",
        "kind": "LabelTransformer",
        "metadata": {"name": "t"},
        "labels": {"release": "r"},
        "fieldSpecs": [{"kind": "Pod", "path": "metadata/labels", "create": True}],
    }
    directory = _kustomization(
        tmp_path,
        {"resources": ["pod.yaml", "service.yaml"], "transformers": ["t.yaml"]},
        {
            "pod.yaml": yaml.safe_dump(POD),
            "service.yaml": yaml.safe_dump(service),
            "t.yaml": yaml.safe_dump(transformer),
        },
    )
    pod, rendered_service = render(directory)
    assert pod["metadata"]["labels"] == {"release": "r"}
    assert "labels" not in rendered_service["metadata"]


def test_a_component_transforms_what_its_kustomization_holds(tmp_path: Path) -> None:
    directory = _kustomization(
        tmp_path,
        {"resources": ["pod.yaml"], "components": ["c"]},
        {"pod.yaml": yaml.safe_dump(POD)},
    )
    component = directory / "c"
    component.mkdir()
    (component / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1alpha1",
                "kind": "Component",
                "images": [{"name": "b", "newTag": "3"}],
            }
        )
    )
    (pod,) = render(directory)
    assert pod["spec"]["containers"][1]["image"] == "b:3"
    assert render(component) == []  # alone, a component holds nothing here
    assert component in component_dirs(tmp_path)
    assert component not in kustomization_dirs(tmp_path)
