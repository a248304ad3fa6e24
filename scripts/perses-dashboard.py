#!/usr/bin/env python3
"""Write the Perses equivalent of the Grafana dashboard, as a PersesDashboard object.

    scripts/perses-dashboard.py [GRAFANA_JSON] > deploy/grafana/perses-dashboard.json

The Grafana dashboard (deploy/grafana/tas-dashboard.json) is the one edited by hand; this
keeps the Perses board (the Cluster Observability Operator's PersesDashboard, as in the PSI
evaluation; `perses.dev/v1alpha2`) identical in panels, queries and layout.
tests/deploy/test_dashboards.py fails when the committed file is not what this script writes.
Standard library only.

Mapping: Grafana rows become Perses grid layouts, `timeseries` panels TimeSeriesChart,
`state-timeline` StatusHistoryChart, `stat` StatChart; query variables over
`label_values(METRIC, LABEL)` become PrometheusLabelValuesVariable; the data source is the
project's default Prometheus data source.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

DEFAULT_SOURCE = Path(__file__).resolve().parents[1] / "deploy" / "grafana" / "tas-dashboard.json"
NAMESPACE = "monitoring"
PANEL_KINDS = {
    "timeseries": "TimeSeriesChart",
    "state-timeline": "StatusHistoryChart",
    "stat": "StatChart",
}
UNITS = {"percentunit": "percent-decimal", "percent": "percent", "s": "seconds"}
_LABEL_VALUES = re.compile(r"label_values\(\s*([^,\s]+)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")


def panel_spec(panel: dict[str, Any]) -> dict[str, Any]:
    kind = PANEL_KINDS[panel["type"]]
    plugin_spec: dict[str, Any] = {}
    unit = panel.get("fieldConfig", {}).get("defaults", {}).get("unit")
    if kind == "TimeSeriesChart":
        plugin_spec["legend"] = {"position": "right", "mode": "table"}
        if unit in UNITS:
            plugin_spec["yAxis"] = {"format": {"unit": UNITS[unit]}}
    elif kind == "StatChart":
        plugin_spec["calculation"] = "last-number"
    return {
        "kind": "Panel",
        "spec": {
            "display": {"name": panel["title"], "description": panel.get("description", "")},
            "plugin": {"kind": kind, "spec": plugin_spec},
            "queries": [
                {
                    "kind": "TimeSeriesQuery",
                    "spec": {
                        "plugin": {
                            "kind": "PrometheusTimeSeriesQuery",
                            "spec": {
                                "query": target["expr"],
                                "seriesNameFormat": target.get("legendFormat", ""),
                            },
                        }
                    },
                }
                for target in panel["targets"]
            ],
        },
    }


def variable(grafana: dict[str, Any]) -> dict[str, Any] | None:
    if grafana["type"] != "query":
        return None  # the data source picker: Perses uses the project's default
    query = grafana["query"]["query"] if isinstance(grafana["query"], dict) else grafana["query"]
    match = _LABEL_VALUES.fullmatch(query.strip())
    if match is None:
        raise SystemExit(f"variable {grafana['name']}: only label_values(METRIC, LABEL) maps")
    spec: dict[str, Any] = {
        "name": grafana["name"],
        "display": {"name": grafana.get("label", grafana["name"]), "hidden": False},
        "allowAllValue": bool(grafana.get("includeAll")),
        "allowMultiple": bool(grafana.get("multi")),
        "plugin": {
            "kind": "PrometheusLabelValuesVariable",
            "spec": {"labelName": match[2], "matchers": [match[1]]},
        },
    }
    if grafana.get("allValue"):
        spec["customAllValue"] = grafana["allValue"]
    return {"kind": "ListVariable", "spec": spec}


def convert(grafana: dict[str, Any]) -> dict[str, Any]:
    panels: dict[str, Any] = {}
    layouts: list[dict[str, Any]] = []
    items: list[dict[str, Any]] | None = None
    row_y = 0
    for panel in grafana["panels"]:
        if panel["type"] == "row":
            items = []
            row_y = panel["gridPos"]["y"] + 1
            layouts.append(
                {
                    "kind": "Grid",
                    "spec": {
                        "display": {"title": panel["title"], "collapse": {"open": True}},
                        "items": items,
                    },
                }
            )
            continue
        if items is None:
            raise SystemExit("every panel must sit under a row")
        key = f"panel{panel['id']}"
        panels[key] = panel_spec(panel)
        grid = panel["gridPos"]
        items.append(
            {
                "x": grid["x"],
                "y": grid["y"] - row_y,
                "width": grid["w"],
                "height": grid["h"],
                "content": {"$ref": f"#/spec/panels/{key}"},
            }
        )
    variables = [v for v in map(variable, grafana["templating"]["list"]) if v is not None]
    # perses.dev/v1alpha2 (v1alpha1 is deprecated): the dashboard itself sits under
    # spec.config (perses/perses-operator, api/v1alpha2/persesdashboard_types.go).
    return {
        "apiVersion": "perses.dev/v1alpha2",
        "kind": "PersesDashboard",
        "metadata": {
            "name": grafana["uid"],
            "namespace": NAMESPACE,
            "labels": {"app.kubernetes.io/part-of": "telemetry-aware-scheduling"},
        },
        "spec": {
            "config": {
                "display": {
                    "name": grafana["title"],
                    "description": grafana.get("description", ""),
                },
                "duration": grafana["time"]["from"].removeprefix("now-"),
                "refreshInterval": grafana.get("refresh", "0s"),
                "variables": variables,
                "panels": panels,
                "layouts": layouts,
            }
        },
    }


def main(argv: list[str]) -> int:
    source = Path(argv[1]) if len(argv) > 1 else DEFAULT_SOURCE
    grafana = json.loads(source.read_text(encoding="utf-8"))
    json.dump(convert(grafana), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
