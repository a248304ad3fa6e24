"""The descheduler's policy file: an upstream-shaped `descheduler/v1alpha2` DeschedulerPolicy.

Users of the upstream descheduler recognise the shape (profiles, pluginConfig, plugins.deschedule
and plugins.balance, the `maxNoOfPodsToEvict*` limits); the TAS-specific plugins have our own
names (`TASViolations`, `LoadAware`, `SoftTainter`). The file is validated once, here, into frozen
values, so a cycle cannot fail on configuration. Every problem is reported at once, each with
its path (`profiles[0].pluginConfig[1].args.thresholds.cpu`).

Errors:
    ConfigError        the file cannot be used; `problems` lists every reason
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml

API_VERSION = "descheduler/v1alpha2"
KIND = "DeschedulerPolicy"

DEFAULT_COOLDOWN_SECONDS = 300.0
DEFAULT_MAX_VIOLATING_SHARE = 0.5
DEFAULT_TAINT_PREFIX = "telemetry.aware.scheduling"


class ConfigError(Exception):
    """The policy file cannot be used; `problems` lists every reason, each with its path."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(self.problems))


class Plugin(enum.StrEnum):
    DEFAULT_EVICTOR = "DefaultEvictor"
    TAS_VIOLATIONS = "TASViolations"
    NODE_AFFINITY = "RemovePodsViolatingNodeAffinity"
    NODE_TAINTS = "RemovePodsViolatingNodeTaints"
    INTER_POD_ANTI_AFFINITY = "RemovePodsViolatingInterPodAntiAffinity"
    TOO_MANY_RESTARTS = "RemovePodsHavingTooManyRestarts"
    POD_LIFE_TIME = "PodLifeTime"
    REMOVE_DUPLICATES = "RemoveDuplicates"
    LOAD_AWARE = "LoadAware"
    SOFT_TAINTER = "SoftTainter"


#: Upstream's name for load-aware rebalancing, accepted as an alias of `LoadAware`.
ALIASES = {"LowNodeUtilization": Plugin.LOAD_AWARE}

DESCHEDULE_PLUGINS = (
    Plugin.TAS_VIOLATIONS,
    Plugin.NODE_AFFINITY,
    Plugin.NODE_TAINTS,
    Plugin.INTER_POD_ANTI_AFFINITY,
    Plugin.TOO_MANY_RESTARTS,
    Plugin.POD_LIFE_TIME,
)
BALANCE_PLUGINS = (Plugin.REMOVE_DUPLICATES, Plugin.LOAD_AWARE, Plugin.SOFT_TAINTER)


class Signal(enum.StrEnum):
    """A node's load as the load-aware strategy reads it: a built-in 0..1 metric, as 0..100."""

    CPU_UTILIZATION = "cpu_utilization"
    CPU_PRESSURE = "cpu_pressure"
    MEMORY_PRESSURE = "memory_pressure"
    MEMORY_UTILIZATION = "memory_utilization"
    IO_PRESSURE = "io_pressure"
    #: Utilization while the fleet is not busy, pressure (only where busy) when it is.
    CPU_COMBINED = "cpu_combined"


class DeviationPreset(enum.StrEnum):
    LOW = "Low"
    MEDIUM = "Medium"
    HIGH = "High"
    ASYMMETRIC_LOW = "AsymmetricLow"
    ASYMMETRIC_MEDIUM = "AsymmetricMedium"
    ASYMMETRIC_HIGH = "AsymmetricHigh"


#: Preset -> (thresholds, targetThresholds), as the OpenShift descheduler names them.
PRESETS: Mapping[DeviationPreset, tuple[float, float]] = {
    DeviationPreset.LOW: (10, 10),
    DeviationPreset.MEDIUM: (20, 20),
    DeviationPreset.HIGH: (30, 30),
    DeviationPreset.ASYMMETRIC_LOW: (0, 10),
    DeviationPreset.ASYMMETRIC_MEDIUM: (0, 20),
    DeviationPreset.ASYMMETRIC_HIGH: (0, 30),
}


