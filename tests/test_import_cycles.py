"""No import cycle anywhere in the project, module by module.

import-linter's `acyclic_siblings` contract (pyproject.toml) keeps sibling packages acyclic;
this looks at every module of every project package at once, across packages too, with the
import graph import-linter itself builds (grimp), imports under `TYPE_CHECKING` included: a
cycle hidden behind one is still a cycle in the design (the descheduler's evictor, DefaultEvictor
and framework were one).

Covered: the project's modules form no cycle; the finder reports a cycle it is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import grimp

PACKAGES = (
    "tas",
    "tas_cli",
    "tas_inmemory",
    "extender",
    "policy_controller",
    "descheduler",
    "tas_dashboard",
    "tas_simulator",
)


def import_cycles(
    modules: Iterable[str], imports: Callable[[str], Iterable[str]]
) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion), each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(imports(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, pending = work[-1]
            step = next(pending, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(imports(step)))))
                elif step in on_stack:
                    low[module] = min(low[module], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_no_module_of_the_project_imports_itself_in_a_circle() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    ours = {m for m in graph.modules if m.split(".")[0] in PACKAGES}

    def imports(module: str) -> set[str]:
        return graph.find_modules_directly_imported_by(module) & ours

    assert import_cycles(ours, imports) == []


def test_the_finder_reports_the_cycle_it_is_shown() -> None:
    edges = {
        "evictor": {"plugins.default_evictor", "state"},
        "plugins.default_evictor": {"framework"},
        "framework": {"evictor", "state"},
        "state": set(),
        "cycle": {"evictor", "framework"},
    }
    assert import_cycles(edges, edges.__getitem__) == [
        ["evictor", "framework", "plugins.default_evictor"]
    ]
    edges["framework"] = {"state"}
    assert import_cycles(edges, edges.__getitem__) == []
