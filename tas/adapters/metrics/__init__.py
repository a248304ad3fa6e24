"""The metric sources that do I/O: Prometheus (`prometheus`), node-exporter and its textfiles
(`node_exporter`, `textfile`), the custom and resource metrics APIs (`custom_metrics`), per-pod
usage (`pod_usage`), and `spec`, which opens the one a `--metrics` flag names."""

from tas.adapters.metrics.spec import FORMS, open_metric_view

__all__ = ["FORMS", "open_metric_view"]