class ViolationSource(enum.StrEnum):
    """Where TASViolations learns that a node violates a policy's deschedule rules."""

    METRICS = "Metrics"  # the rules, evaluated here on fresh metric values
    LABELS = "Labels"  # the node label `<policy>=violating` the policy controller writes
    BOTH = "Both"  # both must agree: the label, confirmed by fresh metrics


@dataclass(frozen=True, slots=True)
class NamespaceFilter:
    include: frozenset[str] = frozenset()
    exclude: frozenset[str] = frozenset()

    def allows(self, namespace: str) -> bool:
        if self.include and namespace not in self.include:
            return False
        return namespace not in self.exclude


@dataclass(frozen=True, slots=True)
class PriorityThreshold:
    value: int | None = None
    name: str | None = None


@dataclass(frozen=True, slots=True)
class EvictorArgs:
    """The DefaultEvictor arguments (upstream names), plus namespaces for every strategy."""

    evict_system_critical_pods: bool = False
    evict_failed_bare_pods: bool = False
    evict_local_storage_pods: bool = False
    evict_daemonset_pods: bool = False
    ignore_pvc_pods: bool = False
    ignore_pods_without_pdb: bool = False
    node_fit: bool = True
    priority_threshold: PriorityThreshold | None = None
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class TASViolationsArgs:
    source: ViolationSource = ViolationSource.METRICS
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class NodeAffinityArgs:
    node_affinity_type: tuple[str, ...] = ("requiredDuringSchedulingIgnoredDuringExecution",)
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class NodeTaintsArgs:
    include_prefer_no_schedule: bool = False
    excluded_taints: tuple[str, ...] = ()
    included_taints: tuple[str, ...] = ()
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class InterPodAntiAffinityArgs:
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class TooManyRestartsArgs:
    pod_restart_threshold: int = 0
    including_init_containers: bool = False
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class PodLifeTimeArgs:
    max_pod_life_time_seconds: int = 0
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class RemoveDuplicatesArgs:
    exclude_owner_kinds: tuple[str, ...] = ()
    namespaces: NamespaceFilter = NamespaceFilter()


@dataclass(frozen=True, slots=True)
class LoadAwareArgs:
    thresholds: Mapping[Signal, float] = field(default_factory=dict)
    target_thresholds: Mapping[Signal, float] = field(default_factory=dict)
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0
    namespaces: NamespaceFilter = NamespaceFilter()

    @property
    def signals(self) -> tuple[Signal, ...]:
        return tuple(self.thresholds)


@dataclass(frozen=True, slots=True)
class SoftTainterArgs:
    taint_key_prefix: str = DEFAULT_TAINT_PREFIX

    @property
    def taint_key(self) -> str:
        return f"{self.taint_key_prefix}/overutilized"


PluginArgs = (
    EvictorArgs
    | TASViolationsArgs
    | NodeAffinityArgs
    | NodeTaintsArgs
    | InterPodAntiAffinityArgs
    | TooManyRestartsArgs
    | PodLifeTimeArgs
    | RemoveDuplicatesArgs
    | LoadAwareArgs
    | SoftTainterArgs
)
_A = TypeVar("_A", bound=PluginArgs)


@dataclass(frozen=True)
class Profile:
    name: str
    evictor: EvictorArgs
    deschedule: tuple[Plugin, ...]
    balance: tuple[Plugin, ...]
    args: Mapping[Plugin, PluginArgs]

    def args_of(self, plugin: Plugin, kind: type[_A]) -> _A:
        found = self.args.get(plugin)
        return found if isinstance(found, kind) else kind()

    def enables(self, plugin: Plugin) -> bool:
        return plugin in self.deschedule or plugin in self.balance


@dataclass(frozen=True, slots=True)
class Limits:
    per_node: int | None = None
    per_namespace: int | None = None
    total: int | None = None


