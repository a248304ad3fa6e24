"""A small kustomize for the tests: renders this repository's kustomizations offline.

`make test` must check what `kubectl apply -k` would send, without a network and on a machine
with only Python. Neither Debian (whose kubectl is 1.20, kustomize v2) nor PyPI ships a
current kustomize, so the tests render with this subset, written for the features the
kustomizations here use, and it refuses any other feature by name rather than guess:

- `resources`: YAML files (every document) and directories holding a kustomization, rendered
  recursively. As in kustomize, a file must lie in or below the kustomization's directory; a
  directory may be anywhere (`../cluster`).
- `configMapGenerator`: `name`, `namespace`, `files` (`path` or `key=path`), `literals`
  (`key=value`), `options.labels`, with `generatorOptions.labels` and
  `generatorOptions.disableNameSuffixHash: true` (required: this renderer does not hash names).
- `patches`: `path` or inline `patch`, applied to the objects matching `target` (group, version,
  kind, name, namespace). A patch that is a YAML list is a JSON 6902 patch (`add`, `remove`,
  `replace`, `test`); a mapping is a strategic-merge patch (`strategic_merge`), which without a
  `target` applies to the object its own apiVersion, kind and name identify.
- `images`: `name` with `newName`, `newTag` or `digest`, set on every container and init
  container of a Pod or a Pod template whose image is `name` with any tag or digest (kustomize's
  ImageTagTransformer and its default field specs).
- `transformers`: files holding kustomize's builtin `LabelTransformer` (`labels`, and
  `fieldSpecs` of `metadata/labels` with `create: true`, selected by group, version and kind):
  labels on only the kinds it names, where a kustomization's `labels` would label every object.
- `components`: directories whose kustomization is `kind: Component`
  (`kustomize.config.k8s.io/v1alpha1`), applied as kustomize does: after the kustomization's
  resources, before its own generators; a component's resources are added and its patches,
  images and transformers apply to every object accumulated so far. Rendered alone, a
  component is its own resources, transformed (`kubectl kustomize` builds it so too).

Order, as kustomize's: resources, components, generators, then patches, images, transformers.

Where a kubectl is installed, tests/deploy/test_kustomize.py compares this renderer's output
with `kubectl kustomize` for every kustomization (ignoring only the order of objects).
`strategic_merge` also applies kubeadm's patches of static Pods (deploy/scheduler/
kubeadm-patches): maps merge key by key, `null` deletes, and the lists Kubernetes merges by a
key (containers and volumes by `name`, volumeMounts by `mountPath`, env by `name`, container
ports by `containerPort`, Service ports by `port`) merge item by item; every other list is
replaced, as Kubernetes does.

Errors:
    KustomizeError (ValueError)   a kustomization, resource or patch this subset cannot render
    PatchTestFailedError (KustomizeError)   a JSON 6902 `test` operation that did not hold
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
_SUPPORTED_FIELDS = {
    "apiVersion",
    "kind",
    "resources",
    "components",
    "configMapGenerator",
    "generatorOptions",
    "patches",
    "images",
    "transformers",
}
#: Where kustomize's ImageTagTransformer looks for images by default (kustomize
#: api/konfig/builtinpluginconsts: `spec/containers[]/image`, and so on).
_IMAGE_PATHS = (
    ("spec", "containers"),
    ("spec", "initContainers"),
    ("spec", "template", "spec", "containers"),
    ("spec", "template", "spec", "initContainers"),
)
_LIST_MERGE_KEYS = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "volumeMounts": ("mountPath",),
    "env": ("name",),
    "imagePullSecrets": ("name",),
    "ports": ("containerPort", "port"),
}

Document = dict[str, Any]


class KustomizeError(ValueError):
    """A kustomization this subset cannot render (or an invalid one)."""


class PatchTestFailedError(KustomizeError):
    """A JSON 6902 `test` operation found another value."""


def kustomization_file(directory: Path) -> Path | None:
    found = [directory / name for name in KUSTOMIZATION_NAMES if (directory / name).is_file()]
    if len(found) > 1:
        raise KustomizeError(f"{directory}: more than one kustomization file: {found}")
    return found[0] if found else None


def _kind_of(directory: Path) -> str:
    path = kustomization_file(directory)
    assert path is not None
    return str(
        (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("kind", "Kustomization")
    )


def _all_dirs(root: Path) -> set[Path]:
    return {
        path.parent for name in KUSTOMIZATION_NAMES for path in root.rglob(name) if path.is_file()
    }


def kustomization_dirs(root: Path) -> list[Path]:
    """Every directory under `root` that holds a kustomization (`kubectl apply -k` takes it)."""
    return sorted(d for d in _all_dirs(root) if _kind_of(d) == "Kustomization")


def component_dirs(root: Path) -> list[Path]:
    """Every directory under `root` that holds a kustomize Component (used by kustomizations)."""
    return sorted(d for d in _all_dirs(root) if _kind_of(d) == "Component")


def _load(directory: Path, *kinds: str) -> Document:
    path = kustomization_file(directory)
    if path is None:
        raise KustomizeError(f"{directory}: no kustomization file")
    kustomization: Document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unsupported = set(kustomization) - _SUPPORTED_FIELDS
    if unsupported:
        raise KustomizeError(f"{path}: unsupported fields {sorted(unsupported)}")
    if kustomization.get("kind", "Kustomization") not in kinds:
        raise KustomizeError(f"{path}: kind {kustomization.get('kind')!r} is not {kinds}")
    return kustomization


def render(directory: Path) -> list[Document]:
    """The objects `kubectl kustomize directory` prints (in the order of the kustomization)."""
    kustomization = _load(directory, "Kustomization", "Component")
    objects: list[Document] = []
    for resource in kustomization.get("resources") or []:
        objects.extend(_resource(directory, resource))
    for component in kustomization.get("components") or []:
        _apply_component(directory / component, objects)
    objects.extend(_generated(directory, kustomization))
    _transform(directory, kustomization, objects)
    _check_unique(directory, objects)
    return objects


def _apply_component(directory: Path, objects: list[Document]) -> None:
    """A Component's resources join `objects`, then its transformations apply to all of them."""
    if not directory.is_dir():
        raise KustomizeError(f"{directory}: component does not exist")
    component = _load(directory, "Component")
    if component.get("components"):
        raise KustomizeError(f"{directory}: components of a component are not supported")
    for resource in component.get("resources") or []:
        objects.extend(_resource(directory, resource))
    objects.extend(_generated(directory, component))
    _transform(directory, component, objects)


