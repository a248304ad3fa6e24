"""What a simulation leaves behind: `summary.json` (the same bytes for the same seeds) and one
terminal table per scenario (a row per contender, a column per figure, means over the seeds;
split into blocks of columns one under the other, none wider than `TABLE_WIDTH`), and the
legend printed under the tables: what each column counts (`LEGEND`, `legend`)."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tas_simulator.jobs import CLAIRVOYANT, CLAIRVOYANT_OF, HINDSIGHT, LIMIT
from tas_simulator.seeds import (
    GAIN_FIGURES,
    SeededFigures,
    SeededResult,
    best_by_figure,
    paired_against,
    shares_of_gain,
)

#: The widest line a table prints: its columns are split into blocks that fit.
TABLE_WIDTH = 110
GAP = "  "
#: Significant digits kept in summary.json: enough to compare, few enough to read and diff.
DIGITS = 6

#: (column title, figure, key within it or None, format)
COLUMNS: Sequence[tuple[str, str, str | None, str]] = (
    ("viol.place", "violating_placements", None, "{:.0f}"),
    ("evac med s", "evacuation_seconds", "median", "{:.0f}"),
    ("evac max s", "evacuation_seconds", "max", "{:.0f}"),
    ("not evac", "evacuation_seconds", "not_evacuated", "{:.0f}"),
    ("evictions", "evictions", "total", "{:.0f}"),
    ("max/pod/h", "evictions", "max_per_pod_hour", "{:.0f}"),
    ("spread mean", "pressure_spread", "mean", "{:.3f}"),
    ("spread p95", "pressure_spread", "p95", "{:.3f}"),
    ("hottest", "hottest_pressure", None, "{:.3f}"),
    ("lost core·s", "work_lost", "core_seconds", "{:.0f}"),
    ("lost %", "work_lost", "share", "{:.2%}"),
    ("stall node·s", "stall", None, "{:.0f}"),
    ("pending p95 s", "pending_seconds", "p95", "{:.0f}"),
    ("herd", "herd_ratio", None, "{:.2f}"),
    ("herd by load", "herd_ratio_by_load", None, "{:.2f}"),
    ("oom", "oom_kills", None, "{:.0f}"),
)

#: What each column of the tables means, by its title (`COLUMNS`; a test keeps the two in
#: step), from the figures' definitions in `tas_simulator.figures`. Every figure is
#: judged on the model's true values and is better lower; "after the warm-up" where it is a
#: figure over time.
LEGEND: dict[str, str] = {
    "viol.place": "pods placed on a node that broke a dontschedule rule of their policy at "
    "that moment (count)",
    "evac med s": "seconds from a node turning violating (deschedule) until the last pod of "
    "that policy left it, median over such episodes",
    "evac max s": "the same, the longest episode (seconds)",
    "not evac": "episodes that ended with the policy's pods still on the node: it recovered, "
    "or the run ended, first (count)",
    "evictions": "pods evicted by the descheduler (count)",
    "max/pod/h": "the most evictions of one pod (a replica, across its replacements) in any hour",
    "spread mean": "how unevenly CPU pressure is spread: the standard deviation across nodes "
    "of PSI cpu some (0..1), mean over time",
    "spread p95": "the same, 95th percentile over time",
    "hottest": "the hottest node's PSI cpu some (0..1), mean over time",
    "lost core·s": "CPU work not done, in core-seconds: demand above a node's cores, plus the "
    "demand of pods not running (pending, or restarting after an eviction or an OOM kill)",
    "lost %": "that lost work as a share of all demand",
    "stall node·s": "node-seconds of tasks waiting for CPU: PSI cpu some (0..1) integrated "
    "over time, summed over nodes",
    "pending p95 s": "95th percentile of the seconds a pod waited to be placed",
    "herd": "scenarios with a burst: the most burst pods placed on one node over the fair "
    "share (burst / schedulable nodes); 1 is even",
    "herd by load": "the same most pods over the most a load-balanced placement puts on one "
    "node (the burst filling the least loaded nodes' cores to one level); 1 is balanced",
    "oom": "pods the kernel's OOM killer ended (count)",
}


def legend(titles: list[str], *, width: int = TABLE_WIDTH) -> str:
    """The legend of the columns `titles` under the tables: a column's title, then what it
    counts, wrapped under itself so no line is wider than `width`."""
    column = max((len(t) for t in titles), default=0)
    indent = " " * (column + 4)
    lines = []
    for title in titles:
        lines.extend(
            textwrap.wrap(
                LEGEND[title],
                width,
                initial_indent=f"  {title.ljust(column)}  ",
                subsequent_indent=indent,
                break_on_hyphens=False,
            )
        )
    return "\n".join(
        ["What the columns count (means over the seeds; for each, lower is better):", *lines]
    )


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{DIGITS}g}")
    if isinstance(value, Mapping):
        return {str(k): rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    return value


def _cell(figures: Mapping[str, Any], figure: str, key: str | None, fmt: str) -> str:
    value = figures.get(figure)
    if key is not None and isinstance(value, Mapping):
        value = value.get(key)
    if value is None or (isinstance(value, Mapping)):
        return "-"
    return fmt.format(value)


#: The figures ours is compared with each contender on, paired by seed, in summary.json: the
#: ones the named scenarios' goals judge (`tas_simulator.goals.named_goals`).
PAIRED_FIGURES = ("work_lost.core_seconds", "stall", "pressure_spread.p95")


def summary(results: Sequence[SeededResult]) -> dict[str, Any]:
    """`scenarios.<name>.contenders.<c>.<figure>`: the mean over the seeds;
    `scenarios.<name>.ci95.<c>.<figure>`: its 95% interval `[low, high]`;
    `scenarios.<name>.seeds`: the seeds; `scenarios.<name>.best.<figure>`: the contender
    whose interval lies below every other's, or null for a tie;
    `scenarios.<name>.references.{limit,clairvoyant}`: the reference rows' means (never in
    `best`), `references_ci95` their intervals; `share_of_gain.<c>.{work_lost,stall}`: each
    contender's (and clairvoyant's) share of the gain from requests to the limit;
    `share_of_gain_hindsight` the same against the hindsight placement;
    `gaps.{pipeline,rules}.{work_lost,stall}`: ours - clairvoyant (what the metric pipeline
    costs) and clairvoyant - limit (what the decision rules cost); `ours_minus.<c>.<figure>`:
    ours less each other contender on the figures the named goals judge (`PAIRED_FIGURES`),
    the 95% interval `[low, high]` of the per-seed differences (each seed one world both met).
    A "best" is clear when paired by seed (`tas_simulator.seeds.paired_best`)."""
    scenarios: dict[str, Any] = {}
    for result in results:
        ordered = dict(sorted(result.contenders.items()))
        entry: dict[str, Any] = {
            "seed": result.seeds[0],
            "seeds": list(result.seeds),
            "duration_seconds": result.scenario.duration,
            "contenders": {name: rounded(s.means()) for name, s in ordered.items()},
            "ci95": {name: rounded(s.ci95()) for name, s in ordered.items()},
            "best": best_by_figure(ordered, _judged_figures(ordered)),
        }
        ours = ordered.get(CLAIRVOYANT_OF)
        if ours is not None:
            others = {c: s for c, s in ordered.items() if c != CLAIRVOYANT_OF}
            entry["ours_minus"] = rounded(paired_against(ours, others, PAIRED_FIGURES))
        if result.references:
            references = dict(sorted(result.references.items()))
            entry["references"] = {name: rounded(s.means()) for name, s in references.items()}
            entry["references_ci95"] = {name: rounded(s.ci95()) for name, s in references.items()}
            entry["share_of_gain"] = rounded(shares_of_gain(result))
            entry["share_of_gain_hindsight"] = rounded(shares_of_gain(result, reference=HINDSIGHT))
            entry["gaps"] = rounded(gaps(result))
        if result.unavailable:
            entry["unavailable"] = dict(sorted(result.unavailable.items()))
        scenarios[result.scenario.name] = entry
    return {"scenarios": scenarios}


def gaps(result: SeededResult) -> dict[str, dict[str, float]]:
    """Where the gap from ours to the limit comes from, on the means over the seeds:
    `pipeline` = ours - clairvoyant, `rules` = clairvoyant - limit; empty without them."""
    ours = result.contenders.get(CLAIRVOYANT_OF)
    clairvoyant = result.references.get(CLAIRVOYANT)
    limit = result.references.get(LIMIT)
    if ours is None or clairvoyant is None or limit is None:
        return {}
    o, c, lim = ours.intervals(), clairvoyant.intervals(), limit.intervals()
    found: dict[str, dict[str, float]] = {"pipeline": {}, "rules": {}}
    for key, path in GAIN_FIGURES.items():
        if path in o and path in c and path in lim:
            found["pipeline"][key] = o[path].mean - c[path].mean
            found["rules"][key] = c[path].mean - lim[path].mean
    return found


def write_summary(document: Mapping[str, Any], path: Path) -> None:
    """`summary(...)`'s document as summary.json (built once by the caller, who may read it
    too: the goals do)."""
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    path.write_text(text, encoding="utf-8")


def _judged_figures(contenders: Mapping[str, SeededFigures]) -> list[str]:
    """The table's figures (lower is better for every one of them), by dotted path."""
    known: set[str] = set()
    for seeded in contenders.values():
        known.update(seeded.intervals())
    paths = [figure if key is None else f"{figure}.{key}" for _, figure, key, _ in COLUMNS]
    return [path for path in paths if path in known]


