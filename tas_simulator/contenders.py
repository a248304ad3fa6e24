"""The contenders: what each one runs, configured as its documentation configures it.

Every descheduler is a `DeschedulerPolicy` document read by the real config reader
(`descheduler.config.parse_config`), with the plugins of the contender's registry; a document
the reader rejects means the contender cannot run here yet, and it is reported unavailable
with the reader's reasons rather than approximated. A scenario may replace a document
(`contenders.<name>.descheduler`).

| contender (source) | scheduler | descheduler | every |
|---|---|---|---|
| requests | kube-scheduler defaults | none | - |
| requests-lnu | as requests | upstream LowNodeUtilization on requests (d) | 3600 s |
| tas | requests + TAS-semantics extender (weight 1) | RemovePodsViolatingNodeAffinity (a) | 120 s |
| psi-profile (psi-profile) | as requests | KubeVirtRelieveAndMigrate, rendered (b) | 3600 s |
| psi-profile-60s (psi-profile) | as requests | as psi-profile | 60 s |
| psi-profile-30s (psi-profile) | as requests | as psi-profile | 30 s |
| volcano-loadaware (volcano) | requests + Volcano's `usage` plugin | Volcano LoadAware | 600 s |
| volcano-loadaware-5s-scrape (volcano) | as volcano-loadaware, 5 s scrapes (e) | as left | 600 s |
| ours | requests + ours' extender (weight 5) | TASViolations, LoadAware, SoftTainter (c) | 60 s |

(a) on the `<policy>=violating` labels TAS's controller writes every 5 s, with no breaker.
(b) KubevirtMigrationAware included, with OpenShift's soft tainter beside it.
(c) with MakeRoomForPending first (room for a pod that fits nowhere).
(d) the OpenShift docs' example thresholds (`REQUESTS_LNU`).
(e) every other row reads the cluster's Prometheus: the scenario's `metrics`.

Each row is one documented setting of its source, and every setting is cited at its constant:
the cadence (`ContenderSpec.descheduling_interval`) and, where the source ships its own
Prometheus, the scrape (`ContenderSpec.scrape_interval`). The OpenShift operator's
KubeDescheduler runs every hour; OpenShift Virtualization's documentation configures the PSI
profile every 60 s and every 30 s; Volcano's descheduler runs every 10 minutes, reading either
the cluster's Prometheus (the scenario's pipeline) or the one its monitoring installer ships,
which scrapes every 5 s; upstream's (TAS's) every 2 minutes. Rows of one source share its name
(`ContenderSpec.source`); `sources()` groups them, so a comparison holds ours against the best
documented setting of each source rather than against whichever row happens to be listed.

Ours runs at what deploy/ ships, never at what a scenario's hidden truth would suggest: every
60 s (`OURS_DESCHEDULING_INTERVAL`), its metric view and controller every 2 s
(`OURS_SYNC_PERIOD`, at most once a step), `tas extender`'s defaults (herd control's window
included: `tas_simulator.runner.follow_placements`), and the components' metric max age. A
scenario's top-level `deschedulingInterval` and `syncPeriod` do not reach it; a scenario or a
family may still run any contender, ours included, at another cadence
(`contenders.<name>.deschedulingInterval`), and the report says so under its table.

Upstream descheduler baselines have no per-owner cooldown and no circuit breaker, so their
documents switch both off (`evictionCooldownSeconds: 0`, `maxViolatingNodeShare: 1`); this
project's DefaultEvictor defaults `nodeFit` on where upstream's defaults it off, so each
document says what its source says.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import yaml

from descheduler.config import ConfigError, DeschedulerConfig, parse_config
from extender.settings import ExtenderSettings
from tas_simulator.baselines import registry_for
from tas_simulator.extenders import OURS_WEIGHT, TAS_WEIGHT
from tas_simulator.scenario import ContenderSettings, Pipeline, Scenario


class ExtenderKind(enum.StrEnum):
    NONE = "none"
    OURS = "ours"
    TAS = "tas"


# ------------------------------------------------------------------ shipped cadences

#: The OpenShift operator's KubeDescheduler (psi-profile, requests-lnu): 3600 s.
#: openshift/cluster-kube-descheduler-operator at 945dcaa9: the CRD has no default, and the
#: operator refuses a KubeDescheduler without a positive interval (target_config_reconciler.go,
#: "descheduler should have an interval set"); every KubeDescheduler it ships sets
#: `deschedulingIntervalSeconds: 3600` (deploy/02_kube-descheduler-operator.cr.yaml, the CSV's
#: alm-examples in manifests/cluster-kube-descheduler-operator.clusterserviceversion.yaml, the
#: README's example), and so does the PSI lab's KubeDescheduler (/work/shared/seeds/001).
OPENSHIFT_DESCHEDULING_INTERVAL = 3600.0
#: The PSI profile as OpenShift Virtualization's documentation configures it (psi-profile-60s):
#: "Configuring descheduler evictions for virtual machines" (Red Hat OpenShift Container
#: Platform 4.21, Virtualization, section 9.18.13.3; 4.20 has it as 9.17.13.3),
#: https://docs.redhat.com/ja/documentation/openshift_container_platform/4.21/html/
#: virtualization/virt-configuring-descheduler-evictions_virt-enabling-descheduler-evictions
#: (the stored page is the English text), procedure step 2: a KubeDescheduler with
#: `deschedulingIntervalSeconds: 60`, `profiles: [KubeVirtRelieveAndMigrate]`, `mode:
#: Automatic`.
PSI_VIRTUALIZATION_INTERVAL = 60.0
#: The PSI profile as the same documentation's profile description configures it
#: (psi-profile-30s): "Enabling descheduler evictions on virtual machines", section
#: "Descheduler profiles" > "KubeVirtRelieveAndMigrate" (OKD 4 Virtualization,
#: https://docs.okd.io/latest/virt/managing_vms/advanced_vm_management/
#: virt-enabling-descheduler-evictions.html, snapshot of 2025-10-18): its example
#: KubeDescheduler sets `deschedulingIntervalSeconds: 30` with exactly the customizations every
#: psi-profile row renders (devEnableSoftTainter true, devDeviationThresholds AsymmetricLow,
#: devActualUtilizationProfile PrometheusCPUCombined). The hosted control planes guide pairs the
#: profile with 30 s too (openshift/openshift-docs, modules/hcp-topology-spread-constraint.adoc).
PSI_PROFILE_EXAMPLE_INTERVAL = 30.0
#: Volcano's descheduler: 10 minutes. volcano-sh/descheduler at 393a2d82,
#: installer/volcano-descheduler-development.yaml runs `/vc-descheduler
#: --descheduling-interval=10m` (its cron expression `*/10 * * * *` says the same, and the
#: interval wins when both are set: README).
VOLCANO_DESCHEDULING_INTERVAL = 600.0
#: The upstream descheduler that TAS's demo pairs with its labels (tas): every 2 minutes.
#: TAS's health-metric demo runs it once by hand (intel/platform-aware-scheduling at c4c90e36,
#: telemetry-aware-scheduling/deploy/health-metric-demo/run_descheduler, no interval) and
#: points to upstream's install; kubernetes-sigs/descheduler at 7d2b28bf ships its Helm chart
#: as `kind: CronJob` with `schedule: "*/2 * * * *"` (charts/descheduler/values.yaml; the
#: Deployment variant, not the default, uses `deschedulingInterval: 5m`).
UPSTREAM_DESCHEDULING_INTERVAL = 120.0
#: Ours: deploy/cluster/descheduler.yaml runs `tas descheduler --descheduling-interval 60s`,
#: whatever the scenario's `deschedulingInterval` (which no longer reaches ours).
OURS_DESCHEDULING_INTERVAL = 60.0
#: Ours' extender and policy controller: deploy/cluster/extender.yaml and
#: policy-controller.yaml run them with `--sync-period 2s` (also the flag's default,
#: tas_cli/common.py), whatever the scenario's `syncPeriod`. The loop refreshes at most once a
#: step, so with 5 s steps ours refreshes every step.
OURS_SYNC_PERIOD = 2.0


#: Volcano's own monitoring Prometheus (volcano-loadaware-5s-scrape): volcano-sh/volcano at
#: 5b3e99d5, installer/volcano-monitoring.yaml (rendered from installer/helm/chart/volcano/
#: templates/prometheus.yaml, installed with `custom.metrics_enable`), ConfigMap
#: prometheus-server-conf: `global: {scrape_interval: 5s, evaluation_interval: 5s}`. Volcano's
#: LoadAware reads `irate(...[30s])`, which needs two scrapes within 30 s: a cluster that
#: scrapes every 30 s or more gives it no rate at all, this Prometheus gives it six.
VOLCANO_INSTALLER_SCRAPE_INTERVAL = 5.0


#: Intel TAS's controller: its metric cache and its enforcer (which labels the nodes that violate
#: a deschedule rule `<policy>=violating`) each run on a ticker of `--syncPeriod`, default 5s
#: (intel/platform-aware-scheduling at c4c90e36, telemetry-aware-scheduling/cmd/main.go:
#: `flag.StringVar(&syncPeriod, "syncPeriod", "5s", ...)`, `metricTicker`, `enforcerTicker`;
#: pkg/strategies/core/enforcer.go `EnforceRegisteredStrategies` loops on the ticker). The
#: enforcer labels every node `Violated` finds (pkg/strategies/deschedule/enforce.go
#: `Enforce`, strategy.go `Violated`): no circuit breaker.
TAS_SYNC_PERIOD = 5.0


class Staleness(enum.StrEnum):
    """How old a metric value may be before a contender stops using it."""

    #: This project: `--metric-max-age` (5 sync periods, at least 30 s).
    OURS = "ours"
    #: Intel TAS: never checked.
    NEVER = "never"
    #: Components that query Prometheus each cycle: only the latest answer counts.
    QUERY = "query"


# Ours, with the recommended configuration, shipped as deploy/descheduler/recommended.yaml (a
# test keeps the two equal): the TASViolations profile exactly as deploy/cluster/descheduler.yaml
# ships it (limits, cooldown, breaker), plus LoadAware on the combined CPU signal with
# AsymmetricLow deviation thresholds, the SoftTainter, and room made for pods that fit nowhere
# (MakeRoomForPending at its defaults; make-room.yaml's example is stricter, 5 pods per pending).
OURS = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
maxNoOfPodsToEvictPerNode: 5
maxNoOfPodsToEvictTotal: 20
evictionCooldownSeconds: 300
circuitBreaker:
  maxViolatingNodeShare: 0.5
profiles:
  - name: tas
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: true
          priorityThreshold:
            name: system-cluster-critical
          namespaces:
            exclude: [kube-system]
      - name: TASViolations
        args:
          violationSource: Metrics
    plugins:
      deschedule:
        enabled: [TASViolations]
  - name: relieve
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: true
      - name: LoadAware
        args:
          deviationThresholds: AsymmetricLow
          resources: [cpu_combined]
      - name: SoftTainter
        args:
          taintKeyPrefix: telemetry.aware.scheduling
    plugins:
      balance:
        enabled: [MakeRoomForPending, LoadAware, SoftTainter]
"""