def _transform(directory: Path, kustomization: Document, objects: list[Document]) -> None:
    for patch in kustomization.get("patches") or []:
        _apply_patch(directory, patch, objects)
    for image in kustomization.get("images") or []:
        _set_image(directory, image, objects)
    for transformer in kustomization.get("transformers") or []:
        _apply_transformer(directory, transformer, objects)


def _resource(directory: Path, resource: str) -> list[Document]:
    target = (directory / resource).resolve()
    if target.is_dir():
        return render(target)
    if not target.is_file():
        raise KustomizeError(f"{directory}: resource {resource!r} does not exist")
    if not target.is_relative_to(directory.resolve()):
        raise KustomizeError(
            f"{directory}: file {resource!r} is outside the kustomization's directory "
            "(kustomize's load restrictor refuses it)"
        )
    return [d for d in _documents(target) if d is not None]


def _documents(path: Path) -> Iterator[Any]:
    yield from yaml.safe_load_all(path.read_text(encoding="utf-8"))


def _generated(directory: Path, kustomization: Document) -> list[Document]:
    generators = kustomization.get("configMapGenerator") or []
    options = kustomization.get("generatorOptions") or {}
    if generators and options.get("disableNameSuffixHash") is not True:
        raise KustomizeError(
            f"{directory}: configMapGenerator needs generatorOptions.disableNameSuffixHash: true "
            "here (this renderer does not hash names)"
        )
    unknown_options = set(options) - {"disableNameSuffixHash", "labels"}
    if unknown_options:
        raise KustomizeError(f"{directory}: unsupported generatorOptions {unknown_options}")
    made = []
    for generator in generators:
        unknown = set(generator) - {"name", "namespace", "files", "literals", "options"}
        if unknown or set(generator.get("options") or {}) - {"labels"}:
            raise KustomizeError(f"{directory}: unsupported configMapGenerator fields")
        data: dict[str, str] = {}
        for entry in generator.get("files") or []:
            key, _, source = entry.rpartition("=") if "=" in entry else ("", "", entry)
            path = (directory / source).resolve()
            if not path.is_relative_to(directory.resolve()):
                raise KustomizeError(f"{directory}: generator file {source!r} is outside")
            data[key or path.name] = path.read_text(encoding="utf-8")
        for literal in generator.get("literals") or []:
            key, _, value = literal.partition("=")
            data[key] = value
        labels = {
            **(options.get("labels") or {}),
            **(generator.get("options", {}).get("labels") or {}),
        }
        metadata: Document = {"name": generator["name"]}
        if generator.get("namespace"):
            metadata["namespace"] = generator["namespace"]
        if labels:
            metadata["labels"] = labels
        made.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data})
    return made


