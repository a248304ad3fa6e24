"""Node telemetry: one metric view shared by every component, with one module per source.

The values and the protocol: `view.py` is what the components read, `refreshing.py` the cache
they share, `source.py` what a source answers. The sources that do I/O, and
`open_metric_view("<kind>:<where>")`, which turns the `--metrics` flag into a
`RefreshingMetricView`, are the adapters' (`tas.adapters.metrics`).
"""

from tas.metrics.errors import MetricFetchError, MetricSourceError, TextFormatError
from tas.metrics.refreshing import RefreshingMetricView, default_max_age

__all__ = [
    "MetricFetchError",
    "MetricSourceError",
    "RefreshingMetricView",
    "TextFormatError",
    "default_max_age",
]