@dataclass(frozen=True)
class DeschedulerConfig:
    profiles: tuple[Profile, ...]
    limits: Limits = Limits()
    #: Nodes in scope: those whose labels match (upstream's `nodeSelector: "k=v,k2=v2"`).
    node_selector: Mapping[str, str] = field(default_factory=dict)
    #: An owner evicted from is left alone this long (0 disables the cooldown).
    cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS
    #: More than this share of in-scope nodes violating at once stops every eviction.
    max_violating_node_share: float = DEFAULT_MAX_VIOLATING_SHARE

    def enables(self, plugin: Plugin) -> bool:
        return any(profile.enables(plugin) for profile in self.profiles)


# ---------------------------------------------------------------------------------- parsing


class _Reader:
    """Reads one mapping, noting problems with their path instead of raising."""

    def __init__(self, raw: object, path: str, problems: list[str]) -> None:
        self.path = path
        self.problems = problems
        self.seen: set[str] = set()
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            self.problem(path, f"must be a mapping, got {type(raw).__name__}")
            raw = {}
        self.raw: Mapping[str, Any] = raw

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def at(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str) -> Any:
        self.seen.add(key)
        return self.raw.get(key)

    def boolean(self, key: str, default: bool) -> bool:
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problem(self.at(key), f"must be true or false, got {value!r}")
            return default
        return value

    def integer(self, key: str, default: int | None, *, minimum: int = 0) -> int | None:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(self.at(key), f"must be an integer, got {value!r}")
            return default
        if value < minimum:
            self.problem(self.at(key), f"must be at least {minimum}, got {value}")
            return default
        return value

    def number(self, key: str, default: float, *, low: float, high: float) -> float:
        value = self.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.problem(self.at(key), f"must be a number, got {value!r}")
            return default
        if not low <= value <= high:
            self.problem(self.at(key), f"must be between {low:g} and {high:g}, got {value}")
            return default
        return float(value)

    def strings(self, key: str) -> tuple[str, ...]:
        value = self.get(key)
        if value is None:
            return ()
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problem(self.at(key), f"must be a list of strings, got {value!r}")
            return ()
        return tuple(value)

    def namespaces(self, key: str = "namespaces") -> NamespaceFilter:
        inner = _Reader(self.get(key), self.at(key), self.problems)
        result = NamespaceFilter(
            frozenset(inner.strings("include")), frozenset(inner.strings("exclude"))
        )
        inner.finish()
        if result.include and result.exclude:
            self.problem(self.at(key), "give include or exclude, not both")
        return result

    def finish(self) -> None:
        for key in self.raw:
            if key not in self.seen:
                self.problem(self.at(str(key)), "unknown field")


def _parse_evictor(r: _Reader) -> EvictorArgs:
    threshold = None
    raw = r.get("priorityThreshold")
    if raw is not None:
        t = _Reader(raw, r.at("priorityThreshold"), r.problems)
        value = t.integer("value", None, minimum=-(2**31))
        name = t.get("name")
        if name is not None and not isinstance(name, str):
            t.problem(t.at("name"), f"must be a priority class name, got {name!r}")
            name = None
        if value is not None and name:
            t.problem(t.path, "give value or name, not both")
        elif value is None and not name:
            t.problem(t.path, "give a value or a name")
        t.finish()
        threshold = PriorityThreshold(value=value, name=name or None)
    return EvictorArgs(
        evict_system_critical_pods=r.boolean("evictSystemCriticalPods", False),
        evict_failed_bare_pods=r.boolean("evictFailedBarePods", False),
        evict_local_storage_pods=r.boolean("evictLocalStoragePods", False),
        evict_daemonset_pods=r.boolean("evictDaemonSetPods", False),
        ignore_pvc_pods=r.boolean("ignorePvcPods", False),
        ignore_pods_without_pdb=r.boolean("ignorePodsWithoutPDB", False),
        node_fit=r.boolean("nodeFit", True),
        priority_threshold=threshold,
        namespaces=r.namespaces(),
    )


