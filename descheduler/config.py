"""The descheduler's policy file: an upstream-shaped `descheduler/v1alpha2` DeschedulerPolicy.

Users of the upstream descheduler recognise the shape (profiles, pluginConfig, plugins.deschedule
and plugins.balance, the `maxNoOfPodsToEvict*` limits); the TAS-specific plugins have our own
names (`TASViolations`, `LoadAware`, `SoftTainter`). The file is validated once, here, into frozen
values, so a cycle cannot fail on configuration. Every problem is reported at once, each with
its path (`profiles[0].pluginConfig[1].args.thresholds.cpu`).

Every upstream top-level field is read: `nodeSelector` (a label selector string), the
`maxNoOfPodsToEvict*` limits, `evictionFailureEventNotification`, `gracePeriodSeconds`, and the
metrics providers (`metricsCollector.enabled`, `metricsProviders` with `KubernetesMetrics` or
`Prometheus` and its `url`). A Prometheus provider authenticates with the descheduler's own
ServiceAccount token, as upstream does without `authToken`; `authToken.secretReference` is not
supported (it would need read access to Secrets). Beyond upstream: `evictionCooldownSeconds`
and `circuitBreaker.maxViolatingNodeShare`.

This module reads the document and its top-level fields; `descheduler.usage_sources` reads the
metrics providers, `descheduler.profiles` each profile, and each plugin (`descheduler.plugins`)
its own arguments.

Errors:
    ConfigError        the file cannot be used; `problems` lists every reason
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from descheduler.args import FieldReader
from descheduler.evictor import Limits
from descheduler.framework import AnyPlugin
from descheduler.plugins.registry import Registry, default_registry
from descheduler.profiles import Profile, parse_profile
from descheduler.usage_sources import check_usage_sources, parse_metrics_providers
from tas.cluster.model import LabelSelector
from tas.problems import ProblemsError

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"

DEFAULT_COOLDOWN_SECONDS = 300.0
DEFAULT_MAX_VIOLATING_SHARE = 0.5


class ConfigError(ProblemsError):
    """The policy file cannot be used; `problems` lists every reason, each with its path."""


@dataclass(frozen=True)
class DeschedulerConfig:
    profiles: tuple[Profile, ...]
    limits: Limits = field(default_factory=Limits)
    #: Nodes in scope: those whose labels match (upstream's `nodeSelector: "k=v,k2 in (a,b)"`).
    node_selector: LabelSelector | None = None
    #: Warning Events for evictions refused, failed or stopped by a limit.
    eviction_failure_events: bool = False
    #: Passed with every eviction (None: the pod's own grace period).
    grace_period_seconds: int | None = None
    #: The metrics server is a usage source (metricsCollector or metricsProviders).
    metrics_server: bool = False
    #: The Prometheus of `metricsProviders`, for `metricsUtilization` queries.
    prometheus_url: str | None = None
    #: An owner evicted from is left alone this long (0 disables the cooldown).
    cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS
    #: More than this share of in-scope nodes violating at once stops every eviction.
    max_violating_node_share: float = DEFAULT_MAX_VIOLATING_SHARE

    def enables(self, plugin: AnyPlugin) -> bool:
        return any(profile.enables(plugin) for profile in self.profiles)


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
    node_selector = r.node_selector()
    failure_events = r.boolean("evictionFailureEventNotification", False)
    grace = r.integer("gracePeriodSeconds", None)
    metrics_server, prometheus = parse_metrics_providers(r)
    check_usage_sources(profiles, prometheus, r)
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
        eviction_failure_events=failure_events,
        grace_period_seconds=grace,
        metrics_server=metrics_server,
        prometheus_url=prometheus,
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
