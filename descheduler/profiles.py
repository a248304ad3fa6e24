"""One profile of the policy file: which plugins it enables at which extension point, and the
arguments of each, resolved through the plugin registry into values a cycle cannot fail on.

A plugin enabled without a `pluginConfig` entry gets its defaults, or the "is required"
problem an empty `args` mapping would give; the DefaultEvictor's arguments become the
profile's evictor rules.

One profile field is this project's own: `ownerCooldown` says which plugins the per-owner
cooldown (and one pod per owner per cycle) guards: `TelemetryPlugins` (the default: TASViolations
and LoadAware, whose evictions follow metrics that can flap) or `AllPlugins` (the classic
upstream plugins too, which otherwise behave exactly as upstream's).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from descheduler.args import FieldReader
from descheduler.framework import RUN_POINTS, AnyPlugin, ExtensionPoint, Plugin, PluginName
from descheduler.plugins import default_evictor
from descheduler.plugins.default_evictor import EvictorArgs
from descheduler.plugins.registry import Registry

#: Accepted for familiarity with upstream; the ordering and the evictor are fixed here.
FIXED_POINTS = ("sort", "evict", "preSort")

_A = TypeVar("_A")


class OwnerCooldown(enum.StrEnum):
    TELEMETRY_PLUGINS = "TelemetryPlugins"
    ALL_PLUGINS = "AllPlugins"


@dataclass(frozen=True)
class Profile:
    name: str
    evictor: EvictorArgs
    deschedule: tuple[AnyPlugin, ...]
    balance: tuple[AnyPlugin, ...]
    args: Mapping[PluginName, object]
    owner_cooldown: OwnerCooldown = OwnerCooldown.TELEMETRY_PLUGINS

    def guards_owners(self, plugin: AnyPlugin) -> bool:
        """Whether the per-owner cooldown applies to the plugin's evictions."""
        return plugin.telemetry or self.owner_cooldown is OwnerCooldown.ALL_PLUGINS

    def args_of(self, plugin: Plugin[_A]) -> _A:
        found = self.args.get(plugin.name)
        return found if isinstance(found, plugin.args_type) else plugin.args_type()

    def enables(self, plugin: AnyPlugin) -> bool:
        return any(p.name == plugin.name for p in (*self.deschedule, *self.balance))

    def enabled_at(self, point: ExtensionPoint) -> tuple[AnyPlugin, ...]:
        if point is ExtensionPoint.DESCHEDULE:
            return self.deschedule
        if point is ExtensionPoint.BALANCE:
            return self.balance
        return ()


def _resolve(registry: Registry, raw: object, path: str, problems: list[str]) -> AnyPlugin | None:
    plugin = registry.get(raw)
    if plugin is None:
        known = ", ".join(registry.known_names())
        problems.append(f"{path}: unknown plugin {raw!r}; known: {known}")
    return plugin


def _enabled(
    plugins: FieldReader,
    point: ExtensionPoint,
    registry: Registry,
    problems: list[str],
) -> tuple[AnyPlugin, ...]:
    section = FieldReader(plugins.get(point), plugins.at(point), problems)
    names = section.get("enabled") or []
    section.get("disabled")  # upstream allows it; nothing is enabled by default here anyway
    section.finish()
    if not isinstance(names, list):
        problems.append(f"{section.at('enabled')}: must be a list of plugin names")
        return ()
    allowed = registry.serving(point)
    found: list[AnyPlugin] = []
    for index, raw in enumerate(names):
        where = f"{section.at('enabled')}[{index}]"
        plugin = _resolve(registry, raw, where, problems)
        if plugin is None:
            continue
        if plugin not in allowed:
            points = ", ".join(p.name for p in allowed)
            problems.append(
                f"{where}: {plugin.name} is not a {point} plugin; {point} takes {points}"
            )
            continue
        if plugin in found:
            problems.append(f"{where}: {plugin.name} is enabled twice")
            continue
        found.append(plugin)
    return tuple(found)


def _plugin_args(
    r: FieldReader, registry: Registry, problems: list[str]
) -> dict[PluginName, object]:
    args: dict[PluginName, object] = {}
    for c in r.each("pluginConfig"):
        plugin = _resolve(registry, c.get("name"), c.at("name"), problems)
        arg_reader = FieldReader(c.get("args"), c.at("args"), problems)
        c.finish()
        if plugin is None:
            continue
        if plugin.name in args:
            c.problem(c.at("name"), f"{plugin.name} is configured twice")
            continue
        args[plugin.name] = plugin.parse_args(arg_reader)
        arg_reader.finish()
    return args


def parse_profile(raw: object, path: str, problems: list[str], *, registry: Registry) -> Profile:
    r = FieldReader(raw, path, problems)
    name = r.get("name")
    if not isinstance(name, str) or not name:
        r.problem(r.at("name"), "a profile name is required")
        name = ""
    args = _plugin_args(r, registry, problems)
    cooldown = r.choice(
        "ownerCooldown",
        tuple(c.value for c in OwnerCooldown),
        OwnerCooldown.TELEMETRY_PLUGINS.value,
    )
    plugins = FieldReader(r.get("plugins"), r.at("plugins"), problems)
    enabled: dict[ExtensionPoint, tuple[AnyPlugin, ...]] = {
        point: _enabled(plugins, point, registry, problems) for point in ExtensionPoint
    }
    for point in FIXED_POINTS:
        plugins.get(point)
    plugins.finish()
    r.finish()
    running = [(point, p) for point in RUN_POINTS for p in enabled[point]]
    for _, plugin in running:
        if plugin.name not in args:
            # Defaults, or a "required" problem, exactly as an empty args mapping would give.
            where = f"{path}.pluginConfig[{plugin.name}].args"
            args[plugin.name] = plugin.parse_args(FieldReader({}, where, problems))
    names = {p.name for _, p in running}
    for point, plugin in running:
        for needed, why in plugin.requires.items():
            if needed not in names:
                r.problem(r.at(f"plugins.{point}"), f"{why}: enable both")
        if plugin.requires_one_of and not names & set(plugin.requires_one_of):
            wanted = " or ".join(plugin.requires_one_of)
            r.problem(
                r.at(f"plugins.{point}"),
                f"{plugin.name} acts on what {wanted} classifies: enable one of them too",
            )
    evictor = args.get(default_evictor.NAME)
    return Profile(
        name=name,
        evictor=evictor if isinstance(evictor, EvictorArgs) else EvictorArgs(),
        deschedule=enabled[ExtensionPoint.DESCHEDULE],
        balance=enabled[ExtensionPoint.BALANCE],
        args=args,
        owner_cooldown=OwnerCooldown(cooldown),
    )