# Upstream has neither the per-owner cooldown nor the circuit breaker (our additions, spec
# descheduler.md "Limits and safety"): every baseline's policy turns both off.
BASELINE_POLICY = """
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
evictionCooldownSeconds: 0
circuitBreaker:
  maxViolatingNodeShare: 1
"""

# Intel TAS's health-metric demo runs the upstream descheduler with RemovePodsViolatingNodeAffinity
# only (deploy/health-metric-demo/descheduler-policy.yaml, v1alpha1; the same in v1alpha2 here);
# upstream's DefaultEvictor has nodeFit off, no cooldown and no breaker.
TAS = (
    BASELINE_POLICY
    + """profiles:
  - name: tas-demo
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: false
      - name: RemovePodsViolatingNodeAffinity
        args:
          nodeAffinityType: [requiredDuringSchedulingIgnoredDuringExecution]
    plugins:
      deschedule:
        enabled: [RemovePodsViolatingNodeAffinity]
"""
)

# The OpenShift descheduler documentation's LowNodeUtilization example (KubeDescheduler
# strategies: CPUThreshold 10, MemoryThreshold 20, PodsThreshold 30, MemoryTargetThreshold 40,
# CPUTargetThreshold 50, PodsTargetThreshold 60, NumberOfNodes 3), as upstream v1alpha2.
# It acts only where more than three nodes request under 10% CPU, 20% memory and 30% pods at
# once. kube-scheduler spreads by requests, so such nodes are rare: on psi-taint-release the
# released nodes still hold a quarter of their CPU in requests (the pods placed before the
# taint), and it evicts nothing there at its hourly cadence, at 60 s, or with numberOfNodes 0.
# That is the documented policy at work, not its cadence; the current LifecycleAndUtilization
# profile (under 20% / over 50%) would not act there either.
REQUESTS_LNU = (
    BASELINE_POLICY
    + """profiles:
  - name: lifecycle-and-utilization
    pluginConfig:
      - name: DefaultEvictor
        args:
          nodeFit: false
      - name: LowNodeUtilization
        args:
          thresholds: {cpu: 10, memory: 20, pods: 30}
          targetThresholds: {cpu: 50, memory: 40, pods: 60}
          numberOfNodes: 3
    plugins:
      balance:
        enabled: [LowNodeUtilization]
"""
)

