"""Patch documents and selectors, as the API server applies them.

- JSON merge patch (RFC 7386), also used for strategic merge patches: this emulator treats
  lists as replaced wholesale, which is what a strategic merge does for the fields we patch
  (labels, annotations, status).
- JSON patch (RFC 6902): add, remove, replace, test, move, copy; a failed `test` is a 422.
- Label selectors (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`) and field selectors over dotted
  paths (`spec.nodeName=n1`, `metadata.name=x`, `status.phase!=Succeeded`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any


class PatchError(Exception):
    """The patch cannot be applied; `status` is the HTTP status the API would answer."""

    def __init__(self, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.status = status


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(document: Any, tokens: list[str]) -> Any:
    node = document
    for token in tokens[:-1]:
        if isinstance(node, list):
            node = node[_index(node, token, existing=True)]
        elif isinstance(node, dict) and token in node:
            node = node[token]
        else:
            raise PatchError(f"path segment {token!r} does not exist")
    return node


def _index(array: list[Any], token: str, *, existing: bool) -> int:
    if token == "-" and not existing:
        return len(array)
    if not token.isdigit():
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    if index > len(array) or (existing and index == len(array)):
        raise PatchError(f"array index {index} out of range")
    return index


def _get(document: Any, tokens: list[str]) -> Any:
    if not tokens:
        return document
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, list):
        return parent[_index(parent, last, existing=True)]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    raise PatchError(f"path {'/'.join(tokens)!r} does not exist")


def _remove(document: Any, tokens: list[str]) -> Any:
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, existing=True))
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    raise PatchError(f"cannot remove {'/'.join(tokens)!r}: it does not exist")


def _add(document: Any, tokens: list[str], value: Any, *, replace: bool) -> Any:
    if not tokens:
        return copy.deepcopy(value)
    parent = _parent(document, tokens)
    last = tokens[-1]
    if isinstance(parent, list):
        index = _index(parent, last, existing=replace)
        if replace:
            parent[index] = copy.deepcopy(value)
        else:
            parent.insert(index, copy.deepcopy(value))
    elif isinstance(parent, dict):
        if replace and last not in parent:
            raise PatchError(f"cannot replace {'/'.join(tokens)!r}: it does not exist")
        parent[last] = copy.deepcopy(value)
    else:
        raise PatchError(f"cannot add under {'/'.join(tokens[:-1])!r}")
    return document


def json_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations", 400)
    result = copy.deepcopy(document)
    for operation in operations:
        if not isinstance(operation, Mapping) or "op" not in operation or "path" not in operation:
            raise PatchError(f"invalid JSON patch operation {operation!r}", 400)
        op, tokens = operation["op"], _pointer(str(operation["path"]))
        if op == "test":
            if _get(result, tokens) != operation.get("value"):
                raise PatchError(f"test failed at {operation['path']!r}")
        elif op == "remove":
            _remove(result, tokens)
        elif op in ("add", "replace"):
            result = _add(result, tokens, operation.get("value"), replace=op == "replace")
        elif op in ("move", "copy"):
            source = _pointer(str(operation.get("from", "")))
            value = _remove(result, source) if op == "move" else _get(result, source)
            result = _add(result, tokens, value, replace=False)
        else:
            raise PatchError(f"unknown JSON patch op {op!r}", 400)
    return result


_SET_TERM = re.compile(r"^\s*(!?)([^\s!=]+)\s*(?:(notin|in)\s*\(([^)]*)\))?\s*$")


def _split_terms(selector: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        terms.append(current)
    return terms


def label_selector(selector: str) -> Callable[[Mapping[str, str]], bool]:
    """A predicate over labels; raises PatchError(400) for a selector it cannot parse."""
    checks: list[Callable[[Mapping[str, str]], bool]] = []
    for term in _split_terms(selector):
        if "!=" in term:
            key, value = (s.strip() for s in term.split("!=", 1))
            checks.append(lambda labels, k=key, v=value: labels.get(k) != v)
        elif "=" in term:
            key, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            checks.append(lambda labels, k=key, v=value: labels.get(k) == v)
        else:
            match = _SET_TERM.match(term)
            if match is None:
                raise PatchError(f"unable to parse requirement {term!r}", 400)
            negated, key, operator, values = match.groups()
            if operator:
                allowed = {v.strip() for v in values.split(",")}
                if operator == "in":
                    checks.append(lambda labels, k=key, a=allowed: labels.get(k) in a)
                else:
                    checks.append(lambda labels, k=key, a=allowed: labels.get(k) not in a)
            elif negated:
                checks.append(lambda labels, k=key: k not in labels)
            else:
                checks.append(lambda labels, k=key: k in labels)
    return lambda labels: all(check(labels) for check in checks)


def field_value(obj: Mapping[str, Any], path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return "" if node is None else str(node)


def field_selector(selector: str) -> Callable[[Mapping[str, Any]], bool]:
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for term in _split_terms(selector):
        if "!=" in term:
            path, value = (s.strip() for s in term.split("!=", 1))
            checks.append(lambda obj, p=path, v=value: field_value(obj, p) != v)
        elif "=" in term:
            path, value = (s.strip() for s in term.replace("==", "=").split("=", 1))
            checks.append(lambda obj, p=path, v=value: field_value(obj, p) == v)
        else:
            raise PatchError(f"invalid field selector {term!r}", 400)
    return lambda obj: all(check(obj) for check in checks)


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """A structured LabelSelector (matchLabels, matchExpressions) against labels: None selects
    nothing (a PDB without a selector), {} everything. The deployment tests match the shipped
    manifests' selectors with it too."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression.get("key"), expression.get("operator")
        values = set(expression.get("values") or [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
