"""Scenario files: YAML checked against `scenarios/schema.json`, then read into frozen values.

A scenario is validated once, here, so a run cannot fail on it: the JSON Schema catches the
shape (every violation, each with its path, `workloads[2].usage.cpu.peak`), then the meaning is
checked (names unique, events naming nodes and workloads that exist, policies and descheduler
documents that their own readers accept, trace files that parse). Every problem is listed at
once; nothing else escapes `load_scenario_text`, whatever the text (a hypothesis test feeds it
arbitrary YAML).

Errors:
    ScenarioError      the file cannot be used; `problems` lists every reason with its path
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import enum
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from descheduler.config import ConfigError, parse_config
from extender.settings import ExtenderSettings
from tas.cluster.model import (
    NodeSelectorTerm,
    Requirement,
    Taint,
    TaintEffect,
    Toleration,
)
from tas.durations import DurationError, parse_duration
from tas.policies.model import PolicyValidationError, parse_policy
from tas.problems import ProblemsError
from tas.quantity import QuantityError, parse_quantity
from tas.rules import ScoreMode
from tas_inmemory.workload import ProfileKind, UsageProfile
from tas_simulator.baselines import registry_for

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = REPO / "scenarios"
SCHEMA_PATH = SCENARIOS / "schema.json"

DEFAULT_HEALTH_METRIC = "health_metric"
_PATTERN = re.compile(r"\{i(?::(0?\d{1,2})d)?\}")


def _strategies(policy: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = policy.get("spec")
    strategies = spec.get("strategies") if isinstance(spec, Mapping) else None
    return strategies if isinstance(strategies, Mapping) else {}


class ScenarioError(ProblemsError):
    """The scenario cannot be used; `problems` lists every reason, each with its path."""


@dataclass(frozen=True)
class Pipeline:
    scrape_interval: float = 15.0
    window: float = 60.0
    delay: float = 0.0


@dataclass(frozen=True)
class LiveMigration:
    """What a live migration costs (KubeVirt's pre-copy: memory is copied to the target while
    the VM runs on the source, then the VM pauses to switch over)."""

    #: Bytes copied per second.
    bandwidth: float = 1024.0**3
    #: The switch-over pause, seconds.
    pause: float = 0.5
    #: CPU the copy itself takes while memory copies, beside the VM's own use: QEMU's migration
    #: thread on the source (one thread, busy while it scans and sends pages) and the receiving
    #: side on the target. Estimates, settable per scenario; a move is not free for either node.
    source_cores: float = 1.0
    target_cores: float = 0.5


#: A scenario that gives no `startupDelay` draws each start's start-up between these (seconds):
#: an image cached and a small process (10 s) to an image pulled and a JVM or cache warmed
#: (two minutes), the range the spec asks start-ups to be drawn over.
DEFAULT_STARTUP_LEAST = 10.0
DEFAULT_STARTUP_MOST = 120.0


class PressureModelKind(enum.StrEnum):
    ERLANG_C = "erlang-c"
    BURSTY = "bursty"


@dataclass(frozen=True)
class PressureModel:
    """How the world's nodes come under CPU pressure (`tas_simulator.pressure_model`).

    The default, for a scenario or family that names none, is the bursty model (issue 54),
    never Erlang C, the curve ours predicts with; `ERLANG_C` is only for a scenario that asks
    for it by name (`PressureModel.erlang_c`). Why these defaults: `burstiness` 1 is the
    variability of an exponential demand, the same as Erlang C's memoryless work, on another
    curve, so the default is neither calmer nor wilder than the queue ours assumes, only not
    it; `node_bias` 0.3 spreads the nodes' factors over about 0.55-1.8 (95%), as hardware
    generations, SMT siblings and noisy neighbours make nodes of one size differ (the middle
    of large-slow's 0.1-0.5); `noise` 0.03 is a few points of PSI between two reads of a
    steady load, within large-slow's 0.02-0.05.
    """

    kind: PressureModelKind = PressureModelKind.BURSTY
    #: `bursty`: the coefficient of variation of a one-core node's demand.
    burstiness: float = 1.0
    #: `bursty`: the spread (sigma of a log-normal) of each node's factor on the burstiness.
    node_bias: float = 0.3
    #: Measurement noise on the PSI reading (standard deviation, per step and node).
    noise: float = 0.03

    @classmethod
    def erlang_c(cls, *, noise: float = 0.0) -> PressureModel:
        """The M/M/c queue ours predicts with, the same for every node of a size, read with
        `noise` (none unless the scenario gives it)."""
        return cls(PressureModelKind.ERLANG_C, node_bias=0.0, noise=noise)


@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: float
    memory: float
    pods: int = 110
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    metrics: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageVariant:
    cpu: UsageProfile
    memory: UsageProfile
    share: float = 1.0


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    namespace: str
    replicas: int
    requests: Mapping[str, float]
    usage: tuple[UsageVariant, ...]
    kind: str = "ReplicaSet"
    labels: Mapping[str, str] = field(default_factory=dict)
    priority: int = 0
    node_selector: Mapping[str, str] = field(default_factory=dict)
    node_affinity: tuple[NodeSelectorTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    #: "restart" (an evicted pod starts again elsewhere) or "live" (a VM's launcher pod: an
    #: eviction is a live migration, as KubeVirt answers it).
    migration: str = "restart"


class EventKind(enum.StrEnum):
    SET_HEALTH = "set-health"
    TAINT = "taint"
    UNTAINT = "untaint"
    CORDON = "cordon"
    UNCORDON = "uncordon"
    SCALE = "scale"
    ADD_NODES = "add-nodes"
    REMOVE_NODES = "remove-nodes"
    METRIC_OUTAGE = "metric-outage"
    BOGUS_METRIC = "bogus-metric"


class HealthEffectKind(enum.StrEnum):
    """What a node does once a set-health event calls it unhealthy (`HealthEffect`)."""

    NONE = "none"
    DEGRADE = "degrade"
    FAIL_AFTER = "fail-after"


@dataclass(frozen=True)
class HealthEffect:
    """What a set-health event does to its nodes, from the event until the node's next
    set-health (`tas_simulator.world` models it):

    - none: nothing; the value is a gauge the policies read (the default, and what every
      set-health did before effects existed);
    - degrade: the node serves only `share` of its cores (its pods get proportionally less
      CPU: stall, and work lost, through the usage model);
    - fail-after: `delay` seconds after the event the node fails, unless a later set-health of
      the node comes first. A failed node stays failed: NotReady, its pods stopped, deleted by
      the taint-based eviction and replaced by their controllers elsewhere.
    """

    kind: HealthEffectKind = HealthEffectKind.NONE
    share: float = 1.0
    delay: float = 0.0


NO_HEALTH_EFFECT = HealthEffect()


@dataclass(frozen=True)
class Event:
    at: float
    kind: EventKind
    nodes: tuple[str, ...] = ()
    metric: str = ""
    value: float = 0.0
    taint: Taint | None = None
    workload: str = ""
    replicas: int = 0
    burst: bool = False
    added: tuple[NodeSpec, ...] = ()
    lasts: float = 0.0
    #: set-health only: what the node does from now on (none: a gauge only).
    effect: HealthEffect = NO_HEALTH_EFFECT


#: The contenders that run this project's extender service: the only ones whose extender a
#: scenario may configure (`contenders.<name>.extender`). The clairvoyant reference runs
#: ours' code, with ours' settings.
OURS_EXTENDER_CONTENDERS = frozenset({"ours"})
#: The contenders without a descheduler: no cadence to set (`contenders.<name>.
#: deschedulingInterval`).
NO_DESCHEDULER_CONTENDERS = frozenset({"requests"})
#: The contenders whose cadence a scenario cannot set under `contenders`: none since every
#: contender, ours included, runs at its source's shipped cadence (tas_simulator.contenders); the
#: top-level `deschedulingInterval` reaches no contender.
SCENARIO_INTERVAL_CONTENDERS: frozenset[str] = frozenset()


def extender_flags(settings: ExtenderSettings) -> list[str]:
    """The `tas extender` flags that give `settings` (only those that differ from the
    defaults), as a user would type them: what a report says a contender ran with."""
    defaults = ExtenderSettings()
    flags: list[str] = []
    if settings.max_violating_node_share != defaults.max_violating_node_share:
        flags.append(f"--max-violating-node-share {settings.max_violating_node_share:g}")
    if settings.score_mode is not defaults.score_mode:
        flags.append(f"--score-mode {settings.score_mode.value}")
    flags += [f"--filter-on-estimates {p}" for p in sorted(settings.filter_estimate_policies)]
    return flags


@dataclass(frozen=True)
class ContenderSettings:
    """What a scenario changes of one contender (None: the contender's default)."""

    descheduler: Mapping[str, Any] | None = None
    extender_weight: int | None = None
    #: `tas extender`'s flags, as `ExtenderSettings` (ours only): what a user would try, such
    #: as `--max-violating-node-share 1`, run on the same scenario.
    extender: ExtenderSettings | None = None
    #: Seconds between its descheduling cycles, where the scenario changes its source's
    #: shipped cadence (`tas_simulator.contenders`).
    descheduling_interval: float | None = None

    def runs_with(self, contender: str, *, set_by: str) -> str | None:
        """The line a report prints under its table when `set_by` (the scenario, the family)
        changed `contender`; None when nothing was changed."""
        changes = self.described()
        return f"{contender} runs with {'; '.join(changes)} (set by {set_by})" if changes else None

    def described(self) -> list[str]:
        """What the scenario changes, in words (empty: the contender's defaults)."""
        said: list[str] = []
        if self.descheduler is not None:
            said.append("the scenario's DeschedulerPolicy")
        if self.extender_weight is not None:
            said.append(f"extender weight {self.extender_weight}")
        if self.extender is not None and (flags := extender_flags(self.extender)):
            said.append("tas extender " + " ".join(flags))
        if self.descheduling_interval is not None:
            said.append(f"a descheduling cycle every {self.descheduling_interval:g}s")
        return said


@dataclass(frozen=True)
class Scenario:
    name: str
    duration: float
    nodes: tuple[NodeSpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    description: str = ""
    step: float = 5.0
    seed: int = 1
    warmup: float = 600.0
    #: The least start-up of a pod: bound, it uses nothing for this long (image pull, process
    #: start, warm-up). With `startup_delay_most`, each start of each pod draws its own between
    #: the two (`tas_simulator.world.startup_of`); the default draws over 10-120 s (issue 54: a
    #: move is not cheap), a scenario fixes one start-up only for a reason it states.
    startup_delay: float = DEFAULT_STARTUP_LEAST
    startup_delay_most: float | None = DEFAULT_STARTUP_MOST
    sync_period: float = 10.0
    descheduling_interval: float = 60.0
    #: Where each descheduler's first cycle falls, as a share of its interval (None: drawn per
    #: seed, the same for every contender: `tas_simulator.runner.first_cycle`).
    descheduling_phase: float | None = None
    pipeline: Pipeline = field(default_factory=Pipeline)
    live_migration: LiveMigration = field(default_factory=LiveMigration)
    pressure_model: PressureModel = field(default_factory=PressureModel)
    policies: tuple[Mapping[str, Any], ...] = ()
    contenders: Mapping[str, ContenderSettings] = field(default_factory=dict)
    events: tuple[Event, ...] = ()
    source: str = ""

    @property
    def has_deschedule_rules(self) -> bool:
        """Whether any of its policies has a deschedule strategy."""
        return any(_strategies(p).get("deschedule") for p in self.policies)

    def without_deschedule(self) -> Scenario:
        """The same scenario with its policies' deschedule strategies taken out (their other
        strategies kept): no node is labelled violating, so nothing is evicted for a rule and
        no placement is kept off a node by such a label. What obeying them cost is the
        difference (`tas_simulator.sweep.why_worse`)."""
        policies = []
        for policy in self.policies:
            strategies = {k: v for k, v in _strategies(policy).items() if k != "deschedule"}
            spec = {**policy.get("spec", {}), "strategies": strategies}
            policies.append({**policy, "spec": spec})
        return dataclasses.replace(self, policies=tuple(policies))

    def with_duration(self, duration: float) -> Scenario:
        """The same scenario cut short (tests run every scenario for a few minutes); events
        past the new end never happen, and the warm-up shrinks to fit."""
        return dataclasses.replace(
            self, duration=float(duration), warmup=min(self.warmup, duration / 2)
        )


# ------------------------------------------------------------------------------ loading


def named_file(name: str, folder: Path) -> Path:
    """A name the user typed: a YAML file's path, or a file of `folder` by its stem
    (`health-demo` -> scenarios/health-demo.yaml). Scenarios and families resolve alike."""
    candidate = Path(name)
    if candidate.suffix in (".yaml", ".yml") or candidate.exists():
        return candidate
    return folder / f"{name}.yaml"


def read_named(name: str, folder: Path, error: type[ProblemsError]) -> tuple[Path, str]:
    """The file `name` stands for (`named_file`) and its text; one that cannot be read is
    `error` (the scenario's or the family's) naming it."""
    path = named_file(name, folder)
    try:
        return path, path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as problem:
        raise error([f"{path}: cannot read: {problem}"]) from problem


def names_in(folder: Path) -> list[str]:
    return sorted(p.stem for p in folder.glob("*.yaml"))


def scenario_path(name: str) -> Path:
    """A named scenario's file (`health-demo` -> scenarios/health-demo.yaml), or a path."""
    return named_file(name, SCENARIOS)


def named_scenarios() -> list[str]:
    return names_in(SCENARIOS)


def load_scenario(name_or_path: str) -> Scenario:
    path, text = read_named(name_or_path, SCENARIOS, ScenarioError)
    return load_scenario_text(text, source=str(path), base=path.parent)


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def _path(parts: Sequence[object]) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(document)"


def load_scenario_text(text: str, *, source: str = "", base: Path | None = None) -> Scenario:
    """Validate and read one scenario; raises `ScenarioError` listing every problem."""
    prefix = f"{source}: " if source else ""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ScenarioError([f"{prefix}not valid YAML: {error}"]) from error
    except (RecursionError, ValueError, TypeError, OverflowError) as error:
        raise ScenarioError([f"{prefix}not readable YAML: {error}"]) from error
    try:
        return read_scenario(document, source=source, base=base or Path("."))
    except RecursionError as error:
        raise ScenarioError([f"{prefix}(document): nested too deeply"]) from error


def read_scenario(document: object, *, source: str = "", base: Path) -> Scenario:
    prefix = f"{source}: " if source else ""
    if not _plain(document):
        raise ScenarioError([f"{prefix}(document): must be plain YAML data (no sets or dates)"])
    errors = sorted(_validator().iter_errors(document), key=lambda e: list(map(str, e.path)))
    if errors:
        raise ScenarioError(
            [f"{prefix}{_path(list(e.absolute_path))}: {_message(e)}" for e in errors]
        )
    assert isinstance(document, dict)
    problems: list[str] = []
    reader = _Reader(problems, base)
    scenario = reader.scenario(document, source)
    if problems:
        raise ScenarioError([f"{prefix}{p}" for p in problems])
    assert scenario is not None
    return scenario


def _message(error: jsonschema.ValidationError) -> str:
    # A schema node's `$comment` is the hint its violation needs (`effect: degrade` is told
    # that degrade takes a share).
    hint = error.schema.get("$comment") if isinstance(error.schema, dict) else None
    if hint:
        return f"{_plain_message(error)} ({hint})"
    return _plain_message(error)


def _plain_message(error: jsonschema.ValidationError) -> str:
    if error.validator == "enum" and isinstance(error.instance, str):
        known = [str(v) for v in error.validator_value]
        close = difflib.get_close_matches(error.instance, known, n=1)
        return str(error.message) + (f" (did you mean {close[0]}?)" if close else "")
    if error.validator == "oneOf" and error.context:
        # Name the alternatives' complaints, not only "is not valid under any of the schemas".
        reasons = sorted({c.message for c in error.context})
        return f"{error.message}: " + "; or ".join(reasons[:4])
    return str(error.message)


def _plain(value: object, depth: int = 0) -> bool:
    """Only what JSON can hold: YAML's sets, dates and binary have no place in a scenario."""
    if depth > 64:
        return False
    if value is None or isinstance(value, bool | int | float | str):
        return True
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    return False


class _Reader:
    """Reads a schema-valid document into values, noting every problem of meaning."""

    def __init__(self, problems: list[str], base: Path) -> None:
        self.problems = problems
        self.base = base

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}")

    def duration(self, raw: object, path: str, default: float) -> float:
        if raw is None:
            return default
        try:
            return parse_duration(str(raw)) if not isinstance(raw, int | float) else float(raw)
        except DurationError as error:
            self.problem(path, str(error))
            return default

    def quantity(self, raw: object, path: str, default: float = 0.0) -> float:
        if raw is None:
            return default
        try:
            return parse_quantity(raw if isinstance(raw, int | float | str) else str(raw))
        except QuantityError as error:
            self.problem(path, str(error))
            return default

    def pressure_model(self, raw: Mapping[str, Any]) -> PressureModel:
        """`pressureModel` (the schema checked kinds and signs)."""
        kind = PressureModelKind(raw.get("kind", PressureModelKind.BURSTY.value))
        if kind is PressureModelKind.ERLANG_C:
            for key in ("burstiness", "nodeBias"):
                if key in raw:
                    self.problem(f"pressureModel.{key}", "only for kind: bursty")
            return PressureModel.erlang_c(noise=float(raw.get("noise", 0.0)))
        return PressureModel(
            kind=kind,
            burstiness=float(raw.get("burstiness", PressureModel.burstiness)),
            node_bias=float(raw.get("nodeBias", PressureModel.node_bias)),
            noise=float(raw.get("noise", PressureModel.noise)),
        )

    def startup_delay(self, raw: object) -> tuple[float, float | None]:
        """`startupDelay`: one duration, or `{uniform: [least, most]}` drawn per start; none
        given, drawn per start over `DEFAULT_STARTUP_LEAST`-`DEFAULT_STARTUP_MOST`."""
        if raw is None:
            return DEFAULT_STARTUP_LEAST, DEFAULT_STARTUP_MOST
        if not isinstance(raw, Mapping):
            return self.duration(raw, "startupDelay", DEFAULT_STARTUP_LEAST), None
        least, most = (
            self.duration(value, f"startupDelay.uniform[{i}]", DEFAULT_STARTUP_LEAST)
            for i, value in enumerate(raw["uniform"])
        )
        if most < least:
            self.problem("startupDelay.uniform", f"the most ({most:g}s) is below the least")
        return least, most

    # -------------------------------------------------------------------- the document

    def scenario(self, doc: Mapping[str, Any], source: str) -> Scenario | None:
        duration = self.duration(doc["duration"], "duration", 0.0)
        step = self.duration(doc.get("step"), "step", 5.0)
        metrics = doc.get("metrics") or {}
        pipeline = Pipeline(
            scrape_interval=self.duration(
                metrics.get("scrapeInterval"), "metrics.scrapeInterval", 15.0
            ),
            window=self.duration(metrics.get("window"), "metrics.window", 60.0),
            delay=self.duration(metrics.get("delay"), "metrics.delay", 0.0),
        )
        migration = doc.get("liveMigration") or {}
        live_migration = LiveMigration(
            bandwidth=self.quantity(
                migration.get("bandwidth"), "liveMigration.bandwidth", LiveMigration.bandwidth
            ),
            pause=self.duration(migration.get("pause"), "liveMigration.pause", LiveMigration.pause),
            source_cores=float(migration.get("sourceCores", LiveMigration.source_cores)),
            target_cores=float(migration.get("targetCores", LiveMigration.target_cores)),
        )
        if live_migration.bandwidth <= 0:
            self.problem("liveMigration.bandwidth", "must be more than 0")
        pressure_model = self.pressure_model(doc.get("pressureModel") or {})
        sync_period = self.duration(doc.get("syncPeriod"), "syncPeriod", 10.0)
        interval = self.duration(doc.get("deschedulingInterval"), "deschedulingInterval", 60.0)
        phase = doc.get("deschedulingPhase")
        warmup = self.duration(doc.get("warmup"), "warmup", 600.0)
        startup, startup_most = self.startup_delay(doc.get("startupDelay"))
        if step <= 0:
            self.problem("step", "must be more than 0")
        elif duration < step:
            self.problem("duration", f"must be at least one step ({step:g}s)")
        if step > 0:
            for path, value in (
                ("metrics.scrapeInterval", pipeline.scrape_interval),
                ("syncPeriod", sync_period),
                ("deschedulingInterval", interval),
            ):
                if value < step:
                    self.problem(path, f"must be at least one step ({step:g}s), got {value:g}s")
            if duration / step > 200_000:
                self.problem("step", "too small for the duration (more than 200,000 steps)")
        if pipeline.window < pipeline.scrape_interval:
            self.problem("metrics.window", "must cover at least one scrape interval")
        if warmup >= duration > 0:
            self.problem("warmup", "must be shorter than the duration")
        nodes = self.node_list(doc["nodes"], "nodes")
        known_nodes = {n.name for n in nodes}
        workloads = tuple(
            w
            for i, raw in enumerate(doc["workloads"])
            if (w := self.workload(raw, f"workloads[{i}]")) is not None
        )
        names = [w.name for w in workloads]
        for name in sorted({n for n in names if names.count(n) > 1}):
            self.problem("workloads", f"workload name {name!r} is used twice")
        policies = self.policies(doc.get("policies") or [])
        contenders = self.contenders(doc.get("contenders") or {}, step=step)
        events = self.events(doc.get("events") or [], known_nodes, set(names))
        if self.problems:
            return None
        return Scenario(
            name=doc["name"],
            description=doc.get("description", ""),
            duration=duration,
            step=step,
            seed=int(doc.get("seed", 1)),
            warmup=warmup,
            startup_delay=startup,
            startup_delay_most=startup_most,
            sync_period=sync_period,
            descheduling_interval=interval,
            descheduling_phase=None if phase is None else float(phase),
            pipeline=pipeline,
            live_migration=live_migration,
            pressure_model=pressure_model,
            nodes=nodes,
            workloads=workloads,
            policies=policies,
            contenders=contenders,
            events=events,
            source=source,
        )

    # -------------------------------------------------------------------------- nodes

    def node_list(self, raw: Sequence[Mapping[str, Any]], path: str) -> tuple[NodeSpec, ...]:
        nodes: list[NodeSpec] = []
        for i, item in enumerate(raw):
            nodes.extend(self.nodes(item, f"{path}[{i}]"))
        seen: set[str] = set()
        for node in nodes:
            if node.name in seen:
                self.problem(path, f"node name {node.name!r} is used twice")
            seen.add(node.name)
        return tuple(nodes)

    def nodes(self, raw: Mapping[str, Any], path: str) -> list[NodeSpec]:
        pattern = str(raw["name"])
        count = raw.get("count")
        cpu = self.quantity(raw["cpu"], f"{path}.cpu")
        memory = self.quantity(raw["memory"], f"{path}.memory")
        if cpu <= 0:
            self.problem(f"{path}.cpu", "must be more than 0")
        if memory <= 0:
            self.problem(f"{path}.memory", "must be more than 0")
        taints = tuple(
            Taint(t["key"], TaintEffect(t["effect"]), t.get("value", ""))
            for t in raw.get("taints") or []
        )
        if count is None:
            if _PATTERN.search(pattern):
                self.problem(f"{path}.name", "a name pattern with {i} needs a count")
                return []
            names = [pattern]
        else:
            if not _PATTERN.search(pattern):
                self.problem(f"{path}.name", "with a count, the name needs {i} (or {i:03d})")
                return []
            names = [_expand(pattern, n) for n in range(1, count + 1)]
        for name in names:
            if not re.fullmatch(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?", name):
                self.problem(f"{path}.name", f"{name!r} is not a valid node name")
                return []
        labels = dict(raw.get("labels") or {})
        return [
            NodeSpec(
                name=name,
                cpu=cpu,
                memory=memory,
                pods=int(raw.get("pods", 110)),
                labels={"kubernetes.io/hostname": name, **labels},
                taints=taints,
                metrics={str(k): float(v) for k, v in (raw.get("metrics") or {}).items()},
            )
            for name in names
        ]

    # ---------------------------------------------------------------------- workloads

    def workload(self, raw: Mapping[str, Any], path: str) -> WorkloadSpec | None:
        requests: dict[str, float] = {}
        for key, value in (raw.get("requests") or {}).items():
            requests[str(key)] = self.quantity(value, f"{path}.requests.{key}")
        if "usage" in raw:
            variants = [self.variant(raw["usage"], f"{path}.usage", share=1.0)]
        else:
            variants = [
                self.variant(v, f"{path}.usageMix[{i}]", share=float(v["share"]))
                for i, v in enumerate(raw["usageMix"])
            ]
        terms = tuple(
            NodeSelectorTerm(
                match_expressions=tuple(
                    Requirement(e["key"], e["operator"], tuple(e.get("values") or ()))
                    for e in term["matchExpressions"]
                )
            )
            for term in raw.get("nodeAffinity") or []
        )
        for i, term in enumerate(terms):
            for j, req in enumerate(term.match_expressions):
                where = f"{path}.nodeAffinity[{i}].matchExpressions[{j}]"
                if req.operator in ("In", "NotIn") and not req.values:
                    self.problem(where, f"{req.operator} needs values")
                if req.operator in ("Exists", "DoesNotExist") and req.values:
                    self.problem(where, f"{req.operator} takes no values")
                if req.operator in ("Gt", "Lt") and (
                    len(req.values) != 1 or not req.values[0].lstrip("-").isdigit()
                ):
                    self.problem(where, f"{req.operator} needs one integer value")
        tolerations = tuple(
            Toleration(
                key=t.get("key", ""),
                operator=t.get("operator", "Equal"),
                value=t.get("value", ""),
                effect=t.get("effect", ""),
            )
            for t in raw.get("tolerations") or []
        )
        return WorkloadSpec(
            name=raw["name"],
            namespace=raw.get("namespace", "default"),
            replicas=int(raw["replicas"]),
            requests=requests,
            usage=tuple(variants),
            kind=raw.get("kind", "ReplicaSet"),
            labels={str(k): str(v) for k, v in (raw.get("labels") or {}).items()},
            priority=int(raw.get("priority", 0)),
            node_selector=dict(raw.get("nodeSelector") or {}),
            node_affinity=terms,
            tolerations=tolerations,
            migration=raw.get("migration", "restart"),
        )

    def variant(self, raw: Mapping[str, Any], path: str, *, share: float) -> UsageVariant:
        cpu = self.profile(raw["cpu"], f"{path}.cpu")
        memory = (
            self.profile(raw["memory"], f"{path}.memory")
            if "memory" in raw
            else UsageProfile(ProfileKind.STEADY, value=0.0)
        )
        return UsageVariant(cpu=cpu, memory=memory, share=share)

    def profile(self, raw: Mapping[str, Any], path: str) -> UsageProfile:
        kind = ProfileKind(raw["profile"])

        def q(key: str, default: float = 0.0) -> float:
            return self.quantity(raw.get(key), f"{path}.{key}", default)

        scale = float(raw.get("scale", 1.0))
        if kind is ProfileKind.STEADY:
            return UsageProfile(kind, value=q("value"))
        if kind is ProfileKind.IDLE:
            return UsageProfile(kind, value=q("value", 0.01))
        if kind is ProfileKind.BURSTY:
            mean, peak = q("mean"), q("peak")
            base = q("base", mean / 2) if "base" in raw else None
            period = self.duration(raw.get("period"), f"{path}.period", 60.0)
            if peak < mean:
                self.problem(f"{path}.peak", f"must be at least the mean ({mean:g})")
            if base is not None and base > mean:
                self.problem(f"{path}.base", f"must be at most the mean ({mean:g})")
            if period <= 0:
                self.problem(f"{path}.period", "must be more than 0")
            return UsageProfile(
                kind,
                mean=mean,
                peak=peak,
                base=base,
                period=period,
                jitter=float(raw.get("jitter", 0.0)),
            )
        if kind is ProfileKind.RAMP:
            start_t = self.duration(raw.get("from"), f"{path}.from", 0.0)
            end_t = self.duration(raw.get("to"), f"{path}.to", 0.0)
            if end_t < start_t:
                self.problem(f"{path}.to", "must not be before `from`")
            return UsageProfile(
                kind, start=q("start"), end=q("end"), ramp_from=start_t, ramp_to=end_t
            )
        points: list[tuple[float, float]]
        if "points" in raw:
            points = [(float(t), float(v)) for t, v in raw["points"]]
        else:
            points = self.trace_file(str(raw["file"]), f"{path}.file")
        if any(b[0] < a[0] for a, b in itertools.pairwise(points)):
            self.problem(f"{path}", "trace times must not decrease")
        if any(v < 0 for _, v in points):
            self.problem(f"{path}", "trace values must not be negative")
        return UsageProfile(
            kind,
            points=tuple((t, v * scale) for t, v in points),
            loop=bool(raw.get("loop", False)),
        )

    def trace_file(self, name: str, path: str) -> list[tuple[float, float]]:
        file = (self.base / name).resolve()
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            self.problem(path, f"cannot read {file}: {error}")
            return [(0.0, 0.0)]
        points: list[tuple[float, float]] = []
        header_seen = False
        for number, row in enumerate(csv.reader(text.splitlines()), start=1):
            if not row or row[0].strip().startswith("#"):
                continue
            try:
                t, v = (float(cell) for cell in row[:2])
            except ValueError:
                if not points and not header_seen:
                    header_seen = True
                    continue  # a header
                self.problem(path, f"{file}:{number}: expected time,value numbers, got {row!r}")
                continue
            points.append((t, v))
        if not points:
            self.problem(path, f"{file}: no time,value rows")
            return [(0.0, 0.0)]
        return points

    # ----------------------------------------------------------------------- policies

    def policies(self, raw: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
        documents: list[Mapping[str, Any]] = []
        for i, item in enumerate(raw):
            path = f"policies[{i}]"
            if "file" in item:
                file = self.base / str(item["file"])
                try:
                    loaded = yaml.safe_load(file.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
                    self.problem(f"{path}.file", f"cannot read {file}: {error}")
                    continue
                item = loaded if isinstance(loaded, dict) else {}
            try:
                parse_policy(item)
            except PolicyValidationError as error:
                for problem in error.problems:
                    self.problem(path, str(problem))
                continue
            documents.append(item)
        return tuple(documents)

    def contenders(self, raw: Mapping[str, Any], *, step: float) -> dict[str, ContenderSettings]:
        settings: dict[str, ContenderSettings] = {}
        for name, item in raw.items():
            path = f"contenders.{name}"
            document = item.get("descheduler")
            if "deschedulerFile" in item:
                if document is not None:
                    self.problem(path, "give descheduler or deschedulerFile, not both")
                file = self.base / str(item["deschedulerFile"])
                try:
                    document = yaml.safe_load(file.read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
                    self.problem(f"{path}.deschedulerFile", f"cannot read {file}: {error}")
                    document = None
            if document is not None:
                try:
                    parse_config(document, registry=registry_for(name))
                except ConfigError as error:
                    for problem in error.problems:
                        self.problem(f"{path}.descheduler", problem)
            settings[name] = ContenderSettings(
                descheduler=document,
                extender_weight=item.get("extenderWeight"),
                extender=self.extender_settings(item.get("extender"), name, f"{path}.extender"),
                descheduling_interval=self.contender_interval(
                    item.get("deschedulingInterval"), name, f"{path}.deschedulingInterval", step
                ),
            )
        return settings

    def contender_interval(
        self, raw: object, contender: str, path: str, step: float
    ) -> float | None:
        """A baseline's descheduling cadence, where the scenario changes its shipped one."""
        if raw is None:
            return None
        if contender in NO_DESCHEDULER_CONTENDERS:
            self.problem(path, f"{contender} runs no descheduler: there is no cadence to set")
            return None
        if contender in SCENARIO_INTERVAL_CONTENDERS:
            self.problem(
                path,
                f"{contender} runs at the scenario's deschedulingInterval: set that instead",
            )
            return None
        interval = self.duration(raw, path, 0.0)
        if step > 0 and interval < step:
            self.problem(path, f"must be at least one step ({step:g}s), got {interval:g}s")
            return None
        return interval

    def extender_settings(
        self, raw: Mapping[str, Any] | None, contender: str, path: str
    ) -> ExtenderSettings | None:
        """`tas extender`'s flags by their camelCase names (the schema checks each value)."""
        if raw is None:
            return None
        if contender not in OURS_EXTENDER_CONTENDERS:
            self.problem(
                path,
                f"only {', '.join(sorted(OURS_EXTENDER_CONTENDERS))} runs this "
                "project's extender; the others' extenders have no settings here",
            )
            return None
        defaults = ExtenderSettings()
        return dataclasses.replace(
            defaults,
            max_violating_node_share=float(
                raw.get("maxViolatingNodeShare", defaults.max_violating_node_share)
            ),
            score_mode=ScoreMode(raw.get("scoreMode", defaults.score_mode)),
            filter_estimate_policies=frozenset(
                map(str, raw.get("filterOnEstimates", defaults.filter_estimate_policies))
            ),
        )

    # ------------------------------------------------------------------------- events

    def events(
        self, raw: Sequence[Mapping[str, Any]], nodes: set[str], workloads: set[str]
    ) -> tuple[Event, ...]:
        found: list[Event] = []
        known = set(nodes)
        timed = sorted(enumerate(raw), key=lambda item: (_seconds(item[1]["at"]), item[0]))
        for i, item in timed:
            path = f"events[{i}]"
            at = self.duration(item["at"], f"{path}.at", 0.0)
            (kind_name,) = (k for k in item if k != "at")
            kind = EventKind(kind_name)
            body = item[kind_name]
            where = f"{path}.{kind_name}"
            names = tuple(body.get("nodes") or ())
            if kind is not EventKind.ADD_NODES:
                for name in names:
                    if name not in known:
                        self.problem(f"{where}.nodes", f"unknown node {name!r}")
            if kind is EventKind.SET_HEALTH:
                found.append(
                    Event(
                        at,
                        kind,
                        nodes=names,
                        metric=body.get("metric", DEFAULT_HEALTH_METRIC),
                        value=float(body["value"]),
                        effect=self.health_effect(body.get("effect"), f"{where}.effect"),
                    )
                )
            elif kind is EventKind.TAINT:
                taint = Taint(body["key"], TaintEffect(body["effect"]), body.get("value", ""))
                found.append(Event(at, kind, nodes=names, taint=taint))
            elif kind is EventKind.UNTAINT:
                found.append(
                    Event(at, kind, nodes=names, taint=Taint(body["key"], TaintEffect.NO_SCHEDULE))
                )
            elif kind in (EventKind.CORDON, EventKind.UNCORDON, EventKind.REMOVE_NODES):
                found.append(Event(at, kind, nodes=names))
                if kind is EventKind.REMOVE_NODES:
                    known -= set(names)
            elif kind is EventKind.SCALE:
                if body["workload"] not in workloads:
                    self.problem(f"{where}.workload", f"unknown workload {body['workload']!r}")
                found.append(
                    Event(
                        at,
                        kind,
                        workload=body["workload"],
                        replicas=int(body["replicas"]),
                        burst=bool(body.get("burst", False)),
                    )
                )
            elif kind is EventKind.ADD_NODES:
                added = self.nodes(body, where)
                for node in added:
                    if node.name in known:
                        self.problem(f"{where}.name", f"node {node.name!r} exists already")
                known |= {n.name for n in added}
                found.append(Event(at, kind, added=tuple(added)))
            elif kind is EventKind.METRIC_OUTAGE:
                lasts = self.duration(body["for"], f"{where}.for", 0.0)
                found.append(Event(at, kind, lasts=lasts))
            else:
                lasts = self.duration(body["for"], f"{where}.for", 0.0)
                found.append(
                    Event(
                        at,
                        kind,
                        nodes=names,
                        metric=str(body["metric"]),
                        value=float(body["value"]),
                        lasts=lasts,
                    )
                )
        return tuple(found)

    def health_effect(self, raw: object, path: str) -> HealthEffect:
        """A set-health's `effect` (the schema has checked its shape: `none`, or one of
        `{degrade: SHARE}` and `{fail-after: DURATION}`)."""
        if not isinstance(raw, Mapping):
            return NO_HEALTH_EFFECT
        if "degrade" in raw:
            return HealthEffect(HealthEffectKind.DEGRADE, share=float(raw["degrade"]))
        delay = self.duration(raw.get("fail-after"), f"{path}.fail-after", 0.0)
        return HealthEffect(HealthEffectKind.FAIL_AFTER, delay=delay)


def _expand(pattern: str, n: int) -> str:
    """A node name pattern with its `{i}` (or `{i:03d}`) replaced by `n`."""

    def number(match: re.Match[str]) -> str:
        width = match.group(1)
        return f"{n:0{int(width)}d}" if width else str(n)

    return _PATTERN.sub(number, pattern)


def _seconds(raw: object) -> float:
    """A duration for ordering only (a bad one is reported where it is read)."""
    try:
        return float(raw) if isinstance(raw, int | float) else parse_duration(str(raw))
    except DurationError:
        return 0.0


def unknown_scenario(name: str) -> str | None:
    """What to tell a user whose SCENARIO (`tas simulate`, `tas run --scenario`) is neither a
    file nor a named scenario, naming the named ones; None when it is one of them."""
    if scenario_path(name).exists():
        return None
    named = named_scenarios()
    offered = f"the named scenarios: {', '.join(named)}"
    if Path(name).suffix in (".yaml", ".yml") or "/" in name:
        return f"no scenario file {name}; give a YAML file that exists, or one of {offered}"
    close = difflib.get_close_matches(name, named, n=1)
    guess = f" (did you mean {close[0]}?)" if close else ""
    return f"no scenario named {name!r}{guess}; {offered} (or give a YAML file)"
