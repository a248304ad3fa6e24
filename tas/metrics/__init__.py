"""Node telemetry: one metric view shared by every component, with one module per source.

`open_metric_view("<kind>:<where>")` turns the `--metrics` flag into a `RefreshingMetricView`
(see spec.py for the kinds); `view.py` is the protocol the components read.
"""

from tas.metrics.errors import MetricFetchError, MetricSourceError, TextFormatError
from tas.metrics.refreshing import RefreshingMetricView, default_max_age
from tas.metrics.spec import FORMS, open_metric_view

__all__ = [
    "FORMS",
    "MetricFetchError",
    "MetricSourceError",
    "RefreshingMetricView",
    "TextFormatError",
    "default_max_age",
    "open_metric_view",
]
