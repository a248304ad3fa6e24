"""Scenario families: distributions to draw scenarios from, so results hold beyond the few
scenarios anyone wrote (and could have tuned for).

A family file (YAML, `scenarios/families/default.yaml` is the reference) gives, for everything a
scenario holds, either a fixed value or a distribution:

- a plain value: always that value;
- a list: one item, each as likely (`[15s, 30s]`);
- `{uniform: [a, b]}`: a real number between a and b;
- `{int: [a, b]}`: a whole number from a to b, both included;
- a mapping of weights where a family names options (`shapes: {steady: 1, bursty: 2}`).

Scenario `i` of a family is drawn from its own random stream (`"<family seed>/<i>"`), so drawing
200 scenarios and then 20 gives the same first 20, and a scenario never depends on the others.
Each drawn scenario is a plain scenario document, validated by the scenario reader like any file
and saved beside the sweep's results, so any result can be replayed with `tas simulate FILE`.

What a draw builds, in order: the pipeline; the nodes (one size, or each node's own when the
draw says mixed); the fleet's CPU load, split over workloads whose pods have a usage shape
(steady, bursty, ramp, a daily trace, or a skewed mix of heavy and idle pods behind identical
requests) and requests at a drawn usage/request ratio, scaled down if the requests would not fit
the fleet; the policies (a drawn set, each workload linked to one); then the events each drawn
with its own probability: a node turning unhealthy, a health value flapping, a metric outage, a
bogus metric, a cordon, a third of the nodes tainted while load arrives, a scale-up, a burst of
new pods, nodes added, a node removed, and a scale-out (empty nodes join a hot fleet, then
the pods waiting for them arrive in a burst).

`healthEffects` says what the nodes of its set-health events do (a scenario's set-health
`effect`): `weights` over `none`, `degrade` and `fail-after`, `degrade` the share of its cores a
degraded node serves, `failAfter` the delay before a node fails. Each unhealthy episode (a
set-health, or every unhealthy value of a flap) draws one effect, from its own random stream,
so adding the field moved no other draw. Without it every effect is none (a gauge only).

A family may also set contenders the way a scenario does (`contenders:`, copied as it is into
every drawn scenario): to measure a flag of ours, such as `extender: {maxViolatingNodeShare: 1}`,
over the same draws as the default.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from tas.durations import DurationError, format_duration, parse_duration
from tas.problems import ProblemsError
from tas.quantity import parse_quantity

if TYPE_CHECKING:
    from tas_simulator.scenario import ContenderSettings

FAMILIES = Path(__file__).resolve().parent.parent / "scenarios" / "families"

#: The events a family may draw, each with its probability.
EVENT_KINDS = (
    "set-health",
    "health-flap",
    "metric-outage",
    "bogus-metric",
    "cordon",
    "taint-release",
    "scale-up",
    "burst",
    "add-nodes",
    "remove-nodes",
    "scale-out",
)
SHAPES = ("steady", "bursty", "ramp", "trace", "skewed")
#: The effects a set-health may have (`tas_simulator.scenario.HealthEffectKind`).
HEALTH_EFFECTS = ("none", "degrade", "fail-after")
_HEALTH_EFFECT_KEYS = ("weights", "degrade", "failAfter")
#: What `healthEffects` draws where the family does not say.
DEFAULT_DEGRADE = {"uniform": [0.25, 0.75]}
DEFAULT_FAIL_AFTER = ["2m", "5m", "10m"]
_TOP_KEYS = {
    "name",
    "description",
    "seed",
    "scenario",
    "metrics",
    "nodes",
    "load",
    "usagePerRequest",
    "workloads",
    "policies",
    "events",
    "healthEffects",
    "pressureModel",
    "contenders",
}
#: A family's `pressureModel`: each field a value or a distribution, drawn per scenario.
_PRESSURE_MODEL_FIELDS = ("kind", "burstiness", "nodeBias", "noise")


class FamilyError(ProblemsError):
    """A family file that cannot be used; `problems` lists every reason, each with its path."""


@dataclass(frozen=True)
class PolicySet:
    weight: float
    documents: tuple[Mapping[str, Any], ...]
    #: A health metric the set's policies judge: starting value, and the value that violates.
    health_metric: str = ""
    healthy: float = 0.0
    unhealthy: float = 0.0


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    seed: int
    raw: Mapping[str, Any]
    policy_sets: tuple[PolicySet, ...]
    source: str = ""
    #: What the family changes of each contender (`contenders:`), as every drawn scenario has it.
    contenders: Mapping[str, ContenderSettings] = field(default_factory=dict)


# ------------------------------------------------------------------------------ reading


def named_families() -> list[str]:
    from tas_simulator.scenario import names_in

    return names_in(FAMILIES)


def load_family(name_or_path: str) -> Family:
    from tas_simulator.scenario import read_named

    path, text = read_named(name_or_path, FAMILIES, FamilyError)
    try:
        document = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as error:
        raise FamilyError([f"{path}: not valid YAML: {error}"]) from error
    return read_family(document, source=str(path), base=path.parent)


def read_family(document: object, *, source: str = "", base: Path) -> Family:
    """Check every field (all problems listed at once), then draw one scenario as a last
    check, so a family that reads well but draws nonsense is refused here, not mid-sweep."""
    prefix = f"{source}: " if source else ""
    problems: list[str] = []
    if not isinstance(document, dict):
        raise FamilyError([f"{prefix}(document): must be a mapping"])
    for key in sorted(set(map(str, document)) - _TOP_KEYS):
        problems.append(f"{key}: unknown field (known: {', '.join(sorted(_TOP_KEYS))})")
    name = document.get("name")
    if not isinstance(name, str) or not name:
        problems.append("name: must be a non-empty string")
    seed = document.get("seed", 1)
    if not isinstance(seed, int) or isinstance(seed, bool):
        problems.append("seed: must be a whole number")
    checker = _Checker(problems)
    checker.section(document, "scenario", _DURATIONS_SCENARIO, required=("duration",))
    checker.section(document, "metrics", _DURATIONS_METRICS)
    checker.nodes(document.get("nodes"))
    checker.draw(document.get("load", 0.7), "load", _number_between(0.01, 3.0))
    checker.draw(document.get("usagePerRequest", 1.0), "usagePerRequest", _number_between(0.05, 20))
    checker.workloads(document.get("workloads"))
    checker.events(document.get("events") or {})
    checker.health_effects(document.get("healthEffects"))
    checker.pressure_model(document.get("pressureModel"))
    policy_sets = checker.policies(document.get("policies"), base)
    checker.contenders(document.get("contenders") or {})
    if problems:
        raise FamilyError([f"{prefix}{p}" for p in problems])
    family = Family(
        name=str(name),
        description=str(document.get("description", "")),
        seed=int(seed),
        raw=document,
        policy_sets=policy_sets,
        source=source,
    )
    from tas_simulator.scenario import ScenarioError, read_scenario

    try:
        first = read_scenario(draw_scenario(family, 0), source="", base=base)
    except ScenarioError as error:
        raise FamilyError(
            [f"{prefix}draws an unusable scenario: {p}" for p in error.problems]
        ) from error
    return dataclasses.replace(family, contenders=first.contenders)


_DURATIONS_SCENARIO = (
    "duration",
    "step",
    "warmup",
    "startupDelay",
    "startupDelayMost",
    "syncPeriod",
    "deschedulingInterval",
)
_DURATIONS_METRICS = ("scrapeInterval", "window", "delay")


def _number_between(low: float, high: float) -> Any:
    def check(value: object) -> str | None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "must be a number"
        if not low <= value <= high:
            return f"must be between {low:g} and {high:g}"
        return None

    return check


def _duration_check(value: object) -> str | None:
    try:
        seconds = float(value) if isinstance(value, int | float) else parse_duration(str(value))
    except DurationError as error:
        return str(error)
    return None if seconds >= 0 else "must not be negative"


def _share_served_check(value: object) -> str | None:
    """A degraded node's share of its cores: more than 0 (a node that serves nothing has
    failed) and less than 1 (one that serves all is not degraded)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "must be a number"
    return None if 0 < value < 1 else "must be more than 0 and less than 1"


