"""The OpenShift Kube Descheduler Operator's settings, as users write them, expanded into the
DeschedulerPolicy the operator would generate from them.

A `KubeDescheduler` (`operator.openshift.io/v1`) names profiles (`AffinityAndTaints`,
`TopologyAndDuplicates`, `SoftTopologyAndDuplicates`, `LifecycleAndUtilization`,
`LongLifecycle`, `CompactAndScale`, `KubeVirtRelieveAndMigrate`, and the two that change the
others: `EvictPodsWithLocalStorage`, `EvictPodsWithPVC`), a `mode`, a
`deschedulingIntervalSeconds`, `evictionLimits` and `profileCustomizations`. `expand` turns one
into the upstream-shaped policy document (`descheduler.config.parse_config` reads it), the
interval and the mode, or raises `KubeDeschedulerError` listing every problem with its path
(`spec.profileCustomizations.devDeviationThresholds: ...`). Pure: no I/O, so `tas descheduler
--kubedescheduler FILE` and `--print-policy` are thin wiring around it.

What differs from the operator, on purpose:

- The operator finds Prometheus through the OpenShift route; here its URL is given
  (`prometheus_url`) when a profile reads Prometheus, and its absence is a problem.
- The protected namespaces are `kube-system`, `hypershift`, `openshift` and `openshift-*` (a
  prefix: the operator lists the `openshift-` namespaces that exist when it reconciles).
- `KubeVirtRelieveAndMigrate`'s `KubevirtMigrationAware` filter (OpenShift's own plugin, which
  keeps a VM from being migrated again too soon) is this project's per-owner cooldown, on every
  plugin of that profile (`ownerCooldown: AllPlugins`), for `devMigrationCooldown` (default
  15m, the plugin's own).
  KubeVirt itself turns the evictions into live migrations.
- `devEnableSoftTainter` (ignored by recent operators) adds this project's `SoftTainter` to the
  profiles that classify nodes with `LowNodeUtilization`.
- `devEnableEvictionsInBackground` is accepted and has no effect: evictions here are always
  requests to the Eviction API, which KubeVirt answers with a migration.

Errors:
    KubeDeschedulerError   the document cannot be expanded; `problems` lists every reason
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from descheduler.args import FieldReader
from descheduler.plugins.load_aware.args import PRESETS as DEVIATION_PRESETS
from tas.problems import ProblemsError

API_VERSION = "operator.openshift.io/v1"
KIND = "KubeDescheduler"
PROTECTED_NAMESPACES = ("kube-system", "hypershift", "openshift", "openshift-*")
KUBEVIRT_NODE_SELECTOR = "kubevirt.io/schedulable=true"
KUBEVIRT_EVICTIONS_PER_NODE = 2
KUBEVIRT_EVICTIONS_TOTAL = 5
#: KubevirtMigrationAware's `defaultMigrationCooldown = 15 * time.Minute` (openshift-
#: virtualization/kubevirt-descheduler-plugins, plugins/kubevirtmigrationaware/defaults.go, as
#: the operator vendors it at 945dcaa9): what the operator runs when `devMigrationCooldown` is
#: unset.
KUBEVIRT_MIGRATION_COOLDOWN_SECONDS = 900.0
#: What `spec` may carry for the operator itself (operatorv1.OperatorSpec): read and ignored.
OPERATOR_FIELDS = (
    "managementState",
    "logLevel",
    "operatorLogLevel",
    "unsupportedConfigOverrides",
    "observedConfig",
)


class KubeDeschedulerError(ProblemsError):
    """The KubeDescheduler cannot be expanded; `problems` lists every reason, with its path."""


class Expansion(NamedTuple):
    """What a KubeDescheduler means here: `policy, interval, mode = expand(document)`."""

    #: A `descheduler/v1alpha2` DeschedulerPolicy document.
    policy: dict[str, Any]
    #: `deschedulingIntervalSeconds`.
    interval_seconds: float
    #: "Predictive" or "Automatic" (the operator's default: Predictive).
    mode: str


class Profile(enum.StrEnum):
    AFFINITY_AND_TAINTS = "AffinityAndTaints"
    TOPOLOGY_AND_DUPLICATES = "TopologyAndDuplicates"
    SOFT_TOPOLOGY_AND_DUPLICATES = "SoftTopologyAndDuplicates"
    LIFECYCLE_AND_UTILIZATION = "LifecycleAndUtilization"
    LONG_LIFECYCLE = "LongLifecycle"
    DEV_PREVIEW_LONG_LIFECYCLE = "DevPreviewLongLifecycle"
    COMPACT_AND_SCALE = "CompactAndScale"
    KUBEVIRT_RELIEVE_AND_MIGRATE = "KubeVirtRelieveAndMigrate"
    DEV_KUBEVIRT_RELIEVE_AND_MIGRATE = "DevKubeVirtRelieveAndMigrate"
    EVICT_PODS_WITH_LOCAL_STORAGE = "EvictPodsWithLocalStorage"
    EVICT_PODS_WITH_PVC = "EvictPodsWithPVC"


LONG = {Profile.LONG_LIFECYCLE, Profile.DEV_PREVIEW_LONG_LIFECYCLE}
KUBEVIRT = {Profile.KUBEVIRT_RELIEVE_AND_MIGRATE, Profile.DEV_KUBEVIRT_RELIEVE_AND_MIGRATE}
MODIFIERS = {Profile.EVICT_PODS_WITH_LOCAL_STORAGE, Profile.EVICT_PODS_WITH_PVC}
#: Pairs the operator's CRD refuses together.
CONFLICTS: tuple[tuple[set[Profile], set[Profile]], ...] = (
    (LONG, {Profile.LIFECYCLE_AND_UTILIZATION}),
    (LONG, KUBEVIRT),
    ({Profile.LIFECYCLE_AND_UTILIZATION}, KUBEVIRT),
    ({Profile.KUBEVIRT_RELIEVE_AND_MIGRATE}, {Profile.DEV_KUBEVIRT_RELIEVE_AND_MIGRATE}),
    ({Profile.SOFT_TOPOLOGY_AND_DUPLICATES}, {Profile.TOPOLOGY_AND_DUPLICATES}),
    (
        {Profile.COMPACT_AND_SCALE},
        {Profile.LIFECYCLE_AND_UTILIZATION, Profile.TOPOLOGY_AND_DUPLICATES, *LONG, *KUBEVIRT},
    ),
)

#: `devLowNodeUtilizationThresholds`: (thresholds, targetThresholds).
LOW_NODE_UTILIZATION_THRESHOLDS = {
    "Low": (10, 30),
    "Medium": (20, 50),
    "": (20, 50),
    "High": (40, 70),
}
#: `devDeviationThresholds`: (thresholds, targetThresholds), the presets LoadAware names too.
DEVIATION_THRESHOLDS = {preset.value: bounds for preset, bounds in DEVIATION_PRESETS.items()}
HIGH_NODE_UTILIZATION_THRESHOLDS = {"Minimal": 10, "Modest": 20, "": 20, "Moderate": 30}
ACTUAL_UTILIZATION_QUERIES = {
    "PrometheusCPUUsage": "instance:node_cpu:rate:sum",
    "PrometheusCPUPSIPressure": "rate(node_pressure_cpu_waiting_seconds_total[1m])",
    "PrometheusCPUPSIPressureByUtilization": (
        "avg by (instance) ( rate(node_pressure_cpu_waiting_seconds_total[1m])) and "
        '(1 - avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[1m]))) > 0.7 or '
        "avg by (instance) ( rate(node_pressure_cpu_waiting_seconds_total[1m])) * 0"
    ),
    "PrometheusMemoryPSIPressure": "rate(node_pressure_memory_waiting_seconds_total[1m])",
    "PrometheusIOPSIPressure": "rate(node_pressure_io_waiting_seconds_total[1m])",
    "PrometheusCPUCombined": "descheduler:combined_utilization_and_pressure:avg1m",
    "PrometheusCPUMemoryCombinedProfile": (
        "descheduler:node:linear_amplified_ideal_point_positive_distance:k3:avg1m"
    ),
}
KUBEVIRT_DEFAULT_UTILIZATION = "PrometheusCPUMemoryCombinedProfile"


@dataclass
class _Customizations:
    pod_lifetime_seconds: float | None = None
    threshold_priority: int | None = None
    threshold_priority_class_name: str = ""
    included: tuple[str, ...] = ()
    excluded: tuple[str, ...] = ()
    low_node_utilization: str | None = None
    deviation: str | None = None
    high_node_utilization: str | None = None
    actual_utilization: str = ""
    soft_tainter: bool = False
    migration_cooldown_seconds: float | None = None


def _choice(r: FieldReader, key: str, choices: Mapping[str, object]) -> str | None:
    """An enum field whose absence differs from its empty value (upstream's pointers)."""
    raw = r.get(key)
    if raw is None:
        return None
    if not isinstance(raw, str) or raw not in choices:
        known = ", ".join(repr(c) for c in choices)
        r.problem(r.at(key), f"unknown value {raw!r}; known: {known}")
        return None
    return raw


def _customizations(r: FieldReader) -> _Customizations:
    c = r.child("profileCustomizations")
    found = _Customizations(
        pod_lifetime_seconds=c.duration("podLifetime"),
        threshold_priority=c.integer("thresholdPriority", None, minimum=-(2**31)),
        threshold_priority_class_name=c.string("thresholdPriorityClassName"),
        low_node_utilization=_choice(
            c, "devLowNodeUtilizationThresholds", LOW_NODE_UTILIZATION_THRESHOLDS
        ),
        deviation=_choice(c, "devDeviationThresholds", {**DEVIATION_THRESHOLDS, "": ()}),
        high_node_utilization=_choice(
            c, "devHighNodeUtilizationThresholds", HIGH_NODE_UTILIZATION_THRESHOLDS
        ),
        soft_tainter=c.boolean("devEnableSoftTainter", False),
        migration_cooldown_seconds=c.duration("devMigrationCooldown"),
    )
    c.boolean("devEnableEvictionsInBackground", False)
    c.duration("devMaxMigrationCooldown")
    c.duration("devMigrationHistoryWindow")
    actual = c.string("devActualUtilizationProfile")
    if actual and actual not in ACTUAL_UTILIZATION_QUERIES and not actual.startswith("query:"):
        known = ", ".join(ACTUAL_UTILIZATION_QUERIES)
        c.problem(
            c.at("devActualUtilizationProfile"),
            f"unknown profile {actual!r}; known: {known}, or query:<PromQL>",
        )
        actual = ""
    found.actual_utilization = actual
    namespaces = c.child("namespaces")
    found.included = namespaces.strings("included")
    found.excluded = namespaces.strings("excluded")
    namespaces.finish()
    c.finish()
    if found.threshold_priority is not None and found.threshold_priority_class_name:
        c.problem(c.path, "give thresholdPriority or thresholdPriorityClassName, not both")
    if found.included and found.excluded:
        c.problem(c.at("namespaces"), "give included or excluded, not both")
    for index, name in enumerate(found.included):
        if name in PROTECTED_NAMESPACES[:3] or name.startswith("openshift-"):
            c.problem(
                f"{c.at('namespaces.included')}[{index}]",
                f"{name} is a protected namespace ({', '.join(PROTECTED_NAMESPACES)})",
            )
    if found.low_node_utilization is not None and found.deviation is not None:
        c.problem(
            c.path,
            "give devLowNodeUtilizationThresholds or devDeviationThresholds, not both",
        )
    return found


def _query(profile: str) -> str:
    return ACTUAL_UTILIZATION_QUERIES.get(profile) or profile.removeprefix("query:")


class _Builder:
    def __init__(self, c: _Customizations, *, ignore_pvc: bool, evict_local_storage: bool) -> None:
        self.c = c
        self.ignore_pvc = ignore_pvc
        self.evict_local_storage = evict_local_storage
        if c.included:
            self.included, self.excluded = list(c.included), []
        else:
            self.included, self.excluded = [], [*PROTECTED_NAMESPACES, *c.excluded]

    def evictor(self, **extra: Any) -> dict[str, Any]:
        args: dict[str, Any] = {
            "nodeFit": False,
            "ignorePvcPods": self.ignore_pvc,
            "evictLocalStoragePods": self.evict_local_storage,
            **extra,
        }
        if self.c.threshold_priority is not None:
            args["priorityThreshold"] = {"value": self.c.threshold_priority}
        elif self.c.threshold_priority_class_name:
            args["priorityThreshold"] = {"name": self.c.threshold_priority_class_name}
        return {"name": "DefaultEvictor", "args": args}

    def namespaces(self) -> dict[str, Any]:
        if self.included:
            return {"namespaces": {"include": self.included}}
        return {"namespaces": {"exclude": self.excluded}}

    def evictable_namespaces(self) -> dict[str, Any]:
        """LowNodeUtilization and HighNodeUtilization take exclusions only."""
        excluded = self.excluded or list(PROTECTED_NAMESPACES)
        return {"evictableNamespaces": {"exclude": excluded}}

    def profile(
        self,
        name: str,
        configs: list[dict[str, Any]],
        points: dict[str, list[str]],
        *,
        evictor: Mapping[str, Any] | None = None,
        **more: Any,
    ) -> dict[str, Any]:
        return {
            "name": str(name),
            **more,
            "pluginConfig": [*configs, self.evictor(**(evictor or {}))],
            "plugins": {
                "filter": {"enabled": ["DefaultEvictor"]},
                **{point: {"enabled": names} for point, names in points.items()},
            },
        }


def _affinity_and_taints(b: _Builder) -> dict[str, Any]:
    return b.profile(
        Profile.AFFINITY_AND_TAINTS,
        [
            {"name": "RemovePodsViolatingInterPodAntiAffinity", "args": b.namespaces()},
            {"name": "RemovePodsViolatingNodeTaints", "args": b.namespaces()},
            {
                "name": "RemovePodsViolatingNodeAffinity",
                "args": {
                    "nodeAffinityType": ["requiredDuringSchedulingIgnoredDuringExecution"],
                    **b.namespaces(),
                },
            },
        ],
        {
            "deschedule": [
                "RemovePodsViolatingInterPodAntiAffinity",
                "RemovePodsViolatingNodeTaints",
                "RemovePodsViolatingNodeAffinity",
            ]
        },
    )


def _topology_and_duplicates(b: _Builder, *, soft: bool) -> dict[str, Any]:
    constraints = ["DoNotSchedule", "ScheduleAnyway"] if soft else ["DoNotSchedule"]
    name = Profile.SOFT_TOPOLOGY_AND_DUPLICATES if soft else Profile.TOPOLOGY_AND_DUPLICATES
    return b.profile(
        name,
        [
            {
                "name": "RemovePodsViolatingTopologySpreadConstraint",
                "args": {"constraints": constraints, **b.namespaces()},
            },
            {"name": "RemoveDuplicates", "args": b.namespaces()},
        ],
        {"balance": ["RemovePodsViolatingTopologySpreadConstraint", "RemoveDuplicates"]},
    )


def _utilization_args(
    b: _Builder, resources: list[str], low: float, high: float, **more: Any
) -> dict[str, Any]:
    return {
        "thresholds": dict.fromkeys(resources, low),
        "targetThresholds": dict.fromkeys(resources, high),
        **b.evictable_namespaces(),
        **more,
    }


def _lifecycle(b: _Builder, *, long: bool) -> dict[str, Any]:
    c = b.c
    low, high = LOW_NODE_UTILIZATION_THRESHOLDS[c.low_node_utilization or ""]
    resources = ["cpu", "memory", "pods"]
    more: dict[str, Any] = {}
    if c.actual_utilization:
        resources = ["MetricResource"]
        more["metricsUtilization"] = {
            "source": "Prometheus",
            "prometheus": {"query": _query(c.actual_utilization)},
        }
    lifetime = int(c.pod_lifetime_seconds) if c.pod_lifetime_seconds is not None else 86400
    configs = [
        {"name": "PodLifeTime", "args": {"maxPodLifeTimeSeconds": lifetime, **b.namespaces()}},
        {
            "name": "RemovePodsHavingTooManyRestarts",
            "args": {"podRestartThreshold": 100, "includingInitContainers": True, **b.namespaces()},
        },
        {"name": "LowNodeUtilization", "args": _utilization_args(b, resources, low, high, **more)},
    ]
    deschedule = ["PodLifeTime", "RemovePodsHavingTooManyRestarts"]
    if long:
        configs, deschedule = configs[1:], deschedule[1:]
    balance = ["LowNodeUtilization", *(["SoftTainter"] if c.soft_tainter else [])]
    return b.profile(
        Profile.LONG_LIFECYCLE if long else Profile.LIFECYCLE_AND_UTILIZATION,
        configs,
        {"deschedule": deschedule, "balance": balance},
    )


def _compact_and_scale(b: _Builder) -> dict[str, Any]:
    value = HIGH_NODE_UTILIZATION_THRESHOLDS[b.c.high_node_utilization or ""]
    args: dict[str, Any] = {"thresholds": dict.fromkeys(["cpu", "memory", "pods"], value)}
    if b.excluded:
        args.update(b.evictable_namespaces())
    return b.profile(
        Profile.COMPACT_AND_SCALE,
        [{"name": "HighNodeUtilization", "args": args}],
        {"balance": ["HighNodeUtilization"]},
    )


def _kubevirt(b: _Builder, node_limit: int) -> dict[str, Any]:
    c = b.c
    deviation = True
    if c.deviation is not None:
        deviation = c.deviation != ""
    elif c.low_node_utilization is not None:
        deviation = c.low_node_utilization == ""
    if c.deviation:
        low, high = DEVIATION_THRESHOLDS[c.deviation]
    elif c.low_node_utilization:
        low, high = LOW_NODE_UTILIZATION_THRESHOLDS[c.low_node_utilization]
    else:
        low, high = (0, 10) if deviation else (20, 50)
    query = _query(c.actual_utilization or KUBEVIRT_DEFAULT_UTILIZATION)
    args = _utilization_args(
        b,
        ["MetricResource"],
        low,
        high,
        useDeviationThresholds=deviation,
        evictionLimits={"node": node_limit},
        metricsUtilization={"source": "Prometheus", "prometheus": {"query": query}},
    )
    balance = ["LowNodeUtilization", *(["SoftTainter"] if c.soft_tainter else [])]
    return b.profile(
        Profile.KUBEVIRT_RELIEVE_AND_MIGRATE,
        [{"name": "LowNodeUtilization", "args": args}],
        {"balance": balance},
        ownerCooldown="AllPlugins",
        evictor={
            "evictLocalStoragePods": True,
            "ignorePvcPods": False,
            "noEvictionPolicy": "Mandatory",
        },
    )


def expand(document: object, *, prometheus_url: str | None = None) -> Expansion:
    """The DeschedulerPolicy, interval and mode a KubeDescheduler stands for.

    `prometheus_url` is where the profiles that read Prometheus (`KubeVirtRelieveAndMigrate`,
    and `devActualUtilizationProfile`) send their queries. Raises `KubeDeschedulerError`
    listing every problem, each with its path.
    """
    problems: list[str] = []
    r = FieldReader(document, "", problems)
    if r.get("apiVersion") != API_VERSION:
        r.problem("apiVersion", f"expected {API_VERSION!r}, got {r.raw.get('apiVersion')!r}")
    if r.get("kind") != KIND:
        r.problem("kind", f"expected {KIND!r}, got {r.raw.get('kind')!r}")
    r.get("metadata")
    r.get("status")
    spec = r.child("spec")
    for field in OPERATOR_FIELDS:
        spec.get(field)
    profiles = _profiles(spec)
    interval = spec.integer("deschedulingIntervalSeconds", None, minimum=1)
    if interval is None and spec.raw.get("deschedulingIntervalSeconds") is None:
        spec.problem(spec.at("deschedulingIntervalSeconds"), "is required (at least 1)")
    mode = spec.choice("mode", ("Predictive", "Automatic"), "Predictive") or "Predictive"
    limits = spec.child("evictionLimits")
    total = limits.integer("total", None)
    node = limits.integer("node", None)
    limits.finish()
    customizations = _customizations(spec)
    spec.finish()
    r.finish()
    wants_prometheus = bool(customizations.actual_utilization) or bool(set(profiles) & KUBEVIRT)
    if wants_prometheus and not prometheus_url:
        problems.append(
            "spec: the profiles read Prometheus (KubeVirtRelieveAndMigrate or "
            "devActualUtilizationProfile): give its URL"
        )
    if problems:
        raise KubeDeschedulerError(problems)
    builder = _Builder(
        customizations,
        ignore_pvc=Profile.EVICT_PODS_WITH_PVC not in profiles,
        evict_local_storage=Profile.EVICT_PODS_WITH_LOCAL_STORAGE in profiles,
    )
    node_limit = node if node is not None else KUBEVIRT_EVICTIONS_PER_NODE
    policy: dict[str, Any] = {"apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy"}
    built: list[dict[str, Any]] = []
    for profile in profiles:
        if profile in MODIFIERS:
            continue
        if profile is Profile.AFFINITY_AND_TAINTS:
            built.append(_affinity_and_taints(builder))
        elif profile in (Profile.TOPOLOGY_AND_DUPLICATES, Profile.SOFT_TOPOLOGY_AND_DUPLICATES):
            built.append(
                _topology_and_duplicates(
                    builder, soft=profile is Profile.SOFT_TOPOLOGY_AND_DUPLICATES
                )
            )
        elif profile is Profile.LIFECYCLE_AND_UTILIZATION or profile in LONG:
            built.append(_lifecycle(builder, long=profile in LONG))
        elif profile is Profile.COMPACT_AND_SCALE:
            built.append(_compact_and_scale(builder))
        else:
            built.append(_kubevirt(builder, node_limit))
            policy["nodeSelector"] = KUBEVIRT_NODE_SELECTOR
            policy["maxNoOfPodsToEvictTotal"] = KUBEVIRT_EVICTIONS_TOTAL
            policy["maxNoOfPodsToEvictPerNode"] = KUBEVIRT_EVICTIONS_PER_NODE
            policy["evictionCooldownSeconds"] = (
                customizations.migration_cooldown_seconds
                if customizations.migration_cooldown_seconds is not None
                else KUBEVIRT_MIGRATION_COOLDOWN_SECONDS
            )
    if total is not None:
        policy["maxNoOfPodsToEvictTotal"] = total
    if node is not None:
        policy["maxNoOfPodsToEvictPerNode"] = node
        for profile_document in built:
            for config in profile_document["pluginConfig"]:
                if config["name"] == "LowNodeUtilization":
                    config["args"]["evictionLimits"] = {"node": node}
    if wants_prometheus:
        policy["metricsProviders"] = [
            {"source": "Prometheus", "prometheus": {"url": prometheus_url}}
        ]
    policy["profiles"] = built
    return Expansion(policy=policy, interval_seconds=float(interval or 0), mode=mode)


def _profiles(spec: FieldReader) -> list[Profile]:
    names = spec.strings("profiles")
    if not names:
        spec.problem(spec.at("profiles"), "at least one profile is required")
    found: list[Profile] = []
    for index, name in enumerate(names):
        where = f"{spec.at('profiles')}[{index}]"
        if name not in {p.value for p in Profile}:
            known = ", ".join(p.value for p in Profile)
            spec.problem(where, f"unknown profile {name!r}; known: {known}")
        elif Profile(name) in found:
            spec.problem(where, f"{name} is listed twice")
        else:
            found.append(Profile(name))
    chosen = set(found)
    for left, right in CONFLICTS:
        for a in sorted(left & chosen):
            for b in sorted(right & chosen):
                if a != b:
                    spec.problem(spec.at("profiles"), f"{a} and {b} cannot be declared together")
    if found and not chosen - MODIFIERS:
        spec.problem(
            spec.at("profiles"),
            "EvictPodsWithLocalStorage and EvictPodsWithPVC change other profiles: add one",
        )
    return found