# The KubeVirtRelieveAndMigrate profile as the operator renders it today for the PSI lab's
# KubeDescheduler (/work/shared/seeds/001: profileCustomizations devActualUtilizationProfile
# PrometheusCPUCombined, devDeviationThresholds AsymmetricLow, devEnableSoftTainter true).
# Checked against openshift/cluster-kube-descheduler-operator at commit
# 945dcaa9d895e113723c9cbddda0fcf77282604e, pkg/operator/target_config_reconciler.go
# (`kubeVirtRelieveAndMigrateProfile` and the policy defaults) and its rendering
# pkg/operator/testdata/assets/relieveAndMigrateDefaults.yaml:
# - maxNoOfPodsToEvictPerNode 2 / maxNoOfPodsToEvictTotal 5 (defaultKVParallelOutbound-
#   MigrationsPerNode, defaultKVParallelMigrationsPerCluster);
# - LowNodeUtilization's own `evictionLimits.node: 2` (since commit 95b12594, "propagate
#   EvictionLimits.Node to LowNodeUtilization plugin args"): without it, upstream moves one pod
#   per node per cycle on a Prometheus metric (nothing tells it a pod's share), so the profile
#   moves two;
# - useDeviationThresholds with MetricResource 0 -> 10 (AsymmetricLow,
#   `getLowNodeUtilizationThresholds`), the query `descheduler:combined_utilization_and_
#   pressure:avg1m` (PrometheusCPUCombined, `utilizationProfileToPrometheusQuery`; the default
#   without the customization is the CPU-and-memory `linear_amplified_ideal_point_...` one);
# - the protected namespaces excluded; DefaultEvictor evictLocalStoragePods, noEvictionPolicy
#   Mandatory (upstream's nodeFit default, off).
# - `KubevirtMigrationAware`, which the operator always adds to this profile (a `pluginConfig`
#   entry `{}`, enabled at `filter` and `preEvictionFilter`; the `dev*Migration*`
#   customizations unset, so its defaults: 15m cooldown, doubling per migration in 48h, 6h cap):
#   a VM is not migrated again within its cooldown (`tas_simulator.baselines.
#   KubevirtMigrationAware`, applied around the profile's plugins by the runner).
# Left out: `nodeSelector: kubevirt.io/schedulable=true` (KubeVirt labels its nodes; every
# simulated node stands for one). The soft tainter is not a descheduler plugin in OpenShift
# but a controller of its own: `tas_simulator.baselines.OpenShiftSoftTainter`.
PSI_PROFILE = (
    BASELINE_POLICY
    + """metricsProviders:
  - source: Prometheus
    prometheus:
      url: http://prometheus.simulator:9090
maxNoOfPodsToEvictPerNode: 2
maxNoOfPodsToEvictTotal: 5
profiles:
  - name: KubeVirtRelieveAndMigrate
    pluginConfig:
      - name: LowNodeUtilization
        args:
          evictableNamespaces:
            exclude:
              - kube-system
              - hypershift
              - openshift
              - openshift-kube-descheduler-operator
              - openshift-kube-scheduler
          evictionLimits:
            node: 2
          metricsUtilization:
            source: Prometheus
            prometheus:
              query: "descheduler:combined_utilization_and_pressure:avg1m"
          useDeviationThresholds: true
          thresholds: {MetricResource: 0}
          targetThresholds: {MetricResource: 10}
      - name: DefaultEvictor
        args:
          nodeFit: false
          evictLocalStoragePods: true
          noEvictionPolicy: Mandatory
      - name: KubevirtMigrationAware
        args: {}
    plugins:
      balance:
        enabled: [LowNodeUtilization]
      filter:
        enabled: [DefaultEvictor, KubevirtMigrationAware]
      preEvictionFilter:
        enabled: [KubevirtMigrationAware]
"""
)

