"""The plugins a policy file may name, and how a name finds its plugin.

`PLUGINS` is the whole set, in the order error messages list them: adding a plugin is a module
in this package and one line here. The config reader resolves names through a `Registry`; a
profile keeps the plugins it resolved, and the cycle runs those. A test (or an embedder) builds
`default_registry()`, registers its own plugin and parses a policy with it; nothing else changes.

Errors:
    RegistryError      a plugin's name or alias is taken already
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from descheduler.framework import AnyPlugin, ExtensionPoint
from descheduler.plugins import (
    default_evictor,
    high_node_utilization,
    inter_pod_anti_affinity,
    load_aware,
    low_node_utilization,
    make_room,
    node_affinity,
    node_taints,
    pod_life_time,
    remove_duplicates,
    remove_failed_pods,
    soft_tainter,
    tas_violations,
    too_many_restarts,
    topology_spread,
)

PLUGINS: tuple[AnyPlugin, ...] = (
    default_evictor.PLUGIN,
    tas_violations.PLUGIN,
    node_affinity.PLUGIN,
    node_taints.PLUGIN,
    inter_pod_anti_affinity.PLUGIN,
    too_many_restarts.PLUGIN,
    pod_life_time.PLUGIN,
    remove_failed_pods.PLUGIN,
    remove_duplicates.PLUGIN,
    topology_spread.PLUGIN,
    low_node_utilization.PLUGIN,
    high_node_utilization.PLUGIN,
    load_aware.PLUGIN,
    make_room.PLUGIN,
    soft_tainter.PLUGIN,
)


class RegistryError(ValueError):
    """A plugin's name or alias is already registered."""


class Registry:
    """Plugins by name and alias, in registration order."""

    def __init__(self, plugins: Iterable[AnyPlugin] = ()) -> None:
        self._plugins: list[AnyPlugin] = []
        self._by_name: dict[str, AnyPlugin] = {}
        for plugin in plugins:
            self.register(plugin)

    def register(self, plugin: AnyPlugin) -> None:
        for name in (plugin.name, *plugin.aliases):
            if name in self._by_name:
                raise RegistryError(f"plugin name {name!r} is registered already")
        self._plugins.append(plugin)
        for name in (plugin.name, *plugin.aliases):
            self._by_name[name] = plugin

    def __iter__(self) -> Iterator[AnyPlugin]:
        return iter(self._plugins)

    def get(self, name: object) -> AnyPlugin | None:
        """The plugin a name or alias stands for, or None."""
        return self._by_name.get(name) if isinstance(name, str) else None

    def known_names(self) -> list[str]:
        """Every name the policy file may use: the names, then the aliases."""
        return [
            *(p.name for p in self._plugins),
            *(alias for p in self._plugins for alias in p.aliases),
        ]

    def serving(self, point: ExtensionPoint) -> tuple[AnyPlugin, ...]:
        return tuple(p for p in self._plugins if point in p.points)


def default_registry() -> Registry:
    """A fresh registry of every built-in plugin (fresh, so registering into it is local)."""
    return Registry(PLUGINS)
