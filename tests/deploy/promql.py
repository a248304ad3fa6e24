"""What a dashboard query reads, and what this project exports: for checking dashboards offline.

- `metric_names(expr)`: the metric names a PromQL expression selects (not functions,
  aggregations, keywords, label names or durations). A small lexer, not a parser: the real
  Prometheus parses every query in the tests; this only has to find the names, and its own
  table tests say what it handles.
- `exported_metric_names()`: the series names this project's processes expose, found in the
  source (every `Counter("name", ...)`, `Gauge`, `Histogram`, ... and custom collectors'
  `*MetricFamily("name", ...)`), so a module that moves or is renamed is still found; each is
  expanded to the names Prometheus stores (`_total`, `_bucket`, `_sum`, `_count`, ...).
- `grafana_variables(expr)`: Grafana's `$node`, `${node}`, `$__rate_interval`, ... replaced by
  values Prometheus accepts.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Where the processes' own metrics are defined: the components and the shared library.
PACKAGES = ("extender", "policy_controller", "descheduler", "tas", "tas_cli")

_SUFFIXES = {
    "Counter": ("_total", "_created"),
    "Gauge": ("",),
    "Histogram": ("_bucket", "_sum", "_count", "_created"),
    "Summary": ("", "_sum", "_count", "_created"),
    "Info": ("_info",),
    "Enum": ("",),
    "GaugeMetricFamily": ("",),
    "CounterMetricFamily": ("_total", "_created"),
    "HistogramMetricFamily": ("_bucket", "_sum", "_count"),
    "SummaryMetricFamily": ("_sum", "_count"),
    # tas.runtime.self_metrics.MetricFactory's methods, as the components declare through it.
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "InfoMetricFamily": ("_info",),
}
_KEYWORDS = frozenset(
    {
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "inf",
        "nan",
        "atan2",
    }
)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.:])([A-Za-z_:][A-Za-z0-9_:]*+)(?!\s*\()")
_GRAFANA_VARIABLES = {
    "__rate_interval": "1m",
    "__interval": "15s",
    "__range": "1h",
    "__range_s": "3600",
}
_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


def metric_names(expr: str) -> set[str]:
    """The metric names `expr` selects by name (a `{__name__=...}` selector is not counted)."""
    text = _STRING.sub('""', expr)
    text = _BRACES.sub("", text)
    text = _BRACKETS.sub("", text)
    text = _GROUPING.sub("", text)
    return {name for name in _IDENTIFIER.findall(text) if name.lower() not in _KEYWORDS}


def grafana_variables(expr: str, *, values: dict[str, str] | None = None) -> str:
    """`expr` with Grafana's variables replaced (`values` first, then built-ins, else `.*`)."""
    given = values or {}

    def value(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        return given.get(name, _GRAFANA_VARIABLES.get(name, ".*"))

    return _VARIABLE.sub(value, expr)


def metric_definitions(root: Path = ROOT) -> list[tuple[str, str, str]]:
    """(declared name, constructor, file) of every metric the project's packages define."""
    found: list[tuple[str, str, str]] = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                name, constructor = _metric_definition(node)
                if name is not None and constructor is not None:
                    found.append((name, constructor, str(path.relative_to(root))))
    return found


def exported_metric_names(root: Path = ROOT) -> dict[str, str]:
    """Every series name the project's metric definitions expose -> the file defining it."""
    found: dict[str, str] = {}
    for name, constructor, path in metric_definitions(root):
        counter = constructor.startswith("Counter") or constructor == "counter"
        base = name.removesuffix("_total") if counter else name
        for suffix in _SUFFIXES[constructor]:
            found[base + suffix] = path
    return found


def _metric_definition(node: ast.AST) -> tuple[str | None, str | None]:
    if not isinstance(node, ast.Call):
        return None, None
    func = node.func
    constructor = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if constructor not in _SUFFIXES:
        return None, None
    first: ast.expr | None = node.args[0] if node.args else None
    for keyword in node.keywords:
        if keyword.arg == "name":
            first = keyword.value
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value, constructor
    return None, None