# Volcano's shipped policy, the volcano-descheduler ConfigMap of volcano-sh/descheduler at
# 393a2d82 (installer/volcano-descheduler-development.yaml): DefaultEvictor ignorePvcPods,
# nodeFit, priorityThreshold 10000; LoadAware with thresholds cpu 30 / memory 30 and
# targetThresholds cpu 80 / memory 85, and no `nodeFit` of its own: LoadAware's defaults
# (pkg/framework/plugins/loadaware/defaults.go) leave it false and `duration` 2m (it would act
# only in LoadAware's PreEvictionFilter, which the ConfigMap does not enable either). Volcano
# has no cooldown and no circuit breaker. The ConfigMap's `metrics: {address: null}` stands
# for the user's Prometheus: here the simulated one, answering Volcano's own queries.
VOLCANO = (
    BASELINE_POLICY
    + """profiles:
  - name: default
    pluginConfig:
      - name: DefaultEvictor
        args:
          ignorePvcPods: true
          nodeFit: true
          priorityThreshold:
            value: 10000
      - name: LoadAware
        args:
          evictableNamespaces:
            exclude: [kube-system]
          metrics:
            address: null
            type: null
          targetThresholds:
            cpu: 80
            memory: 85
          thresholds:
            cpu: 30
            memory: 30
    plugins:
      balance:
        enabled: [LoadAware]
"""
)