def _gain_cells(
    shares: Mapping[str, Mapping[str, float | None]], name: str, columns: Sequence[str]
) -> list[str]:
    if not columns:
        return []
    found = shares.get(name, {})
    return ["-" if (value := found.get(key)) is None else f"{value:.0%}" for key in GAIN_FIGURES]


def table(result: SeededResult) -> str:
    """The means over the seeds, a row per contender; `*` marks a figure where that contender
    is clearly best (its 95% interval lies below every other contender's)."""
    means = {name: s.means() for name, s in result.contenders.items()}
    best = best_by_figure(result.contenders, _judged_figures(result.contenders))
    names = list(result.contenders)
    columns = [c for c in COLUMNS if any(c[1] in means[n] for n in names)]
    shares = shares_of_gain(result)
    gain_columns = [f"gain {key.replace('_', ' ')}" for key in GAIN_FIGURES] if shares else []
    header = ["contender", *(c[0] for c in columns), *gain_columns]
    rows = []
    for name in names:
        row = [name]
        for _, figure, key, fmt in columns:
            cell = _cell(means[name], figure, key, fmt)
            path = figure if key is None else f"{figure}.{key}"
            row.append(cell + ("*" if best.get(path) == name and len(result.seeds) > 1 else ""))
        rows.append(row + _gain_cells(shares, name, gain_columns))
    for name in (LIMIT, HINDSIGHT, CLAIRVOYANT):
        reference = result.references.get(name)
        if reference is None:
            continue
        found = reference.means()
        cells = [_cell(found, figure, key, fmt) for _, figure, key, fmt in columns]
        gains = ["100%"] * len(gain_columns) if name == LIMIT else []
        rows.append([f"{name} (ref)", *cells, *(gains or _gain_cells(shares, name, gain_columns))])
    scenario = result.scenario
    seeds = result.seeds
    said = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {seeds[0]}..{seeds[-1]}, means"
    title = f"{scenario.name} ({said}, {scenario.duration / 60:g} min)"
    out = [title, *_blocks(header, rows)]
    notes = []
    for name in names:
        changed = scenario.contenders.get(name)
        if changed is not None and (note := changed.runs_with(name, set_by="the scenario")):
            notes.append(note)
    if result.references:
        notes.append(
            "(ref): references, not contenders: limit = the fluid bound (demand divisible, "
            "free to move within the node capacities), hindsight = whole pods each placed once "
            "where its constraints allow, knowing the future (achievable, no moves), "
            "clairvoyant = ours reading true values "
            "(no scrape interval, window or delay)"
        )
    if gain_columns:
        notes.append(
            "gain: share of the achievable gain, (requests - row) / (requests - limit); "
            "- where requests is already at the limit; a stall below the limit's (gain above "
            "100%) is bought with work lost: overloaded nodes stall no more than full ones"
        )
    if len(seeds) > 1:
        notes.append(
            f"* clearly best: its 95% interval over {len(seeds)} seeds lies below every other "
            "contender's (no mark: a tie); summary.json has the intervals"
        )
    for name, reason in sorted(result.unavailable.items()):
        notes.append(f"{name}: unavailable: {reason}")
    for note in notes:
        out.extend(textwrap.wrap(note, TABLE_WIDTH, subsequent_indent="  ", break_on_hyphens=False))
    return "\n".join(out)


def _blocks(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The table's lines: as many figure columns as fit in `TABLE_WIDTH` per block, each block
    with the contender column again, blocks one under the other (a blank line between), so a
    terminal of `TABLE_WIDTH` columns never wraps a row."""
    widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for i in range(1, len(header)):
        if blocks[-1] and used + len(GAP) + widths[i] > TABLE_WIDTH:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(i)
        used += len(GAP) + widths[i]

    def line(row: Sequence[str], columns: Sequence[int]) -> str:
        cells = [row[0].ljust(widths[0]), *(row[i].rjust(widths[i]) for i in columns)]
        return GAP.join(cells)

    lines: list[str] = []
    for columns in blocks:
        if lines:
            lines.append("")
        lines.append(line(header, columns))
        lines.append(line(["-" * w for w in widths], columns))
        lines.extend(line(row, columns) for row in rows)
    return lines
