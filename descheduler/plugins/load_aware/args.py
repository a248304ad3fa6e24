"""LoadAware's arguments, as the policy file gives them (`pluginConfig[].args`), validated
with every problem noted (docs/descheduler.md lists them)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from descheduler.args import FieldReader, NamespaceFilter
from descheduler.signals import CPU_SIGNALS, Signal, metric_names
from tas.pressure import MoveCost
from tas.types import MetricName


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


@dataclass(frozen=True, slots=True)
class LoadAwareArgs:
    thresholds: Mapping[Signal, float] = field(default_factory=dict)
    target_thresholds: Mapping[Signal, float] = field(default_factory=dict)
    use_deviation_thresholds: bool = False
    number_of_nodes: int = 0
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)
    #: A move must pay (CPU signals): nodes whose CPU pressure (measured, or predicted from
    #: their load) is below this are not rebalanced, however uneven they look.
    at_risk_pressure: float = 0.25
    #: ... and only when its recent crest (the highest pressure read within `payback_seconds`)
    #: reached this: a node that did not come near saturating loses next to no work (its tasks
    #: wait, they are served), while every move loses the pod's work for a restart.
    at_risk_crest_pressure: float = 0.5
    #: ... and only when its measured CPU utilization came near full within `payback_seconds`
    #: (where it is measured): PSI rises on bursts long before a node is full, and a bursty
    #: node at 70% reads PSI 0.5, yet loses no work, since its waiting tasks are served; 0
    #: rebalances on pressure alone.
    at_risk_crest_utilization: float = 0.9
    #: A node whose load average per CPU (`cpu_load`) is below this serves every runnable task:
    #: what PSI counts there is waiting, not work lost, while a move loses the pod's work for a
    #: restart. A move off such a node must be predicted to gain `served_gain` times its cost.
    #: 0: every node is judged as one losing work (a move pays at its cost).
    at_risk_load: float = 1.0
    served_gain: float = 16.0
    #: What a move costs: the pod's work for this long (a restart or a live migration) ...
    restart_seconds: float = 30.0
    #: ... or, when its owner's running pods took longer to start (`descheduler.startup`:
    #: `Ready` after `PodScheduled`, their median), that long, up to `payback_seconds`.
    learn_restart_seconds: bool = True
    #: ... spread over the time its relief is counted (the owner cooldown's default).
    payback_seconds: float = 300.0
    #: A gain at least this many times the cost is clear: the owner waits half the cooldown
    #: and several of its pods may move in one cycle. A smaller gain waits the whole cooldown.
    clear_gain: float = 4.0
    #: Hysteresis: an overutilized node keeps its class (and soft taint) this long after it
    #: was last seen overutilized, unless its usage falls to the low threshold.
    hold_seconds: float = 120.0
    #: A node is rebalanced only once it has been overutilized at this many cycles in a row (1
    #: or 2): a burst that passes within a cycle is not worth a restart.
    confirm_cycles: int = 2
    #: No pod is moved to a node an evacuating plugin emptied within the owner cooldown, nor,
    #: within this long, to one it emptied that violates still or flaps (seen to begin
    #: violating twice or more: `descheduler.evictor.Cooldown.evacuated_nodes`).
    avoid_evacuated_seconds: float = 3600.0
    #: Each node's own pressure curve, learned from its (utilization, PSI) samples
    #: (`tas.calibration.curve`), predicts its moves; off: the shared model for every node.
    learn_pressure_curve: bool = True
    #: The samples a node's curve is fitted on (its ring), and how many it needs first.
    pressure_curve_samples: int = 32
    pressure_curve_min_samples: int = 8
    #: The payback horizon follows the observed metric lag plus start-up (their 90th
    #: percentiles: a move's effect is measured no sooner), from `payback_seconds` up to this.
    #: Equal to `payback_seconds`: fixed.
    max_payback_seconds: float = 900.0

    @property
    def cost(self) -> MoveCost:
        return MoveCost(
            restart_seconds=self.restart_seconds,
            payback_seconds=self.payback_seconds,
            hot_pressure=self.at_risk_pressure,
        )

    @property
    def signals(self) -> tuple[Signal, ...]:
        return tuple(self.thresholds)


def _parse_signal_map(r: FieldReader, key: str) -> dict[Signal, float]:
    known = [s.value for s in Signal]
    return {Signal(n): v for n, v in r.percentages(key, known=known, what="signal").items()}


def parse_args(r: FieldReader) -> LoadAwareArgs:
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
    defaults = LoadAwareArgs()
    samples = (
        r.integer("pressureCurveSamples", defaults.pressure_curve_samples, minimum=1, maximum=1024)
        or defaults.pressure_curve_samples
    )
    min_samples = (
        r.integer(
            "pressureCurveMinSamples", defaults.pressure_curve_min_samples, minimum=1, maximum=1024
        )
        or defaults.pressure_curve_min_samples
    )
    payback = r.number("paybackSeconds", defaults.payback_seconds, low=1, high=86400)
    max_payback = r.number("maxPaybackSeconds", defaults.max_payback_seconds, low=1, high=86400)
    return LoadAwareArgs(
        thresholds=thresholds,
        target_thresholds=targets,
        use_deviation_thresholds=deviation,
        number_of_nodes=number_of_nodes,
        namespaces=namespaces,
        at_risk_pressure=r.number("atRiskPressure", defaults.at_risk_pressure, low=0, high=1),
        at_risk_crest_pressure=r.number(
            "atRiskCrestPressure", defaults.at_risk_crest_pressure, low=0, high=1
        ),
        at_risk_crest_utilization=r.number(
            "atRiskCrestUtilization", defaults.at_risk_crest_utilization, low=0, high=1
        ),
        at_risk_load=r.number("atRiskLoad", defaults.at_risk_load, low=0, high=1),
        served_gain=r.number("servedGain", defaults.served_gain, low=1, high=1000),
        restart_seconds=r.number("restartSeconds", defaults.restart_seconds, low=0, high=3600),
        learn_restart_seconds=r.boolean("learnRestartSeconds", defaults.learn_restart_seconds),
        payback_seconds=payback,
        clear_gain=r.number("clearGain", defaults.clear_gain, low=1, high=1000),
        hold_seconds=r.number("holdSeconds", defaults.hold_seconds, low=0, high=86400),
        confirm_cycles=r.integer("confirmCycles", defaults.confirm_cycles, minimum=1, maximum=2)
        or defaults.confirm_cycles,
        avoid_evacuated_seconds=r.number(
            "avoidEvacuatedSeconds", defaults.avoid_evacuated_seconds, low=0, high=3600
        ),
        learn_pressure_curve=r.boolean("learnPressureCurve", defaults.learn_pressure_curve),
        pressure_curve_samples=samples,
        pressure_curve_min_samples=min(samples, min_samples),
        max_payback_seconds=max(payback, max_payback),
    )


#: The load average per CPU (`tas.metrics.names.Derived.CPU_LOAD`): `atRiskLoad` reads it.
CPU_LOAD = MetricName("cpu_load")


def wanted_metric_names(args: LoadAwareArgs) -> set[MetricName]:
    names = metric_names(args.signals)
    if args.at_risk_load > 0 and not CPU_SIGNALS.isdisjoint(args.signals):
        names.add(CPU_LOAD)
    return names