@dataclass(frozen=True)
class ContenderSpec:
    name: str
    extender: ExtenderKind
    weight: int
    descheduler: str | None
    staleness: Staleness
    #: Runs the policy controller (node and pod labels).
    controller: bool
    #: Its descheduler knows TASPolicies (nodeFit with dontschedule rules, TASViolations).
    knows_policies: bool
    #: Its descheduler reads per-pod usage (container metrics).
    pod_usage: bool = False
    #: The OpenShift operator's soft tainter runs beside its descheduler.
    openshift_soft_tainter: bool = False
    #: The Volcano scheduler's `usage` plugin filters and scores beside kube-scheduler's, and
    #: the descheduler reads per-pod usage with Volcano's own query.
    volcano_scheduler: bool = False
    #: Seconds between its descheduling cycles as its source ships it; None: no descheduler.
    descheduling_interval: float | None = None
    #: Seconds between metric refreshes and controller cycles as its source ships them; None:
    #: the scenario's `syncPeriod` (the components that query the cluster's Prometheus).
    sync_period: float | None = None
    #: Seconds between the scrapes of the Prometheus it reads, where its source ships its own
    #: (Volcano's monitoring installer); None: the cluster's, the scenario's `metrics`.
    scrape_interval: float | None = None
    #: Its controller holds new `violating` labels back while too many nodes violate at once
    #: (this project's circuit breaker); TAS's enforcer has none.
    controller_breaker: bool = True
    #: The project whose documented settings this row runs (empty: the row's own name). Rows
    #: of one source are its documented settings; a comparison holds ours against the best of
    #: each source (`sources`).
    source: str = ""

    @property
    def source_name(self) -> str:
        return self.source or self.name