def _parse_signal_map(r: _Reader, key: str) -> dict[Signal, float]:
    raw = r.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        r.problem(r.at(key), f"must be a mapping of signal to percent, got {raw!r}")
        return {}
    known = ", ".join(s.value for s in Signal)
    result: dict[Signal, float] = {}
    for name, value in raw.items():
        where = f"{r.at(key)}.{name}"
        if name not in {s.value for s in Signal}:
            r.problem(where, f"unknown signal {name!r}; known: {known}")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
            r.problem(where, f"must be a percentage 0..100, got {value!r}")
            continue
        result[Signal(name)] = float(value)
    return result


def _parse_load_aware(r: _Reader) -> LoadAwareArgs:
    thresholds = _parse_signal_map(r, "thresholds")
    targets = _parse_signal_map(r, "targetThresholds")
    deviation = r.boolean("useDeviationThresholds", False)
    preset_raw = r.get("deviationThresholds")
    resources = r.strings("resources")
    number_of_nodes = r.integer("numberOfNodes", 0) or 0
    namespaces = r.namespaces("evictableNamespaces") if "evictableNamespaces" in r.raw else None
    if namespaces is None:
        namespaces = r.namespaces()
    if preset_raw is not None:
        if preset_raw not in {p.value for p in DeviationPreset}:
            known = ", ".join(p.value for p in DeviationPreset)
            r.problem(r.at("deviationThresholds"), f"unknown preset {preset_raw!r}; known: {known}")
        elif thresholds or targets:
            r.problem(r.at("deviationThresholds"), "give a preset or thresholds, not both")
        else:
            low, high = PRESETS[DeviationPreset(preset_raw)]
            signals: list[Signal] = []
            for index, name in enumerate(resources or [Signal.CPU_COMBINED.value]):
                if name in {s.value for s in Signal}:
                    signals.append(Signal(name))
                else:
                    r.problem(f"{r.at('resources')}[{index}]", f"unknown signal {name!r}")
            thresholds = dict.fromkeys(signals, low)
            targets = dict.fromkeys(signals, high)
            deviation = True
    elif resources:
        r.problem(r.at("resources"), "only used with deviationThresholds")
    if preset_raw is None and not thresholds and not targets:
        r.problem(r.path, "thresholds and targetThresholds (or deviationThresholds) are required")
    elif set(thresholds) != set(targets):
        r.problem(r.path, "thresholds and targetThresholds must name the same signals")
    elif not deviation:
        for signal, low in thresholds.items():
            if low > targets[signal]:
                r.problem(
                    f"{r.at('thresholds')}.{signal}",
                    f"{low:g} is above targetThresholds.{signal} {targets[signal]:g}",
                )
    return LoadAwareArgs(
        thresholds=thresholds,
        target_thresholds=targets,
        use_deviation_thresholds=deviation,
        number_of_nodes=number_of_nodes,
        namespaces=namespaces,
    )


def _parse_tas_violations(r: _Reader) -> TASViolationsArgs:
    raw = r.get("violationSource")
    source = ViolationSource.METRICS
    if raw is not None:
        if raw in {s.value for s in ViolationSource}:
            source = ViolationSource(raw)
        else:
            known = ", ".join(s.value for s in ViolationSource)
            r.problem(r.at("violationSource"), f"unknown source {raw!r}; known: {known}")
    return TASViolationsArgs(source=source, namespaces=r.namespaces())


def _parse_node_affinity(r: _Reader) -> NodeAffinityArgs:
    kinds = r.strings("nodeAffinityType") or NodeAffinityArgs().node_affinity_type
    for index, kind in enumerate(kinds):
        if kind != "requiredDuringSchedulingIgnoredDuringExecution":
            r.problem(
                f"{r.at('nodeAffinityType')}[{index}]",
                f"unsupported {kind!r}; only requiredDuringSchedulingIgnoredDuringExecution",
            )
    return NodeAffinityArgs(node_affinity_type=kinds, namespaces=r.namespaces())