def _apply_patch(directory: Path, entry: Document, objects: list[Document]) -> None:
    if set(entry) - {"path", "patch", "target"}:
        raise KustomizeError(f"{directory}: unsupported patch fields {sorted(entry)}")
    if "path" in entry:
        text = (directory / entry["path"]).read_text(encoding="utf-8")
    else:
        text = entry["patch"]
    patch = yaml.safe_load(text)
    target = entry.get("target")
    if isinstance(patch, list):
        if target is None:
            raise KustomizeError(f"{directory}: a JSON 6902 patch needs a target")
        matched = [o for o in objects if _matches(o, target)]
        for index, obj in enumerate(objects):
            if any(obj is m for m in matched):
                objects[index] = json_patch(obj, patch)
    elif isinstance(patch, dict):
        selector = target or {
            "group": patch["apiVersion"].rpartition("/")[0],
            "version": patch["apiVersion"].rpartition("/")[2],
            "kind": patch["kind"],
            "name": patch["metadata"]["name"],
        }
        matched = [o for o in objects if _matches(o, selector)]
        for index, obj in enumerate(objects):
            if any(obj is m for m in matched):
                objects[index] = strategic_merge(obj, patch)
    else:
        raise KustomizeError(f"{directory}: a patch must be a list or a mapping")
    if not matched:
        raise KustomizeError(f"{directory}: patch target {target} matches no object")


# --- images and labels -----------------------------------------------------------------------


def image_name(image: str) -> str:
    """`registry:5000/name:tag@sha256:...` without its tag and digest."""
    name = image.partition("@")[0]
    head, colon, tail = name.rpartition(":")
    return head if colon and "/" not in tail else name


def _set_image(directory: Path, entry: Document, objects: list[Document]) -> None:
    unknown = set(entry) - {"name", "newName", "newTag", "digest"}
    if unknown or "name" not in entry:
        raise KustomizeError(f"{directory}: unsupported images entry {entry}")
    if "newTag" in entry and "digest" in entry:
        raise KustomizeError(f"{directory}: images: newTag and digest exclude each other")
    for obj in objects:
        for path in _IMAGE_PATHS:
            node: Any = obj
            for key in path:
                node = node.get(key) if isinstance(node, dict) else None
            for container in node or []:
                image = str(container.get("image", ""))
                if image_name(image) != entry["name"]:
                    continue
                reference = image.removeprefix(entry["name"])  # ":tag", "@digest" or ""
                if "newTag" in entry:
                    reference = f":{entry['newTag']}"
                elif "digest" in entry:
                    reference = f"@{entry['digest']}"
                container["image"] = str(entry.get("newName", entry["name"])) + reference


def _apply_transformer(directory: Path, file: str, objects: list[Document]) -> None:
    config = yaml.safe_load((directory / file).read_text(encoding="utf-8"))
    if (config.get("apiVersion"), config.get("kind")) != ("builtin", "LabelTransformer"):
        raise KustomizeError(f"{directory}/{file}: only builtin LabelTransformer is supported")
    if set(config) - {"apiVersion", "kind", "metadata", "labels", "fieldSpecs"}:
        raise KustomizeError(f"{directory}/{file}: unsupported LabelTransformer fields")
    for spec in config.get("fieldSpecs") or []:
        if spec.get("path") != "metadata/labels" or spec.get("create") is not True:
            raise KustomizeError(f"{directory}/{file}: only metadata/labels with create: true")
        selector = {k: spec[k] for k in ("group", "version", "kind") if k in spec}
        for obj in objects:
            if _matches(obj, selector):
                labels = obj["metadata"].setdefault("labels", {})
                labels.update({k: str(v) for k, v in (config.get("labels") or {}).items()})


def _matches(obj: Document, target: Document) -> bool:
    unknown = set(target) - {"group", "version", "kind", "name", "namespace"}
    if unknown:
        raise KustomizeError(f"unsupported patch target fields {sorted(unknown)}")
    group, _, version = obj["apiVersion"].rpartition("/")
    actual = {
        "group": group,
        "version": version,
        "kind": obj["kind"],
        "name": obj["metadata"]["name"],
        "namespace": obj["metadata"].get("namespace", ""),
    }
    return all(actual[key] == value for key, value in target.items())