_PSI_PROFILE = ContenderSpec(
    "psi-profile",
    ExtenderKind.NONE,
    0,
    PSI_PROFILE,
    Staleness.QUERY,
    False,
    False,
    openshift_soft_tainter=True,
    descheduling_interval=OPENSHIFT_DESCHEDULING_INTERVAL,
    source="psi-profile",
)

_VOLCANO = ContenderSpec(
    "volcano-loadaware",
    ExtenderKind.NONE,
    0,
    VOLCANO,
    Staleness.QUERY,
    False,
    False,
    pod_usage=True,
    volcano_scheduler=True,
    descheduling_interval=VOLCANO_DESCHEDULING_INTERVAL,
    source="volcano",
)

CONTENDERS: Mapping[str, ContenderSpec] = {
    spec.name: spec
    for spec in (
        ContenderSpec("requests", ExtenderKind.NONE, 0, None, Staleness.QUERY, False, False),
        ContenderSpec(
            "requests-lnu",
            ExtenderKind.NONE,
            0,
            REQUESTS_LNU,
            Staleness.QUERY,
            False,
            False,
            descheduling_interval=OPENSHIFT_DESCHEDULING_INTERVAL,
        ),
        ContenderSpec(
            "tas",
            ExtenderKind.TAS,
            TAS_WEIGHT,
            TAS,
            Staleness.NEVER,
            True,
            False,
            descheduling_interval=UPSTREAM_DESCHEDULING_INTERVAL,
            sync_period=TAS_SYNC_PERIOD,
            controller_breaker=False,
        ),
        _PSI_PROFILE,
        # The same profile at the cadences OpenShift Virtualization's documentation sets.
        replace(
            _PSI_PROFILE, name="psi-profile-60s", descheduling_interval=PSI_VIRTUALIZATION_INTERVAL
        ),
        replace(
            _PSI_PROFILE,
            name="psi-profile-30s",
            descheduling_interval=PSI_PROFILE_EXAMPLE_INTERVAL,
        ),
        _VOLCANO,
        # The same, reading the Prometheus Volcano's monitoring installer ships.
        replace(
            _VOLCANO,
            name="volcano-loadaware-5s-scrape",
            scrape_interval=VOLCANO_INSTALLER_SCRAPE_INTERVAL,
        ),
        # Ours reads per-pod usage as `tas descheduler --metrics prometheus:URL` does (the
        # container series; here the model's per-pod usage).
        ContenderSpec(
            "ours",
            ExtenderKind.OURS,
            OURS_WEIGHT,
            OURS,
            Staleness.OURS,
            True,
            True,
            pod_usage=True,
            descheduling_interval=OURS_DESCHEDULING_INTERVAL,
            sync_period=OURS_SYNC_PERIOD,
        ),
    )
}