def _parse_node_taints(r: _Reader) -> NodeTaintsArgs:
    return NodeTaintsArgs(
        include_prefer_no_schedule=r.boolean("includePreferNoSchedule", False),
        excluded_taints=r.strings("excludedTaints"),
        included_taints=r.strings("includedTaints"),
        namespaces=r.namespaces(),
    )


def _parse_restarts(r: _Reader) -> TooManyRestartsArgs:
    threshold = r.integer("podRestartThreshold", None, minimum=1)
    if threshold is None and r.raw.get("podRestartThreshold") is None:
        r.problem(r.at("podRestartThreshold"), "is required")
    return TooManyRestartsArgs(
        pod_restart_threshold=threshold or 1,
        including_init_containers=r.boolean("includingInitContainers", False),
        namespaces=r.namespaces(),
    )


def _parse_life_time(r: _Reader) -> PodLifeTimeArgs:
    seconds = r.integer("maxPodLifeTimeSeconds", None, minimum=1)
    if seconds is None and r.raw.get("maxPodLifeTimeSeconds") is None:
        r.problem(r.at("maxPodLifeTimeSeconds"), "is required")
    return PodLifeTimeArgs(max_pod_life_time_seconds=seconds or 1, namespaces=r.namespaces())


def _parse_duplicates(r: _Reader) -> RemoveDuplicatesArgs:
    return RemoveDuplicatesArgs(
        exclude_owner_kinds=r.strings("excludeOwnerKinds"), namespaces=r.namespaces()
    )


def _parse_soft_tainter(r: _Reader) -> SoftTainterArgs:
    prefix = r.get("taintKeyPrefix")
    if prefix is None:
        return SoftTainterArgs()
    if not isinstance(prefix, str) or not prefix or "/" in prefix:
        r.problem(r.at("taintKeyPrefix"), f"must be a DNS prefix without '/', got {prefix!r}")
        return SoftTainterArgs()
    return SoftTainterArgs(taint_key_prefix=prefix)


_PARSERS: dict[Plugin, Callable[[_Reader], PluginArgs]] = {
    Plugin.DEFAULT_EVICTOR: _parse_evictor,
    Plugin.TAS_VIOLATIONS: _parse_tas_violations,
    Plugin.NODE_AFFINITY: _parse_node_affinity,
    Plugin.NODE_TAINTS: _parse_node_taints,
    Plugin.INTER_POD_ANTI_AFFINITY: lambda r: InterPodAntiAffinityArgs(namespaces=r.namespaces()),
    Plugin.TOO_MANY_RESTARTS: _parse_restarts,
    Plugin.POD_LIFE_TIME: _parse_life_time,
    Plugin.REMOVE_DUPLICATES: _parse_duplicates,
    Plugin.LOAD_AWARE: _parse_load_aware,
    Plugin.SOFT_TAINTER: _parse_soft_tainter,
}


def _plugin_name(raw: object, path: str, problems: list[str]) -> Plugin | None:
    if isinstance(raw, str):
        if raw in ALIASES:
            return ALIASES[raw]
        if raw in {p.value for p in Plugin}:
            return Plugin(raw)
    known = ", ".join([*(p.value for p in Plugin), *ALIASES])
    problems.append(f"{path}: unknown plugin {raw!r}; known: {known}")
    return None