def _quantity_check(value: object) -> str | None:
    try:
        amount = parse_quantity(value if isinstance(value, int | float | str) else str(value))
    except ValueError as error:
        return str(error)
    return None if amount > 0 else "must be more than zero"


class _Checker:
    """Every problem with its path; nothing stops at the first."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems

    def draw(self, spec: object, path: str, check: Any) -> None:
        """A value or a distribution over values that `check` accepts."""
        if isinstance(spec, list):
            if not spec:
                self.problems.append(f"{path}: an empty list has nothing to draw")
            for i, item in enumerate(spec):
                self.draw(item, f"{path}[{i}]", check)
            return
        if isinstance(spec, dict):
            if len(spec) == 1 and next(iter(spec)) in ("uniform", "int"):
                kind, bounds = next(iter(spec.items()))
                if not (isinstance(bounds, list) and len(bounds) == 2):
                    self.problems.append(f"{path}.{kind}: must be [low, high]")
                    return
                for i, bound in enumerate(bounds):
                    if kind == "int" and (isinstance(bound, bool) or not isinstance(bound, int)):
                        self.problems.append(f"{path}.{kind}[{i}]: must be a whole number")
                        continue
                    reason = check(bound)
                    if reason:
                        self.problems.append(f"{path}.{kind}[{i}]: {reason}")
                if all(isinstance(b, int | float) for b in bounds) and bounds[0] > bounds[1]:
                    self.problems.append(f"{path}.{kind}: low is above high")
                return
            self.problems.append(
                f"{path}: a distribution is {{uniform: [a, b]}} or {{int: [a, b]}}"
            )
            return
        reason = check(spec)
        if reason:
            self.problems.append(f"{path}: {reason}")

    def weights(self, spec: object, path: str, known: Sequence[str]) -> None:
        if not isinstance(spec, dict) or not spec:
            self.problems.append(f"{path}: must map options to weights ({', '.join(known)})")
            return
        for key, weight in spec.items():
            if key not in known:
                close = difflib.get_close_matches(str(key), known, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                self.problems.append(f"{path}.{key}: unknown (known: {', '.join(known)}){hint}")
            if isinstance(weight, bool) or not isinstance(weight, int | float) or weight < 0:
                self.problems.append(f"{path}.{key}: a weight is a number of at least 0")
        if all(isinstance(w, int | float) for w in spec.values()) and sum(spec.values()) <= 0:
            self.problems.append(f"{path}: the weights add up to nothing")

    def section(
        self,
        document: Mapping[str, Any],
        key: str,
        durations: Sequence[str],
        required: Sequence[str] = (),
    ) -> None:
        body = document.get(key) or {}
        if not isinstance(body, dict):
            self.problems.append(f"{key}: must be a mapping")
            return
        for field_name in required:
            if field_name not in body:
                self.problems.append(f"{key}.{field_name}: required")
        for field_name, spec in body.items():
            if field_name not in durations:
                self.problems.append(f"{key}.{field_name}: unknown (known: {', '.join(durations)})")
                continue
            self.draw(spec, f"{key}.{field_name}", _duration_check)

    def nodes(self, body: object) -> None:
        if not isinstance(body, dict):
            self.problems.append("nodes: required, a mapping with count and sizes")
            return
        self.draw(body.get("count"), "nodes.count", _number_between(1, 2000))
        self.draw(body.get("mixedSizes", 0.0), "nodes.mixedSizes", _number_between(0, 1))
        sizes = body.get("sizes")
        if not isinstance(sizes, list) or not sizes:
            self.problems.append("nodes.sizes: a list of {weight, cpu, memory}")
            return
        for i, size in enumerate(sizes):
            where = f"nodes.sizes[{i}]"
            if not isinstance(size, dict):
                self.problems.append(f"{where}: must be a mapping")
                continue
            for field_name in ("cpu", "memory"):
                reason = _quantity_check(size.get(field_name))
                if reason:
                    self.problems.append(f"{where}.{field_name}: {reason}")
            reason = _number_between(0, 1e6)(size.get("weight", 1))
            if reason:
                self.problems.append(f"{where}.weight: {reason}")

    def workloads(self, body: object) -> None:
        if not isinstance(body, dict):
            self.problems.append("workloads: required, a mapping with count, podCpu and shapes")
            return
        self.draw(body.get("count"), "workloads.count", _number_between(1, 50))
        self.draw(body.get("podCpu"), "workloads.podCpu", _quantity_check)
        self.draw(body.get("memoryPerCore", "2Gi"), "workloads.memoryPerCore", _quantity_check)
        self.draw(body.get("liveMigration", 0.0), "workloads.liveMigration", _number_between(0, 1))
        self.weights(body.get("shapes"), "workloads.shapes", SHAPES)

    def events(self, body: object) -> None:
        if not isinstance(body, dict):
            self.problems.append("events: must map event kinds to probabilities")
            return
        for kind, probability in body.items():
            if kind not in EVENT_KINDS:
                self.problems.append(f"events.{kind}: unknown (known: {', '.join(EVENT_KINDS)})")
            reason = _number_between(0, 1)(probability)
            if reason:
                self.problems.append(f"events.{kind}: a probability {reason}")

    def health_effects(self, body: object) -> None:
        if body is None:
            return
        if not isinstance(body, dict):
            self.problems.append(
                f"healthEffects: must be a mapping ({', '.join(_HEALTH_EFFECT_KEYS)})"
            )
            return
        for key in body:
            if key not in _HEALTH_EFFECT_KEYS:
                close = difflib.get_close_matches(str(key), _HEALTH_EFFECT_KEYS, n=1)
                hint = f"; did you mean {close[0]}?" if close else ""
                self.problems.append(
                    f"healthEffects.{key}: unknown (known: {', '.join(_HEALTH_EFFECT_KEYS)}){hint}"
                )
        self.weights(body.get("weights"), "healthEffects.weights", HEALTH_EFFECTS)
        self.draw(
            body.get("degrade", DEFAULT_DEGRADE),
            "healthEffects.degrade",
            _share_served_check,
        )
        self.draw(
            body.get("failAfter", DEFAULT_FAIL_AFTER), "healthEffects.failAfter", _duration_check
        )

    def pressure_model(self, body: object) -> None:
        """The kinds and ranges are the scenario schema's, checked on a drawn scenario."""
        if body is None:
            return
        if not isinstance(body, dict):
            self.problems.append("pressureModel: must be a mapping")
            return
        for key in sorted(set(map(str, body)) - set(_PRESSURE_MODEL_FIELDS)):
            known = ", ".join(_PRESSURE_MODEL_FIELDS)
            self.problems.append(f"pressureModel.{key}: unknown (known: {known})")
        for key in ("burstiness", "nodeBias", "noise"):
            if key in body:
                self.draw(body[key], f"pressureModel.{key}", _number_between(0.0, 5.0))

    def contenders(self, body: object) -> None:
        """Checked in full with the drawn scenario; here only what a family cannot carry."""
        if not isinstance(body, dict):
            self.problems.append("contenders: must map contender names to their settings")
            return
        for name, settings in body.items():
            if isinstance(settings, dict) and "deschedulerFile" in settings:
                # Drawn scenarios are saved beside the sweep's results, where a path relative
                # to the family file would no longer be found.
                self.problems.append(
                    f"contenders.{name}.deschedulerFile: a family gives the DeschedulerPolicy "
                    "inline (descheduler: {...})"
                )

    def policies(self, body: object, base: Path) -> tuple[PolicySet, ...]:
        if not isinstance(body, list) or not body:
            self.problems.append("policies: a list of {weight, files, health?}")
            return ()
        sets: list[PolicySet] = []
        for i, entry in enumerate(body):
            where = f"policies[{i}]"
            if not isinstance(entry, dict) or not isinstance(entry.get("files"), list):
                self.problems.append(f"{where}: must be {{weight, files: [...], health?}}")
                continue
            documents: list[Mapping[str, Any]] = []
            for j, name in enumerate(entry["files"]):
                try:
                    loaded = yaml.safe_load((base / str(name)).read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
                    self.problems.append(f"{where}.files[{j}]: cannot read {name}: {error}")
                    continue
                if not isinstance(loaded, dict):
                    self.problems.append(f"{where}.files[{j}]: not a TASPolicy document")
                    continue
                documents.append(loaded)
            weight = entry.get("weight", 1)
            reason = _number_between(0, 1e6)(weight)
            if reason:
                self.problems.append(f"{where}.weight: {reason}")
                weight = 0
            health = entry.get("health") or {}
            if not isinstance(health, dict) or (
                health and not {"metric", "healthy", "unhealthy"} <= set(health)
            ):
                self.problems.append(f"{where}.health: must be {{metric, healthy, unhealthy}}")
                health = {}
            sets.append(
                PolicySet(
                    weight=float(weight),
                    documents=tuple(documents),
                    health_metric=str(health.get("metric", "")),
                    healthy=float(health.get("healthy", 0)),
                    unhealthy=float(health.get("unhealthy", 0)),
                )
            )
        return tuple(sets)


# ------------------------------------------------------------------------------ drawing


class _Draw:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def value(self, spec: Any) -> Any:
        if isinstance(spec, list):
            return self.value(self.rng.choice(spec))
        if isinstance(spec, dict):
            ((kind, (low, high)),) = spec.items()
            if kind == "int":
                return self.rng.randint(int(low), int(high))
            return self.rng.uniform(float(low), float(high))
        return spec

    def seconds(self, spec: Any) -> float:
        if isinstance(spec, dict) and set(spec) == {"uniform"}:
            # Durations between two durations (`{uniform: [2m, 10m]}`).
            low, high = (self.seconds(bound) for bound in spec["uniform"])
            return self.rng.uniform(low, high)
        value = self.value(spec)
        return float(value) if isinstance(value, int | float) else parse_duration(str(value))

    def quantity(self, spec: Any) -> float:
        value = self.value(spec)
        return parse_quantity(value if isinstance(value, int | float) else str(value))

    def weighted(self, weights: Mapping[str, float]) -> str:
        names = sorted(weights)
        return self.rng.choices(names, weights=[float(weights[n]) for n in names])[0]


def _cores(value: float) -> str:
    return f"{max(1, round(value * 1000))}m"


def _mib(value: float) -> str:
    return f"{max(1, round(value / 2**20))}Mi"


def _startup_delay(draw: _Draw, timing: Mapping[str, Any]) -> Any:
    """One start-up for every start, or with `startupDelayMost` a range each start draws from
    (`{uniform: [least, most]}`; the most is drawn only then, so a family without it draws
    exactly as before)."""
    least = draw.seconds(timing.get("startupDelay", "10s"))
    if "startupDelayMost" not in timing:
        return format_duration(least)
    most = max(least, draw.seconds(timing["startupDelayMost"]))
    return {"uniform": [format_duration(least), format_duration(most)]}


def draw_scenario(family: Family, index: int) -> dict[str, Any]:
    """Scenario `index` of the family, as a scenario document."""
    raw = family.raw
    draw = _Draw(random.Random(f"{family.seed}/{index}"))
    timing = raw.get("scenario") or {}
    duration = draw.seconds(timing["duration"])
    warmup = min(draw.seconds(timing.get("warmup", "5m")), duration / 3)
    step = draw.seconds(timing.get("step", "5s"))
    metrics = raw.get("metrics") or {}
    document: dict[str, Any] = {
        "name": f"{family.name}-{index:04d}",
        "description": f"Drawn from the {family.name} family (scenario {index}).",
        "duration": format_duration(duration),
        "step": format_duration(step),
        "seed": draw.rng.randrange(1, 2**31),
        "warmup": format_duration(warmup),
        "startupDelay": _startup_delay(draw, timing),
        "syncPeriod": format_duration(draw.seconds(timing.get("syncPeriod", "10s"))),
        "deschedulingInterval": format_duration(
            draw.seconds(timing.get("deschedulingInterval", "60s"))
        ),
        "metrics": {
            key: format_duration(draw.seconds(metrics.get(key, default)))
            for key, default in (("scrapeInterval", "15s"), ("window", "1m"), ("delay", "0s"))
        },
    }
    policy_set = family.policy_sets[
        draw.rng.choices(
            range(len(family.policy_sets)), weights=[s.weight for s in family.policy_sets]
        )[0]
    ]
    nodes, capacity = _draw_nodes(draw, raw["nodes"], policy_set)
    document["nodes"] = nodes
    document["workloads"] = _draw_workloads(
        draw, raw, policy_set, capacity, duration, stream=(family.seed, index)
    )
    document["policies"] = [dict(d) for d in policy_set.documents]
    document["events"] = _draw_events(
        draw,
        raw.get("events") or {},
        document,
        policy_set,
        duration,
        warmup,
        (family.seed, index),
        raw.get("healthEffects"),
    )
    if raw.get("pressureModel"):
        # Drawn last, so a family without it draws everything else exactly as before.
        document["pressureModel"] = {
            key: draw.value(spec) for key, spec in sorted(raw["pressureModel"].items())
        }
    if raw.get("contenders"):
        # Not drawn: every scenario runs the contenders as the family sets them.
        document["contenders"] = copy.deepcopy(raw["contenders"])
    return document


def _draw_nodes(
    draw: _Draw, spec: Mapping[str, Any], policy_set: PolicySet
) -> tuple[list[dict[str, Any]], tuple[float, float]]:
    count = int(draw.value(spec["count"]))
    sizes = spec["sizes"]
    weights = [float(s.get("weight", 1)) for s in sizes]
    mixed = draw.rng.random() < float(draw.value(spec.get("mixedSizes", 0.0)))
    first = draw.rng.choices(sizes, weights=weights)[0]
    nodes: list[dict[str, Any]] = []
    cpu_total = memory_total = 0.0
    for i in range(1, count + 1):
        size = draw.rng.choices(sizes, weights=weights)[0] if mixed else first
        node: dict[str, Any] = {
            "name": f"node-{i:02d}",
            "cpu": size["cpu"],
            "memory": size["memory"],
        }
        if policy_set.health_metric:
            node["metrics"] = {policy_set.health_metric: policy_set.healthy}
        nodes.append(node)
        cpu_total += parse_quantity(str(size["cpu"]))
        memory_total += parse_quantity(str(size["memory"]))
    return nodes, (cpu_total, memory_total)


def _policy_of(document: Mapping[str, Any]) -> tuple[str, str]:
    metadata = document.get("metadata") or {}
    return str(metadata.get("namespace", "default")), str(metadata.get("name", ""))


def _deschedules(document: Mapping[str, Any]) -> bool:
    strategies = (document.get("spec") or {}).get("strategies") or {}
    return "deschedule" in strategies


def _draw_workloads(
    draw: _Draw,
    raw: Mapping[str, Any],
    policy_set: PolicySet,
    capacity: tuple[float, float],
    duration: float,
    *,
    stream: tuple[int, int],
) -> list[dict[str, Any]]:
    cpu_capacity, memory_capacity = capacity
    family_seed, index = stream
    spec = raw["workloads"]
    count = int(draw.value(spec["count"]))
    load = float(draw.value(raw.get("load", 0.7)))
    shares = [draw.rng.uniform(0.5, 1.5) for _ in range(count)]
    total_share = sum(shares)
    workloads: list[dict[str, Any]] = []
    for i, share in enumerate(shares):
        pod_cpu = draw.quantity(spec["podCpu"])
        demand = load * cpu_capacity * share / total_share
        replicas = max(1, round(demand / pod_cpu))
        ratio = float(draw.value(raw.get("usagePerRequest", 1.0)))
        memory_per_core = draw.quantity(spec.get("memoryPerCore", "2Gi"))
        shape = draw.weighted(spec["shapes"])
        namespace, policy = _policy_of(draw.rng.choice(policy_set.documents))
        workload: dict[str, Any] = {
            "name": f"{shape}-{i + 1}",
            "namespace": namespace,
            "replicas": replicas,
            "requests": {"cpu": pod_cpu / ratio, "memory": pod_cpu * memory_per_core * 0.8},
            "labels": {"app": f"{shape}-{i + 1}", "telemetry-policy": policy},
        }
        deschedules = any(
            _deschedules(d) and _policy_of(d) == (namespace, policy) for d in policy_set.documents
        )
        if deschedules:
            # As TAS's demo pod spec: the label the controller sets is what a descheduler
            # without TAS's rules (RemovePodsViolatingNodeAffinity) acts on.
            workload["nodeAffinity"] = [
                {
                    "matchExpressions": [
                        {"key": policy, "operator": "NotIn", "values": ["violating"]}
                    ]
                }
            ]
        # A workload of VMs (KubeVirt launcher pods: an eviction is a live migration) is drawn
        # from its own stream, so adding the option moved no other draw of the family.
        vms = random.Random(f"{family_seed}/{index}/migration/{i}")
        if vms.random() < float(draw.value(spec.get("liveMigration", 0.0))):
            workload["migration"] = "live"
        memory = {"profile": "steady", "value": _mib(pod_cpu * memory_per_core * 0.6)}
        if shape == "skewed":
            # The PSI evaluation's case: heavy and idle pods behind identical requests.
            workload["usageMix"] = [
                {
                    "share": 1,
                    "cpu": {"profile": "steady", "value": _cores(pod_cpu * 1.9)},
                    "memory": memory,
                },
                {"share": 1, "cpu": {"profile": "idle", "value": "50m"}, "memory": memory},
            ]
        else:
            workload["usage"] = {
                "cpu": _usage_shape(draw, shape, pod_cpu, duration),
                "memory": memory,
            }
        workloads.append(workload)
    _fit_requests(workloads, cpu_capacity, memory_capacity)
    for workload in workloads:
        workload["requests"] = {
            "cpu": _cores(workload["requests"]["cpu"]),
            "memory": _mib(workload["requests"]["memory"]),
        }
    return workloads


def _fit_requests(workloads: list[dict[str, Any]], cpu: float, memory: float) -> None:
    """Requests that leave room: at most 85% of the fleet, so the drawn load decides what
    happens, not a cluster that cannot place its pods at all."""
    for resource, capacity in (("cpu", cpu), ("memory", memory)):
        asked = sum(w["requests"][resource] * w["replicas"] for w in workloads)
        if asked > 0.85 * capacity:
            factor = 0.85 * capacity / asked
            for workload in workloads:
                workload["requests"][resource] *= factor


def _usage_shape(draw: _Draw, shape: str, mean: float, duration: float) -> dict[str, Any]:
    rng = draw.rng
    if shape == "steady":
        return {"profile": "steady", "value": _cores(mean)}
    if shape == "bursty":
        return {
            "profile": "bursty",
            "mean": _cores(mean),
            "peak": _cores(mean * rng.uniform(1.4, 2.6)),
            "period": format_duration(rng.choice((60.0, 120.0, 180.0, 300.0))),
            "jitter": round(rng.uniform(0.2, 0.8), 2),
        }
    if shape == "ramp":
        start, end = sorted((mean * rng.uniform(0.3, 0.8), mean * rng.uniform(1.2, 1.7)))
        if rng.random() < 0.5:
            start, end = end, start
        return {
            "profile": "ramp",
            "start": _cores(start),
            "end": _cores(end),
            "from": format_duration(round(duration * 0.2)),
            "to": format_duration(round(duration * 0.7)),
        }
    # A day's shape squeezed into the run: a quiet night, a morning rise, a peak, an evening
    # fall, with noise; its mean is the drawn pod usage.
    phase = rng.uniform(0, 2 * math.pi)
    points = []
    for k in range(13):
        t = duration * k / 12
        level = 1 + 0.6 * math.sin(2 * math.pi * k / 12 + phase) + rng.uniform(-0.15, 0.15)
        points.append([round(t, 1), round(max(0.05, mean * level), 3)])
    return {"profile": "trace", "points": points}


class _HealthEffects:
    """The effects of a scenario's unhealthy episodes (`healthEffects`): each episode's from its
    own random stream, so the field moves no other draw. None without the field."""

    def __init__(self, spec: Mapping[str, Any] | None, stream: tuple[int, int]) -> None:
        self.spec = spec
        self.stream = stream

    def draw(self, episode: str) -> dict[str, Any]:
        """The `effect` entry of an episode's unhealthy set-health (empty: none given)."""
        if self.spec is None:
            return {}
        draw = _Draw(random.Random(f"{self.stream[0]}/{self.stream[1]}/health-effect/{episode}"))
        kind = draw.weighted(self.spec["weights"])
        if kind == "degrade":
            share = float(draw.value(self.spec.get("degrade", DEFAULT_DEGRADE)))
            return {"effect": {"degrade": min(max(round(share, 3), 0.001), 0.999)}}
        if kind == "fail-after":
            delay = draw.seconds(self.spec.get("failAfter", DEFAULT_FAIL_AFTER))
            return {"effect": {"fail-after": format_duration(round(delay))}}
        return {"effect": "none"}


def _draw_events(
    draw: _Draw,
    probabilities: Mapping[str, float],
    document: Mapping[str, Any],
    policy_set: PolicySet,
    duration: float,
    warmup: float,
    stream: tuple[int, int],
    health_effects: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    rng = draw.rng
    nodes = [n["name"] for n in document["nodes"]]
    workloads = document["workloads"]
    events: list[dict[str, Any]] = []

    def when(low: float = 0.0, high: float = 0.8) -> float:
        return round(rng.uniform(max(warmup * 0.5, duration * low), duration * high))

    def happens(kind: str) -> bool:
        return rng.random() < float(probabilities.get(kind, 0.0))

    def at(seconds: float) -> str:
        return format_duration(seconds)

    health = policy_set.health_metric
    effects = _HealthEffects(health_effects, stream)
    if health and happens("set-health"):
        node, start = rng.choice(nodes), when(0.1, 0.5)
        events.append(
            {
                "at": at(start),
                "set-health": {
                    "nodes": [node],
                    "metric": health,
                    "value": policy_set.unhealthy,
                    **effects.draw("set-health"),
                },
            }
        )
        back = start + rng.uniform(duration * 0.1, duration * 0.4)
        if back < duration:
            events.append(
                {
                    "at": at(round(back)),
                    "set-health": {"nodes": [node], "metric": health, "value": policy_set.healthy},
                }
            )
    if health and happens("health-flap"):
        node, t = rng.choice(nodes), when(0.1, 0.3)
        flip = rng.uniform(45, 180)
        bad = True
        effect = effects.draw("health-flap")
        while t < duration * 0.9:
            value = policy_set.unhealthy if bad else policy_set.healthy
            body = {"nodes": [node], "metric": health, "value": value, **(effect if bad else {})}
            events.append({"at": at(t), "set-health": body})
            t, bad = round(t + flip), not bad
        if not bad:
            events.append(
                {
                    "at": at(min(t, duration - 1)),
                    "set-health": {"nodes": [node], "metric": health, "value": policy_set.healthy},
                }
            )
    if happens("metric-outage"):
        events.append(
            {"at": at(when(0.1, 0.6)), "metric-outage": {"for": at(round(rng.uniform(120, 600)))}}
        )
    if health and happens("bogus-metric"):
        events.append(
            {
                "at": at(when(0.1, 0.6)),
                "bogus-metric": {
                    "metric": health,
                    "value": policy_set.unhealthy,
                    "for": at(round(rng.uniform(120, 300))),
                },
            }
        )
    if len(nodes) > 2 and happens("cordon"):
        node, start = rng.choice(nodes), when(0.1, 0.5)
        events.append({"at": at(start), "cordon": {"nodes": [node]}})
        events.append(
            {"at": at(round(start + rng.uniform(120, 600))), "uncordon": {"nodes": [node]}}
        )
    if len(nodes) > 2 and happens("taint-release"):
        tainted = sorted(rng.sample(nodes, max(1, len(nodes) // 3)))
        start = round(max(60.0, warmup * 0.5))
        events.append(
            {
                "at": at(start),
                "taint": {
                    "nodes": tainted,
                    "key": "maintenance",
                    "value": "true",
                    "effect": "NoSchedule",
                },
            }
        )
        events.append(
            {
                "at": at(round(start + rng.uniform(300, 900))),
                "untaint": {"nodes": tainted, "key": "maintenance"},
            }
        )
    if happens("scale-up"):
        workload = rng.choice(workloads)
        grown = max(workload["replicas"] + 1, round(workload["replicas"] * rng.uniform(1.2, 1.6)))
        events.append(
            {"at": at(when(0.2, 0.6)), "scale": {"workload": workload["name"], "replicas": grown}}
        )
    if happens("burst"):
        base = rng.choice(workloads)
        burst = copy.deepcopy(base)
        burst["name"] = "burst"
        burst["replicas"] = 0
        burst["labels"] = {**base["labels"], "app": "burst"}
        workloads.append(burst)
        size = max(3, round(len(nodes) * rng.uniform(2, 6)))
        events.append(
            {
                "at": at(when(0.2, 0.5)),
                "scale": {"workload": "burst", "replicas": size, "burst": True},
            }
        )
    if happens("add-nodes"):
        size = document["nodes"][0]
        added = {
            "name": "added-{i}",
            "count": rng.randint(1, 3),
            "cpu": size["cpu"],
            "memory": size["memory"],
        }
        if health:
            added["metrics"] = {health: policy_set.healthy}
        events.append({"at": at(when(0.2, 0.6)), "add-nodes": added})
    untouched = [n for n in nodes if not any(n in str(e) for e in events)]
    if len(nodes) > 3 and untouched and happens("remove-nodes"):
        events.append({"at": at(when(0.3, 0.7)), "remove-nodes": {"nodes": [untouched[-1]]}})
    _draw_scale_out(probabilities, document, policy_set, duration, warmup, events, stream)
    return events


def _draw_scale_out(
    probabilities: Mapping[str, float],
    document: Mapping[str, Any],
    policy_set: PolicySet,
    duration: float,
    warmup: float,
    events: list[dict[str, Any]],
    stream: tuple[int, int],
) -> None:
    """A cluster autoscaler's answer to a hot fleet: empty nodes join, and the pods that were
    waiting for them arrive in a burst seconds later (the named scale-out scenario's shape).
    Drawn from its own random stream, so adding it moved no other draw of the family."""
    rng = random.Random(f"{stream[0]}/{stream[1]}/scale-out")
    if rng.random() >= float(probabilities.get("scale-out", 0.0)):
        return
    workloads = document["workloads"]
    size = document["nodes"][0]
    joined = rng.randint(2, 4)
    added: dict[str, Any] = {
        "name": "joined-{i}",
        "count": joined,
        "cpu": size["cpu"],
        "memory": size["memory"],
    }
    if policy_set.health_metric:
        added["metrics"] = {policy_set.health_metric: policy_set.healthy}
    start = round(rng.uniform(max(warmup * 0.5, duration * 0.2), duration * 0.5))
    events.append({"at": format_duration(start), "add-nodes": added})
    arriving = copy.deepcopy(rng.choice([w for w in workloads if w["name"] != "burst"]))
    arriving["name"] = "arriving"
    arriving["replicas"] = 0
    arriving["labels"] = {**arriving["labels"], "app": "arriving"}
    workloads.append(arriving)
    burst = max(3, round(joined * rng.uniform(3, 8)))
    events.append(
        {
            "at": format_duration(start + round(rng.uniform(5, 60))),
            "scale": {"workload": "arriving", "replicas": burst, "burst": True},
        }
    )
