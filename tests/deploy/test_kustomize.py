"""Every kustomization, rendered: what `kubectl apply -k` sends is valid and does what it says.

Covered:
- every kustomization under deploy/ and crds/ renders (tests/deploy/kustomize.py), and where a
  kubectl is installed, its `kubectl kustomize` output is the same set of objects;
- every rendered object is valid for the newest Kubernetes that `kubernetes-validate` knows,
  for 1.30 and 1.34, and for the oldest we support (strict: a misspelt field fails); the only
  objects without a schema are the Prometheus Operator's ServiceMonitor and PrometheusRule
  (checked in test_prometheus.py) and the TASPolicy CRD's own objects; a kind newer than the
  oldest version (the ValidatingAdmissionPolicy of deploy/cluster, GA in 1.30) is checked from
  the version that serves it;
- `kubectl apply -f crds/` reads only the CRD (the kustomization is `crds/Kustomization`), and
  `kubectl apply -k crds/` installs the same CRD; no other kustomization renders a CRD, so
  `kubectl delete -k` of the components never deletes it and every TASPolicy with it;
- the image is named in one place: every container of the three components, in deploy/cluster
  and every kustomization built on it (the profiles, deploy/custom-metrics), runs the image of
  deploy/cluster's `images` (`newName:newTag`), whose tag is the project's version (what the
  release workflow pushes);
- deploy/custom-metrics switches exactly the three components' metric source to
  `custom-metrics` (their command lines still parse with their own parsers) and grants exactly
  `get` on everything in the custom metrics API (`*`: a read of `nodes/*/<metric>` is resource
  `nodes`, subresource `<metric>`, which `nodes/*` never matches) to exactly their three
  ServiceAccounts;
- deploy/monitoring runs node-exporter with only the textfile collector;
- a Namespace comes only from the kustomization that owns it: telemetry-aware-scheduling from
  deploy/cluster (and everything built on it), tas-monitoring from node-exporter's directory
  (and everything built on it), and no kustomization renders `monitoring`, a stack's
  (`kubectl delete -k` deletes what it renders);
- the kube-prometheus-stack profile is the kube-prometheus profile's deploy/cluster and
  deploy/monitoring with `release: kube-prometheus-stack` on every ServiceMonitor and
  PrometheusRule, the value set once in its release-label.yaml, and no other change to them;
- each profile sets the Prometheus URL in one place: its ConfigMap tas-prometheus, which the
  three Deployments read (`$(PROMETHEUS_URL)`), and no other file of the profile or its bases
  names that URL;
- deploy/metrics-pipeline/prometheus-adapter renders no APIService: the registration of the
  custom metrics API is its own file, apiservice.yaml, pointing at the adapter's Service;
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
import tomllib
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
from tests.deploy.shipped import rel

KUSTOMIZATIONS = [*kustomization_dirs(DEPLOY), ROOT / "crds"]
#: The oldest supported, the two an install is checked on (issue 56's 1.30 and 1.34), the newest.
KUBERNETES_VERSIONS = ("1.25", "1.30", "1.34", kubernetes_validate.utils.latest_version())
#: Kinds without a schema in kubernetes-validate, and where they are checked instead.
CUSTOM_KINDS = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "tests/deploy/test_prometheus.py",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "tests/deploy/test_prometheus.py",
}
#: Kinds the oldest supported version does not serve, and the first version that does: they are
#: validated against that one and newer (docs/deploy.md says what older clusters do with them).
NEWER_KINDS = {
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): "1.30",
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): "1.30",
}
COMPONENTS = ("tas-extender", "tas-policy-controller", "tas-descheduler")
NAMESPACE = "telemetry-aware-scheduling"


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
        # A kind newer than `version` is checked against the first version that serves it.
        first = NEWER_KINDS.get((obj["apiVersion"], obj["kind"]), version)
        checked = max(version, first, key=_minor)
        try:
            kubernetes_validate.validate(obj, checked, strict=True)
        except kubernetes_validate.utils.SchemaNotFoundError:
            assert (obj["apiVersion"], obj["kind"]) in CUSTOM_KINDS, f"{where}: no schema"
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            pytest.fail(f"{where} {path}: {error.message}")


def _minor(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:2])


def test_kubectl_apply_f_crds_reads_only_the_crd() -> None:
    # kubectl apply -f DIR reads the *.json, *.yaml and *.yml files of DIR.
    read = sorted(p for p in (ROOT / "crds").iterdir() if p.suffix in (".json", ".yaml", ".yml"))
    assert [p.name for p in read] == ["taspolicy.yaml"]
    for path in read:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            assert document["kind"] == "CustomResourceDefinition"
    (crd,) = rendered(ROOT / "crds")
    assert crd == yaml.safe_load((ROOT / "crds" / "taspolicy.yaml").read_text(encoding="utf-8"))


@pytest.mark.parametrize("directory", kustomization_dirs(DEPLOY), ids=rel)
def test_only_crds_renders_the_crd(directory: Path) -> None:
    # `kubectl delete -k deploy/cluster` (an uninstall, a rollback) would delete the CRD it
    # renders, and the API server every TASPolicy with it.
    assert [o for o in rendered(directory) if o["kind"] == "CustomResourceDefinition"] == []


def _image_entry() -> Document:
    kustomization = yaml.safe_load((DEPLOY / "cluster" / "kustomization.yaml").read_text())
    (entry,) = kustomization["images"]
    return dict(entry)


@pytest.mark.parametrize(
    "directory",
    [
        "cluster",
        "custom-metrics",
        "profiles/standalone",
        "profiles/kube-prometheus",
        "profiles/kube-prometheus-stack",
    ],
)
def test_every_component_runs_the_image_deploy_cluster_names(directory: str) -> None:
    entry = _image_entry()
    image = f"{entry['newName']}:{entry['newTag']}"
    deployments = [
        o
        for o in rendered(DEPLOY / directory)
        if o["kind"] == "Deployment" and o["metadata"]["namespace"] == NAMESPACE
    ]
    assert {d["metadata"]["name"] for d in deployments} == set(COMPONENTS)
    for deployment in deployments:
        spec = deployment["spec"]["template"]["spec"]
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            assert container["image"] == image, deployment["metadata"]["name"]


def test_the_image_s_placeholder_is_what_images_replaces_and_its_tag_the_version() -> None:
    entry = _image_entry()
    # The manifests name the placeholder alone, so no tag in them can disagree.
    for name in ("extender.yaml", "policy-controller.yaml", "descheduler.yaml"):
        text = (DEPLOY / "cluster" / name).read_text(encoding="utf-8")
        assert f"image: {entry['name']}  #" in text, name
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert str(entry["newTag"]) == version
    # .github/workflows/release.yml pushes ghcr.io/<owner>/telemetry-aware-scheduling.
    registry, owner, repository = str(entry["newName"]).split("/")
    assert (registry, repository) == ("ghcr.io", "telemetry-aware-scheduling")
    assert owner == owner.lower()


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = importlib.import_module("tas_cli.main").build_parser()
    return parser


def test_custom_metrics_mode_changes_only_the_metric_source_of_the_three_components() -> None:
    base = {identity(o): o for o in rendered(DEPLOY / "profiles" / "kube-prometheus")}
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
    for key in {identity(o) for o in rendered(DEPLOY / "profiles" / "kube-prometheus")}:
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


# --- who owns what ----------------------------------------------------------------------------

#: The namespaces a kustomization creates, and so deletes again with `kubectl delete -k`: each
#: from the one directory that holds its Namespace object, and every kustomization built on it.
NAMESPACE_FILES = {
    NAMESPACE: DEPLOY / "cluster",
    "tas-monitoring": DEPLOY / "metrics-pipeline" / "node-exporter",
}


def _bases(directory: Path) -> set[Path]:
    """`directory` and every kustomization directory it includes, recursively."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    found = {directory.resolve()}
    for resource in kustomization.get("resources") or []:
        if (directory / resource).is_dir():
            found |= _bases(directory / resource)
    return found