def _enabled(
    plugins: _Reader, point: str, allowed: Sequence[Plugin], problems: list[str]
) -> tuple[Plugin, ...]:
    section = _Reader(plugins.get(point), plugins.at(point), problems)
    names = section.get("enabled") or []
    section.get("disabled")  # upstream allows it; nothing is enabled by default here anyway
    section.finish()
    if not isinstance(names, list):
        problems.append(f"{section.at('enabled')}: must be a list of plugin names")
        return ()
    found: list[Plugin] = []
    for index, raw in enumerate(names):
        where = f"{section.at('enabled')}[{index}]"
        plugin = _plugin_name(raw, where, problems)
        if plugin is None:
            continue
        if plugin not in allowed:
            points = ", ".join(p.value for p in allowed)
            problems.append(f"{where}: {plugin} is not a {point} plugin; {point} takes {points}")
            continue
        if plugin in found:
            problems.append(f"{where}: {plugin} is enabled twice")
            continue
        found.append(plugin)
    return tuple(found)


def _parse_profile(raw: object, path: str, problems: list[str]) -> Profile:
    r = _Reader(raw, path, problems)
    name = r.get("name")
    if not isinstance(name, str) or not name:
        r.problem(r.at("name"), "a profile name is required")
        name = ""
    args: dict[Plugin, PluginArgs] = {}
    configs = r.get("pluginConfig") or []
    if not isinstance(configs, list):
        r.problem(r.at("pluginConfig"), "must be a list")
        configs = []
    for index, item in enumerate(configs):
        c = _Reader(item, f"{r.at('pluginConfig')}[{index}]", problems)
        plugin = _plugin_name(c.get("name"), c.at("name"), problems)
        arg_reader = _Reader(c.get("args"), c.at("args"), problems)
        c.finish()
        if plugin is None:
            continue
        if plugin in args:
            c.problem(c.at("name"), f"{plugin} is configured twice")
            continue
        args[plugin] = _PARSERS[plugin](arg_reader)
        arg_reader.finish()
    plugins = _Reader(r.get("plugins"), r.at("plugins"), problems)
    deschedule = _enabled(plugins, "deschedule", DESCHEDULE_PLUGINS, problems)
    balance = _enabled(plugins, "balance", BALANCE_PLUGINS, problems)
    for point in ("filter", "preEvictionFilter"):
        _enabled(plugins, point, (Plugin.DEFAULT_EVICTOR,), problems)
    for point in ("sort", "evict", "preSort"):
        plugins.get(point)  # accepted for familiarity; the ordering and evictor are fixed
    plugins.finish()
    r.finish()
    for plugin in (*deschedule, *balance):
        if plugin not in args:
            # Defaults, or a "required" problem, exactly as an empty args mapping would give.
            where = f"{path}.pluginConfig[{plugin}].args"
            args[plugin] = _PARSERS[plugin](_Reader({}, where, problems))
    if Plugin.SOFT_TAINTER in balance and Plugin.LOAD_AWARE not in balance:
        r.problem(
            r.at("plugins.balance"), "SoftTainter taints what LoadAware classifies: enable both"
        )
    evictor = args.get(Plugin.DEFAULT_EVICTOR)
    return Profile(
        name=name,
        evictor=evictor if isinstance(evictor, EvictorArgs) else EvictorArgs(),
        deschedule=deschedule,
        balance=balance,
        args=args,
    )


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


def parse_config(document: object) -> DeschedulerConfig:
    """Validate one DeschedulerPolicy document; raises `ConfigError` listing every problem."""
    problems: list[str] = []
    r = _Reader(document, "", problems)
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
            profiles.append(_parse_profile(raw, f"profiles[{index}]", problems))
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
    breaker = _Reader(r.get("circuitBreaker"), "circuitBreaker", problems)
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


def load_config_text(text: str, *, source: str = "") -> DeschedulerConfig:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError([f"{source}: not valid YAML: {error}"]) from error
    try:
        return parse_config(document)
    except ConfigError as error:
        if not source:
            raise
        raise ConfigError([f"{source}: {p}" for p in error.problems]) from error


def load_config_file(path: Path) -> DeschedulerConfig:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError([f"{path}: cannot read: {error}"]) from error
    return load_config_text(text, source=str(path))
