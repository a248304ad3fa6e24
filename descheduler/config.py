"""The descheduler's policy file: an upstream-shaped `descheduler/v1alpha2` DeschedulerPolicy.

Users of the upstream descheduler recognise the shape (profiles, pluginConfig, plugins.deschedule
and plugins.balance, the `maxNoOfPodsToEvict*` limits); the TAS-specific plugins have our own
names (`TASViolations`, `LoadAware`, `SoftTainter`). The file is validated once, here, into frozen
values, so a cycle cannot fail on configuration. Every problem is reported at once, each with
its path (`profiles[0].pluginConfig[1].args.thresholds.cpu`).

This module reads the document and its top-level fields; `descheduler.profiles` reads each
profile, and each plugin (`descheduler.plugins`) reads its own arguments.

Errors:
    ConfigError        the file cannot be used; `problems` lists every reason
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from descheduler.args import FieldReader
from descheduler.evictor import Limits
from descheduler.framework import AnyPlugin
from descheduler.plugins.registry import Registry, default_registry
from descheduler.profiles import Profile, parse_profile

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"

DEFAULT_COOLDOWN_SECONDS = 300.0
DEFAULT_MAX_VIOLATING_SHARE = 0.5


class ConfigError(Exception):
    """The policy file cannot be used; `problems` lists every reason, each with its path."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class DeschedulerConfig:
    profiles: tuple[Profile, ...]
    limits: Limits = field(default_factory=Limits)
    #: Nodes in scope: those whose labels match (upstream's `nodeSelector: "k=v,k2=v2"`).
    node_selector: Mapping[str, str] = field(default_factory=dict)
    #: An owner evicted from is left alone this long (0 disables the cooldown).
    cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS
    #: More than this share of in-scope nodes violating at once stops every eviction.
    max_violating_node_share: float = DEFAULT_MAX_VIOLATING_SHARE

    def enables(self, plugin: AnyPlugin) -> bool:
        return any(profile.enables(plugin) for profile in self.profiles)


def _parse_node_selector(raw: object, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        pairs = [(str(k), str(v)) for k, v in raw.items()]
    elif isinstance(raw, str):
        pairs = []
        for part in filter(None, (p.strip() for p in raw.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not key:
                problems.append(f"nodeSelector: {part!r} must be key=value")
                continue
            pairs.append((key, value))
    else:
        problems.append(f"nodeSelector: must be 'k=v,k2=v2' or a mapping, got {raw!r}")
        return {}
    return dict(pairs)


def parse_config(document: object, *, registry: Registry | None = None) -> DeschedulerConfig:
    """Validate one DeschedulerPolicy document; raises `ConfigError` listing every problem.

    Plugin names resolve through `registry` (by default, every built-in plugin).
    """
    plugins = registry if registry is not None else default_registry()
    problems: list[str] = []
    r = FieldReader(document, "", problems)
    api_version = r.get("apiVersion")
    if api_version != API_VERSION:
        r.problem("apiVersion", f"expected {API_VERSION!r}, got {api_version!r}")
    kind = r.get("kind")
    if kind != KIND:
        r.problem("kind", f"expected {KIND!r}, got {kind!r}")
    raw_profiles = r.get("profiles")
    profiles: list[Profile] = []
    if not isinstance(raw_profiles, list) or not raw_profiles:
        r.problem("profiles", "at least one profile is required")
    else:
        for index, raw in enumerate(raw_profiles):
            profiles.append(parse_profile(raw, f"profiles[{index}]", problems, registry=plugins))
        names = [p.name for p in profiles]
        for name in {n for n in names if names.count(n) > 1 and n}:
            r.problem("profiles", f"profile name {name!r} is used twice")
    limits = Limits(
        per_node=r.integer("maxNoOfPodsToEvictPerNode", None),
        per_namespace=r.integer("maxNoOfPodsToEvictPerNamespace", None),
        total=r.integer("maxNoOfPodsToEvictTotal", None),
    )
    node_selector = _parse_node_selector(r.get("nodeSelector"), problems)
    cooldown = r.number("evictionCooldownSeconds", DEFAULT_COOLDOWN_SECONDS, low=0, high=86400 * 7)
    breaker = FieldReader(r.get("circuitBreaker"), "circuitBreaker", problems)
    share = breaker.number("maxViolatingNodeShare", DEFAULT_MAX_VIOLATING_SHARE, low=0, high=1)
    breaker.finish()
    r.finish()
    if problems:
        raise ConfigError(problems)
    return DeschedulerConfig(
        profiles=tuple(profiles),
        limits=limits,
        node_selector=node_selector,
        cooldown_seconds=cooldown,
        max_violating_node_share=share,
    )


def load_config_text(
    text: str, *, source: str = "", registry: Registry | None = None
) -> DeschedulerConfig:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError([f"{source}: not valid YAML: {error}"]) from error
    try:
        return parse_config(document, registry=registry)
    except ConfigError as error:
        if not source:
            raise
        raise ConfigError([f"{source}: {p}" for p in error.problems]) from error


def load_config_file(path: Path, *, registry: Registry | None = None) -> DeschedulerConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot read: {error}"]) from error
    return load_config_text(text, source=str(path), registry=registry)