def sources(names: Sequence[str] | None = None) -> dict[str, tuple[str, ...]]:
    """Each source's rows (its documented settings), in `CONTENDERS`' order, among `names`
    (every contender when None; a name that is no contender is left out): `{"psi-profile":
    ("psi-profile", "psi-profile-60s", "psi-profile-30s"), "volcano": ("volcano-loadaware",
    "volcano-loadaware-5s-scrape"), "ours": ("ours",), ...}`. A comparison against "the best
    other" takes each source's best row, so a source is neither favoured for having several
    documented settings nor judged by its worst."""
    chosen = CONTENDERS if names is None else [n for n in CONTENDERS if n in set(names)]
    found: dict[str, tuple[str, ...]] = {}
    for name in chosen:
        source = CONTENDERS[name].source_name
        found[source] = (*found.get(source, ()), name)
    return found


@dataclass(frozen=True)
class Contender:
    """A contender ready to run: its spec with the scenario's settings applied."""

    spec: ContenderSpec
    weight: int
    config: DeschedulerConfig | None
    #: Ours' extender flags as the scenario sets them (None: `tas extender`'s defaults).
    extender: ExtenderSettings | None = None
    #: The scenario's (or the family's) cadence for this contender (None: its source's).
    descheduling_interval: float | None = None
    #: The DeschedulerPolicy document `config` was read from (what the framework does not
    #: keep: the plugins enabled at `filter` and `preEvictionFilter`).
    document: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    def sync_period(self, scenario: Scenario) -> float:
        """Seconds between its metric refreshes and controller cycles in `scenario`: its
        source's, else the scenario's `syncPeriod` (a Prometheus reader's query cadence)."""
        return self.spec.sync_period or scenario.sync_period

    def interval(self, scenario: Scenario) -> float:
        """Seconds between its descheduling cycles in `scenario`: the scenario's setting for
        this contender (`contenders.<name>.deschedulingInterval`), else its source's shipped
        cadence. The scenario's top-level `deschedulingInterval` is no contender's (only where
        a contender has no cadence at all, which runs no descheduler, is it returned)."""
        return (
            self.descheduling_interval
            or self.spec.descheduling_interval
            or scenario.descheduling_interval
        )

    def pipeline(self, scenario: Scenario) -> Pipeline:
        """The metrics pipeline it reads in `scenario`: the cluster's (the scenario's), with the
        scrape interval of its source's own Prometheus where it ships one."""
        if self.spec.scrape_interval is None:
            return scenario.pipeline
        return replace(scenario.pipeline, scrape_interval=self.spec.scrape_interval)


@dataclass(frozen=True)
class Unavailable:
    name: str
    reason: str


def resolve(name: str, settings: ContenderSettings | None = None) -> Contender | Unavailable:
    """The contender `name`, or why it cannot run here (its document is rejected)."""
    spec = CONTENDERS[name]
    settings = settings or ContenderSettings()
    document: Any = settings.descheduler
    if document is None and spec.descheduler is not None:
        document = yaml.safe_load(spec.descheduler)
    config = None
    if document is not None:
        try:
            config = parse_config(document, registry=registry_for(name))
        except ConfigError as error:
            shown = "; ".join(error.problems[:3])
            more = f" (and {len(error.problems) - 3} more)" if len(error.problems) > 3 else ""
            return Unavailable(
                name,
                f"the descheduler config reader rejects its DeschedulerPolicy: {shown}{more}",
            )
    return Contender(
        spec,
        settings.extender_weight or spec.weight,
        config,
        settings.extender,
        settings.descheduling_interval,
        document,
    )


def choose_contenders(text: str) -> list[str]:
    """`--contenders a,b`: those contenders in that order, or every one for an empty text.
    Raises ValueError naming the unknown ones and the known ones."""
    chosen = [c.strip() for c in text.split(",") if c.strip()] or list(CONTENDERS)
    unknown = [c for c in chosen if c not in CONTENDERS]
    if unknown:
        raise ValueError(
            f"unknown contender(s) {', '.join(unknown)}; known: {', '.join(CONTENDERS)}"
        )
    return chosen
