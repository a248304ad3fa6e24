"""YAML documents that remember where each field was written, and refuse duplicate keys.

PyYAML's `safe_load_all` keeps the last of two equal keys and forgets every position, so a
policy author who wrote `target:` twice is told nothing, and a problem found later can only be
named by its path. `kubectl apply` refuses such a file (its `--validate=strict`, the default
since Kubernetes 1.25, fails on "unknown or duplicate fields"), so a policy file the components
read must not quietly mean something else: a duplicate key is a problem of its document, with
the lines of both keys.

Each document keeps a map from a field's path, written as `tas.policies.model` writes problem
paths (`spec.strategies.dontschedule.rules[0].operator`), to its line (counted from 1), so every
problem can say `file:line`. JSON is YAML here too (a JSON text is one flow document).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_MERGE = "<<"


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A key written twice in one mapping: YAML would keep only the later value."""

    path: str
    line: int
    first_line: int

    @property
    def why(self) -> str:
        """What is wrong, for a problem or a log line that names the path and line itself."""
        return (
            f"duplicate key (also on line {self.first_line}): YAML keeps only this one, and "
            "kubectl apply refuses the file"
        )


@dataclass(frozen=True)
class Document:
    """One YAML document: its data, its number in the text (from 1) and where its fields are."""

    body: object
    number: int
    lines: Mapping[str, int]
    duplicates: tuple[Duplicate, ...]

    def line_of(self, path: str) -> int:
        """The line of `path`, or of its nearest written ancestor (a missing field's parent)."""
        while path not in self.lines:
            path = _parent(path)
        return self.lines[path]


def read_documents(text: str) -> Iterator[Document]:
    """Every document of `text`, in order; raises `yaml.YAMLError` where the text is not YAML."""
    loader = yaml.SafeLoader(text)
    try:
        number = 0
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # check_node said there is one; for the type checker
                break
            number += 1
            lines: dict[str, int] = {"": node.start_mark.line + 1}
            duplicates: list[Duplicate] = []
            _walk(node, "", lines, duplicates, frozenset())
            body = loader.construct_document(node)
            yield Document(body, number, lines, tuple(duplicates))
    finally:
        loader.dispose()


def _walk(
    node: Node,
    path: str,
    lines: dict[str, int],
    duplicates: list[Duplicate],
    above: frozenset[int],
) -> None:
    """Record the line of every field below `node`; `above` guards against recursive aliases."""
    if id(node) in above:
        return
    above = above | {id(node)}
    if isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            child = f"{path}[{index}]"
            lines[child] = item.start_mark.line + 1
            _walk(item, child, lines, duplicates, above)
    elif isinstance(node, MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                continue
            key = str(key_node.value)
            if key == _MERGE:  # `<<: *anchor` merges the anchored keys into this mapping
                for merged in _merged(value_node):
                    _walk(merged, path, lines, duplicates, above)
                continue
            child = f"{path}.{key}" if path else key
            line = key_node.start_mark.line + 1
            if key in seen:
                duplicates.append(Duplicate(child, line, seen[key]))
            seen.setdefault(key, line)
            lines[child] = line  # the later key is the one YAML keeps
            _walk(value_node, child, lines, duplicates, above)


def _merged(node: Node) -> list[Node]:
    if isinstance(node, SequenceNode):
        return [item for item in node.value if isinstance(item, MappingNode)]
    return [node] if isinstance(node, MappingNode) else []


def _parent(path: str) -> str:
    """`a.b[2]` -> `a.b` -> `a` -> `` (the document)."""
    cut = max(path.rfind("."), path.rfind("["))
    return path[:cut] if cut > 0 else ""