@pytest.mark.parametrize("directory", kustomization_dirs(DEPLOY), ids=rel)
def test_a_namespace_comes_only_from_the_kustomization_that_owns_it(directory: Path) -> None:
    namespaces = {o["metadata"]["name"] for o in rendered(directory) if o["kind"] == "Namespace"}
    owned = {ns for ns, home in NAMESPACE_FILES.items() if home.resolve() in _bases(directory)}
    assert namespaces == owned
    assert "monitoring" not in namespaces


PROFILES = DEPLOY / "profiles"


def _release_label() -> str:
    profile = PROFILES / "kube-prometheus-stack"
    transformer = yaml.safe_load((profile / "release-label.yaml").read_text(encoding="utf-8"))
    return str(transformer["labels"]["release"])


def test_kube_prometheus_stack_labels_every_service_monitor_and_rule_with_the_release() -> None:
    release = _release_label()
    assert release == "kube-prometheus-stack"  # the chart's documented release name
    labelled = [
        o
        for o in rendered(PROFILES / "kube-prometheus-stack")
        if o["kind"] in ("ServiceMonitor", "PrometheusRule")
    ]
    assert {o["kind"] for o in labelled} == {"ServiceMonitor", "PrometheusRule"}
    for obj in labelled:
        assert obj["metadata"]["labels"]["release"] == release, obj["metadata"]["name"]


def test_kube_prometheus_stack_changes_nothing_else_of_cluster_and_monitoring() -> None:
    base = {identity(o): o for o in rendered(DEPLOY / "cluster") + rendered(DEPLOY / "monitoring")}
    stack = {identity(o): o for o in rendered(PROFILES / "kube-prometheus-stack")}
    assert set(stack) - set(base) == {
        ("v1", "ConfigMap", NAMESPACE, "tas-prometheus"),
    }
    for key, obj in stack.items():
        if key not in base:
            continue
        if obj["kind"] in ("ServiceMonitor", "PrometheusRule"):
            obj["metadata"]["labels"].pop("release")
        if key[3] == "tas-prometheus-scrape":
            continue  # the peer the profile sets (test_stack_fixtures.py checks it)
        assert obj == base[key], key


