"""The optional metrics config file (`--metrics-config`): PromQL overrides and Prometheus access.

    promql:                      # per metric, replaces the name convention / derived PromQL
      gpu_busy: avg by (instance) (DCGM_FI_DEV_GPU_UTIL) / 100
    prometheus:
      node_label: instance       # label naming the node, before node and kubernetes_node;
                                 # instance maps by node name or address (node_identity.py)
      rate_window: 1m            # window of the derived metrics' rate()
      bearer_token_file: /var/run/secrets/prometheus/token
      ca_file: /etc/prometheus/ca.crt
      timeout_seconds: 5

Every problem is reported at once, as a `MetricSourceError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tas.metrics.errors import MetricSourceError
from tas.types import MetricName

_METRIC = re.compile(r"[a-zA-Z0-9_-]+")
_DURATION = re.compile(r"\d+(ms|s|m|h|d|w|y)")
_PROMETHEUS_KEYS = {"node_label", "rate_window", "bearer_token_file", "ca_file", "timeout_seconds"}


@dataclass(frozen=True)
class MetricsConfig:
    promql: dict[MetricName, str] = field(default_factory=dict)
    node_label: str = "instance"
    rate_window: str = "1m"
    bearer_token_file: Path | None = None
    ca_file: Path | None = None
    timeout_seconds: float = 5.0


def load_metrics_config(path: Path | None) -> MetricsConfig:
    if path is None:
        return MetricsConfig()
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise MetricSourceError(f"{path}: cannot read metrics config: {error}") from error
    problems: list[str] = []
    config = _parse(document, problems)
    if problems:
        raise MetricSourceError(f"{path}: " + "; ".join(problems))
    return config


def _parse(document: Any, problems: list[str]) -> MetricsConfig:
    if not isinstance(document, dict):
        problems.append("expected a mapping with 'promql' and/or 'prometheus'")
        return MetricsConfig()
    for key in document.keys() - {"promql", "prometheus"}:
        problems.append(f"unknown key {key!r} (expected 'promql', 'prometheus')")
    promql: dict[MetricName, str] = {}
    for name, expression in _mapping(document, "promql", problems).items():
        if not isinstance(name, str) or not _METRIC.fullmatch(name):
            problems.append(f"promql: metric name {name!r} must match [a-zA-Z0-9_-]+")
        elif not isinstance(expression, str) or not expression.strip():
            problems.append(f"promql.{name}: expected a PromQL expression")
        else:
            promql[MetricName(name)] = expression.strip()
    access = _mapping(document, "prometheus", problems)
    for key in access.keys() - _PROMETHEUS_KEYS:
        problems.append(f"prometheus: unknown key {key!r} (expected {sorted(_PROMETHEUS_KEYS)})")
    node_label = access.get("node_label", "instance")
    if not isinstance(node_label, str) or not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", node_label):
        problems.append(f"prometheus.node_label: {node_label!r} is not a label name")
    rate_window = str(access.get("rate_window", "1m"))
    if not _DURATION.fullmatch(rate_window):
        problems.append(f"prometheus.rate_window: {rate_window!r} is not a duration like 1m")
    timeout = access.get("timeout_seconds", 5.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        problems.append(f"prometheus.timeout_seconds: {timeout!r} is not a positive number")
    files = {key: access.get(key) for key in ("bearer_token_file", "ca_file")}
    for key, value in files.items():
        if value is not None and not isinstance(value, str):
            problems.append(f"prometheus.{key}: expected a file path")
    if problems:
        return MetricsConfig()
    return MetricsConfig(
        promql=promql,
        node_label=str(node_label),
        rate_window=rate_window,
        bearer_token_file=Path(files["bearer_token_file"]) if files["bearer_token_file"] else None,
        ca_file=Path(files["ca_file"]) if files["ca_file"] else None,
        timeout_seconds=float(timeout),
    )


def _mapping(document: dict[Any, Any], key: str, problems: list[str]) -> dict[Any, Any]:
    value = document.get(key) or {}
    if not isinstance(value, dict):
        problems.append(f"{key}: expected a mapping")
        return {}
    return value
