"""The text `tas explain` prints for an explanation (`tas_explain.explanation`): `render_pod`,
`render_node`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from tas.policies.model import format_number
from tas.vocabulary import POLICY_LABEL
from tas_explain.explanation import (
    GONE,
    CurveReading,
    ExtenderDecision,
    NodeExplanation,
    PodExplanation,
    PolicyVerdict,
)


def _num(value: float | None) -> str:
    return "-" if value is None else format_number(round(value, 4))


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "no fresh value"
    return f"{seconds:.1f}s old" if seconds < 120 else f"{seconds / 60:.0f}m old"


def render_pod(found: PodExplanation) -> str:
    lines = [f"Pod {found.namespace}/{found.name}"]
    if found.phase == GONE:
        lines.append(
            "  no longer exists: the descheduler evicted it (its owner, if any, made a new pod "
            "in its place, which `tas explain pod` explains too)"
        )
        lines.append("Evicted (Events):")
        lines.extend(f"  {_when(e.time)} {e.strategy}: {e.message}" for e in found.evictions)
        lines.extend(_missing_lines(found.missing))
        return "\n".join(lines)
    where = found.node or "nowhere yet (pending)"
    lines.append(f"  runs on: {where} (phase {found.phase})")
    if found.policy_label is None:
        lines.append(
            f"  policy: none (no {POLICY_LABEL} label): the extender lets every node pass and "
            "scores them alike; only the descheduler's non-TAS strategies apply"
        )
    elif not found.policy_found:
        lines.append(
            f"  policy: {found.namespace}/{found.policy_label} (label {POLICY_LABEL}) does not "
            "exist: the extender passes every node"
        )
    else:
        lines.append(f"  policy: {found.namespace}/{found.policy_label} (label {POLICY_LABEL})")
        for verdict in found.policies:
            lines.append("    " + _verdict_line(verdict, on=found.node))
    lines.append("")
    lines.extend(_placement_lines(found.placement, runs_on=found.node))
    lines.extend(_not_offered_lines(found))
    lines.append("")
    if found.move is None:
        lines.append("Would the descheduler move it now? not evaluated (see missing below)")
    else:
        answer = "yes" if found.move.would_move else "no"
        lines.append(f"Would the descheduler move it now? {answer}: {found.move.summary}")
        lines.extend(f"  - {reason}" for reason in found.move.reasons)
    if found.evictions:
        lines.append("")
        lines.append("Evicted before (Events):")
        lines.extend(f"  {_when(e.time)} {e.strategy}: {e.message}" for e in found.evictions)
    lines.extend(_missing_lines(found.missing))
    return "\n".join(lines)


def _verdict_line(verdict: PolicyVerdict, *, on: str | None) -> str:
    where = f" on {on}" if on else ""
    if verdict.verdict == "score":
        return (
            f"{verdict.strategy}: score {verdict.score}/10{where}, rank {verdict.rank} of "
            f"{verdict.of} nodes: {verdict.detail}"
        )
    return f"{verdict.strategy}: {verdict.verdict}{where}: {verdict.detail}"


def _placement_lines(placement: ExtenderDecision | None, *, runs_on: str | None) -> list[str]:
    if placement is None:
        return [
            "Placement: no decision for this pod in the extender's log (it keeps only the most "
            "recent ones; the pod may have been placed before them, or without the extender)"
        ]
    lines = [f"Placement (extender, {_when(placement.filter_time or placement.prioritize_time)}):"]
    if placement.outcome != "applied":
        lines.append(
            f"  every node passed and scored alike: {placement.outcome}: {placement.reason}"
        )
    for candidate in placement.candidates:
        parts = []
        if candidate.verdict is not None:
            parts.append("kept" if candidate.verdict == "pass" else "filtered out")
        if candidate.score is not None:
            parts.append(f"score {candidate.score}")
        if candidate.reason:
            parts.append(candidate.reason)
        elif candidate.metrics:
            values = ", ".join(f"{m} {_num(v)}" for m, v in sorted(candidate.metrics.items()))
            parts.append(values)
        if candidate.estimates:
            extra = ", ".join(f"{m} +{_num(v)}" for m, v in sorted(candidate.estimates.items()))
            parts.append(f"recent placements add {extra}")
        here = "  <- runs here" if candidate.node == runs_on else ""
        lines.append(f"  {candidate.node}: {'; '.join(parts) or 'candidate'}{here}")
    return lines


def _not_offered_lines(found: PodExplanation) -> list[str]:
    if not found.not_offered:
        return []
    return [
        "  not offered to the extender by kube-scheduler:",
        *(f"  {n.node}: {n.reason}" for n in found.not_offered),
    ]


def render_node(found: NodeExplanation) -> str:
    lines = [f"Node {found.name} ({'Ready' if found.ready else 'NotReady'})", "Metrics:"]
    if not found.metrics:
        lines.append("  none known")
    for reading in found.metrics:
        lines.append(f"  {reading.metric}: {_num(reading.value)} ({_age(reading.age_seconds)})")
    lines.append("Policies:")
    if not found.policies:
        lines.append("  none")
    for verdict in found.policies:
        lines.append(f"  {verdict.policy} " + _verdict_line(verdict, on=None))
    lines.append("Labels:")
    lines.extend(f"  {k}={v}" for k, v in sorted(found.labels.items()))
    lines.append("Taints: " + (", ".join(found.taints) or "none"))
    lines.append("Pods: " + (", ".join(found.pods) or "none"))
    lines.append("Recent evictions (Events):")
    if not found.evictions:
        lines.append("  none")
    lines.extend(f"  {_when(e.time)} {e.pod} ({e.strategy}): {e.message}" for e in found.evictions)
    if found.curve is not None:
        lines.extend(_curve_lines(found.curve))
    lines.extend(_missing_lines(found.missing))
    return "\n".join(lines)


def _curve_lines(curve: CurveReading) -> list[str]:
    if curve.fallback:
        head = (
            f"Pressure curve: the shared model ({curve.servers} servers on {curve.cores:g} "
            f"cores): {curve.samples} samples so far, too few to fit"
        )
    else:
        head = (
            f"Pressure curve: learned, {curve.servers} effective servers on {curve.cores:g} "
            f"cores (from {curve.samples} samples)"
        )
    lines = [head]
    if curve.pressure is not None:
        lines.append(
            f"  moving 1 core off: pressure {_num(curve.pressure)} -> "
            f"{_num(curve.pressure_after_move)}, relief {_num(curve.relief)} stalled cores"
            + (
                ""
                if curve.fallback
                else f" (shared model: -> {_num(curve.shared_pressure_after_move)}, relief "
                f"{_num(curve.shared_relief)})"
            )
        )
    return lines


def _missing_lines(missing: Sequence[str]) -> list[str]:
    if not missing:
        return []
    return ["", "Not explained (could not be read):", *(f"  - {m}" for m in missing)]


def _when(time: float | None) -> str:
    if time is None:
        return "at an unknown time"
    return datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
