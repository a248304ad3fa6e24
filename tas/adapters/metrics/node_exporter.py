"""The `node-exporter:<node>=<url>,...` source: scrape each node's exporter directly.

For small setups without Prometheus. Every node is scraped in parallel (one slow exporter must
not delay the rest); a node whose scrape fails keeps its last good values until they go stale.
Exporters send no timestamps, so a sample's time is when its scrape answered.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import httpx

from tas.clock import SYSTEM_CLOCK, Clock
from tas.metrics.errors import MetricFetchError, TextFormatError
from tas.metrics.scrape import NodeCounters, read_values, wanted_series
from tas.metrics.source import Fetched, Sample
from tas.metrics.textformat import parse_text
from tas.types import MetricName, NodeName

_MAX_PARALLEL = 16


class NodeExporterSource:
    kind = "node-exporter"

    def __init__(
        self,
        targets: Mapping[NodeName, str],
        *,
        client: httpx.Client,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.targets = {node: metrics_url(url) for node, url in targets.items()}
        self._client = client
        self._clock = clock
        self._counters = {node: NodeCounters() for node in self.targets}
        self._last: dict[NodeName, dict[MetricName, Sample]] = {}

    def fetch(self, names: frozenset[MetricName]) -> Fetched:
        series = wanted_series(names)
        workers = max(1, min(_MAX_PARALLEL, len(self.targets)))
        with ThreadPoolExecutor(workers, thread_name_prefix="tas-scrape") as pool:
            outcomes = dict(
                zip(
                    self.targets,
                    pool.map(lambda node: self._scrape(node, names, series), self.targets),
                    strict=True,
                )
            )
        errors: dict[str, str] = {}
        ok: set[str] = set()
        for node, outcome in outcomes.items():
            if isinstance(outcome, MetricFetchError):
                errors[f"node {node}"] = str(outcome)
            else:
                ok.add(f"node {node}")
                self._last[node] = outcome
        columns = {
            name: {node: values[name] for node, values in self._last.items() if name in values}
            for name in names
        }
        return Fetched(columns=columns, errors=errors, ok=frozenset(ok))

    def _scrape(
        self, node: NodeName, names: frozenset[MetricName], series: frozenset[str]
    ) -> dict[MetricName, Sample] | MetricFetchError:
        url = self.targets[node]
        try:
            response = self._client.get(url)
            fetched_at = self._clock.now().timestamp()
            response.raise_for_status()
            samples = parse_text(response.text, names=series)
        except (httpx.HTTPError, TextFormatError) as error:
            return MetricFetchError(f"{url}: {error}")
        return read_values(
            samples, names=names, fetched_at=fetched_at, counters=self._counters[node]
        )

    def close(self) -> None:
        self._client.close()


def metrics_url(url: str) -> str:
    """`http://host:9100` means its `/metrics`; a URL with a path is used as it is."""
    parsed = httpx.URL(url)
    return str(parsed.copy_with(path="/metrics")) if parsed.path in ("", "/") else url