PROFILE_NAMES = ["standalone", "kube-prometheus", "kube-prometheus-stack"]


@pytest.mark.parametrize("profile", PROFILE_NAMES)
def test_each_profile_sets_the_prometheus_url_in_one_place_the_three_components_read(
    profile: str,
) -> None:
    objects = rendered(PROFILES / profile)
    config = find(objects, "ConfigMap", "tas-prometheus")
    assert config["metadata"]["namespace"] == NAMESPACE
    url = config["data"]["url"]
    assert url.startswith("http://")
    assert url.endswith(".svc:9090")
    for name in COMPONENTS:
        (container,) = find(objects, "Deployment", name)["spec"]["template"]["spec"]["containers"]
        args = container["args"]
        assert args[args.index("--metrics") + 1] == "prometheus:$(PROMETHEUS_URL)"
        (env,) = [e for e in container["env"] if e["name"] == "PROMETHEUS_URL"]
        assert env["valueFrom"]["configMapKeyRef"] == {"name": "tas-prometheus", "key": "url"}
    # The one place: no other file of the profile or of what it includes names that URL.
    files = [
        path
        for directory in _bases(PROFILES / profile)
        for path in directory.iterdir()
        if path.suffix in (".yaml", ".yml")
    ]
    code = {path: _without_comments(path.read_text("utf-8")) for path in files}
    naming = {str(path.relative_to(DEPLOY.parent)) for path in files if url in code[path]}
    assert naming == {f"deploy/profiles/{profile}/kustomization.yaml"}
    host = url.removeprefix("http://").partition(":")[0]
    assert sum(text.count(host) for text in code.values()) == 1


def _without_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def test_the_adapter_s_directory_takes_no_api_service_over() -> None:
    adapter = DEPLOY / "metrics-pipeline" / "prometheus-adapter"
    objects = rendered(adapter)
    assert [o for o in objects if o["kind"] == "APIService"] == []
    (apiservice,) = yaml.safe_load_all((adapter / "apiservice.yaml").read_text(encoding="utf-8"))
    assert apiservice["kind"] == "APIService"
    assert apiservice["metadata"]["name"] == "v1beta1.custom.metrics.k8s.io"
    target = apiservice["spec"]["service"]
    service = find(objects, "Service", target["name"])
    assert service["metadata"]["namespace"] == target["namespace"]
    assert target["port"] in {p["port"] for p in service["spec"]["ports"]}
    kustomization = yaml.safe_load((adapter / "kustomization.yaml").read_text(encoding="utf-8"))
    assert "apiservice.yaml" not in kustomization["resources"]


def test_the_api_server_verifies_the_adapter_s_certificate_against_your_ca() -> None:
    """No `insecureSkipTLSVerify`: the adapter serves gen-certs' adapter certificate from a
    Secret, for its Service's name, and the guide gives the APIService your CA as `caBundle`
    right after creating it."""
    adapter = DEPLOY / "metrics-pipeline" / "prometheus-adapter"
    (apiservice,) = yaml.safe_load_all((adapter / "apiservice.yaml").read_text(encoding="utf-8"))
    assert "insecureSkipTLSVerify" not in apiservice["spec"]
    objects = rendered(adapter)
    deployment = find(objects, "Deployment", "tas-prometheus-adapter")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    args = dict(a.split("=", 1) for a in container["args"] if "=" in a)
    assert "--cert-dir" not in args
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "serving-cert"]
    assert args["--tls-cert-file"] == f"{mount['mountPath']}/tls.crt"
    assert args["--tls-private-key-file"] == f"{mount['mountPath']}/tls.key"
    (volume,) = [v for v in pod["volumes"] if v["name"] == "serving-cert"]
    secret = volume["secret"]["secretName"]
    guide = (DEPLOY.parent / "docs" / "deploy.md").read_text(encoding="utf-8")
    namespace = apiservice["spec"]["service"]["namespace"]
    assert f"kubectl -n {namespace} create secret tls {secret}" in guide
    gen_certs = (DEPLOY.parent / "scripts" / "gen-certs.sh").read_text(encoding="utf-8")
    assert f'adapter="{apiservice["spec"]["service"]["name"]}.$adapter_namespace.svc"' in gen_certs
    create = "kubectl create -f deploy/metrics-pipeline/prometheus-adapter/apiservice.yaml"
    patch = "kubectl patch apiservice v1beta1.custom.metrics.k8s.io --type merge"
    assert guide.count(create) == guide.count(patch) >= 1
    for block_after in guide.split(create)[1:]:  # the same code block: right after it
        rest_of_block = block_after.split("```")[0]
        assert patch in rest_of_block
        assert "caBundle" in rest_of_block