def identity(obj: Document) -> tuple[str, str, str, str]:
    metadata = obj["metadata"]
    return obj["apiVersion"], obj["kind"], metadata.get("namespace", ""), metadata["name"]


def _check_unique(directory: Path, objects: list[Document]) -> None:
    seen: set[tuple[str, str, str, str]] = set()
    for obj in objects:
        key = identity(obj)
        if key in seen:
            raise KustomizeError(f"{directory}: {key} appears twice (kustomize refuses it)")
        seen.add(key)


# --- JSON 6902 --------------------------------------------------------------------------------


def json_patch(document: Document, operations: list[Document]) -> Document:
    """`document` with the RFC 6902 operations applied (a new object; the input is unchanged)."""
    result: Any = copy.deepcopy(document)
    for operation in operations:
        op, path = operation["op"], operation["path"]
        if op not in ("add", "remove", "replace", "test"):
            raise KustomizeError(f"unsupported JSON patch operation {op!r}")
        parent, last = _resolve_parent(result, path)
        if op == "test":
            if _get(parent, last, path) != operation["value"]:
                raise PatchTestFailedError(
                    f"test {path}: expected {operation['value']!r}, "
                    f"found {_get(parent, last, path)!r}"
                )
        elif op == "remove":
            _get(parent, last, path)
            del parent[int(last) if isinstance(parent, list) else last]
        elif op == "replace":
            _get(parent, last, path)
            parent[int(last) if isinstance(parent, list) else last] = copy.deepcopy(
                operation["value"]
            )
        elif isinstance(parent, list):
            index = len(parent) if last == "-" else int(last)
            if not 0 <= index <= len(parent):
                raise KustomizeError(f"add {path}: index out of range")
            parent.insert(index, copy.deepcopy(operation["value"]))
        else:
            parent[last] = copy.deepcopy(operation["value"])
    return dict(result)


def _tokens(path: str) -> list[str]:
    if not path.startswith("/"):
        raise KustomizeError(f"JSON pointer {path!r} must start with /")
    return [t.replace("~1", "/").replace("~0", "~") for t in path[1:].split("/")]


def _resolve_parent(document: Any, path: str) -> tuple[Any, str]:
    *walk, last = _tokens(path)
    node = document
    for token in walk:
        node = _get(node, token, path)
    return node, last


def _get(node: Any, token: str, path: str) -> Any:
    try:
        if isinstance(node, list):
            if not token.isdigit():
                raise KustomizeError(f"{path}: {token!r} is not a list index")
            return node[int(token)]
        return node[token]
    except (KeyError, IndexError, TypeError) as error:
        raise KustomizeError(f"{path}: no such location") from error


# --- strategic merge --------------------------------------------------------------------------


def strategic_merge(original: Document, patch: Document) -> Document:
    """`original` with a strategic-merge `patch` (see the module docstring for the subset)."""
    return _merge_map(copy.deepcopy(original), patch)


def _merge_map(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if key.startswith("$"):
            raise KustomizeError(f"strategic-merge directive {key!r} is not supported")
        if value is None:
            original.pop(key, None)
        elif isinstance(value, dict) and isinstance(original.get(key), dict):
            original[key] = _merge_map(original[key], value)
        elif isinstance(value, list) and isinstance(original.get(key), list):
            original[key] = _merge_list(key, original[key], value)
        else:
            original[key] = copy.deepcopy(value)
    return original


def _merge_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    keys = _LIST_MERGE_KEYS.get(field)
    if keys is None or not all(isinstance(item, dict) for item in [*original, *patch]):
        return copy.deepcopy(patch)
    key = next((k for k in keys if all(k in item for item in patch)), None)
    if key is None:
        raise KustomizeError(f"{field}: patch items lack the merge key {keys}")
    # As Kubernetes orders them: the patch's items first (merged into their originals), then
    # the originals the patch does not name, each group in its own order.
    by_key = {old.get(key): old for old in original}
    named = {item[key] for item in patch}
    merged = [
        _merge_map(by_key[item[key]], item) if item[key] in by_key else copy.deepcopy(item)
        for item in patch
    ]
    return merged + [old for old in original if old.get(key) not in named]
