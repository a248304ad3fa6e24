"""History from Prometheus: the range queries behind `tas replay` (the adapter; the core is pure).

Metrics are read as the live `prometheus:` source reads them (`tas.adapters.metrics.prometheus`): a
policy's metric is the series `node_<metric>` (else `<metric>`), a derived metric is its PromQL
(`tas.metrics.names.derived_promql`), a configured expression is used as it is, and a series
belongs to the node its `instance` label (or the configured one, then `node`,
`kubernetes_node`) names. For named series the time of the sample behind each step's value is
asked for too (`timestamp()`), so the staleness rule sees scrape gaps (Prometheus itself
would carry a value forward for five minutes).

Pods come from kube-state-metrics: `kube_pod_info` (node per step), `kube_pod_labels`
(`label_telemetry_policy`), `kube_pod_owner`, `kube_pod_start_time`; for a scenario also
`kube_node_status_allocatable`, `kube_pod_container_resource_requests`, and cAdvisor's
`container_cpu_usage_seconds_total` and `container_memory_working_set_bytes`.

Prometheus answers at most 11,000 points per series: every query is asked in pieces of
`QUERY_STEPS` steps and joined.

Errors: `tas.metrics.errors.MetricFetchError` (unreachable, an error answer) from every read.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

from tas.adapters.metrics.prometheus import PrometheusClient, node_labels, node_of
from tas.metrics.names import derived, derived_promql, promql_selector, series_names
from tas.types import MetricName, NodeName, PodKey
from tas_replay.history import History, PodHistory, Steps, Window, fresh_steps

_LabelKey = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class _Series:
    labels: Mapping[str, str]
    points: list[tuple[float, float]]


def _ask(client: PrometheusClient, query: str, window: Window) -> dict[_LabelKey, _Series]:
    """Every series of `query` over the window, its pieces joined."""
    found: dict[_LabelKey, _Series] = {}
    for piece in window.pieces():
        answer = client.matrix(query, start=piece.start, end=piece.end, step=piece.step)
        for series in answer.series:
            key = tuple(sorted(series.labels.items()))
            entry = found.get(key)
            if entry is None:
                found[key] = entry = _Series(series.labels, [])
            entry.points.extend(series.points)
    return found


def _without_name(labels: Mapping[str, str]) -> _LabelKey:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def read_metric(
    client: PrometheusClient,
    metric: MetricName,
    window: Window,
    *,
    max_age: float,
    promql: Mapping[MetricName, str] | None = None,
    node_label: str = "instance",
    rate_window: str = "1m",
) -> dict[NodeName, Steps]:
    """One policy metric per node and step, None where missing or stale."""
    labels = node_labels(node_label)
    expression = (promql or {}).get(metric)
    kind = derived(metric)
    sampled: dict[_LabelKey, dict[float, float]] | None = None
    if expression is None and kind is not None:
        expression = derived_promql(kind, rate_window=rate_window)
    if expression is None:
        selectors = [promql_selector(series) for series in series_names(metric)]
        expression = " or ".join(selectors)
        times = _ask(client, " or ".join(f"timestamp({s})" for s in selectors), window)
        sampled = {key: dict(series.points) for key, series in times.items()}
    columns: dict[NodeName, Steps] = {}
    for series in _ask(client, expression, window).values():
        node = node_of(series.labels, labels)
        if node is None or node in columns:  # two series for one node: the first one counts
            continue
        stamps = sampled.get(_without_name(series.labels), {}) if sampled is not None else None
        columns[node] = fresh_steps(window, series.points, stamps, max_age=max_age)
    return columns


def read_pods(
    client: PrometheusClient, window: Window, *, max_age: float, labelled_only: bool = False
) -> list[PodHistory]:
    """Pods and where they ran, their policy label, owner and start time (kube-state-metrics).

    A pod is on a node at a step when its `kube_pod_info` sample there is fresh (`max_age`):
    kube-state-metrics drops a deleted pod's series, and Prometheus would otherwise carry it
    for five minutes. `labelled_only`: only pods with a `telemetry-policy` label (all a replay
    acts on), so a week of a big cluster's other pods is not read for nothing."""
    pods: dict[PodKey, PodHistory] = {}
    query = "timestamp(kube_pod_info)"
    if labelled_only:
        query += ' and on (namespace, pod) kube_pod_labels{label_telemetry_policy!=""}'
    for series in _ask(client, query, window).values():
        namespace, name = series.labels.get("namespace"), series.labels.get("pod")
        node = series.labels.get("node")
        if not namespace or not name or not node:
            continue  # not scheduled yet: no node to act on
        present = fresh_steps(
            window, ((at, at) for at, _ in series.points), dict(series.points), max_age=max_age
        )
        pod = pods.get((namespace, name))
        if pod is None:
            pods[namespace, name] = pod = PodHistory(namespace, name)
        # One series' spans at a time; a pod with several series (a label that changed) gets
        # its spans put in order and joined below.
        on_node = PodHistory(namespace, name)
        for index, value in enumerate(present):
            if value is not None:
                on_node.add(index, NodeName(node))
        pod.spans.extend(on_node.spans)
    for pod in pods.values():
        pod.spans = _joined(pod.spans)
    for labels in _label_sets(client, 'kube_pod_labels{label_telemetry_policy!=""}', window):
        pod = pods.get((labels.get("namespace", ""), labels.get("pod", "")))
        if pod is not None:
            pod.policy = labels["label_telemetry_policy"]
    for labels in _label_sets(client, "kube_pod_owner", window):
        pod = pods.get((labels.get("namespace", ""), labels.get("pod", "")))
        if pod is not None and labels.get("owner_kind") not in (None, "", "<none>"):
            pod.owner_kind, pod.owner_name = labels["owner_kind"], labels.get("owner_name")
    for series in _ask(client, "kube_pod_start_time", window).values():
        pod = pods.get((series.labels.get("namespace", ""), series.labels.get("pod", "")))
        if pod is not None and series.points:
            pod.started = series.points[-1][1]
    return sorted(pods.values(), key=lambda p: (p.namespace, p.name))


def _joined(spans: list[tuple[int, int, NodeName]]) -> list[tuple[int, int, NodeName]]:
    """Spans in order, overlapping or adjacent ones on the same node made one."""
    joined: list[tuple[int, int, NodeName]] = []
    for first, last, node in sorted(spans):
        if joined and joined[-1][2] == node and first <= joined[-1][1] + 1:
            joined[-1] = (joined[-1][0], max(joined[-1][1], last), node)
        elif not joined or last > joined[-1][1]:
            joined.append((max(first, joined[-1][1] + 1) if joined else first, last, node))
    return joined


def _label_sets(
    client: PrometheusClient, query: str, window: Window
) -> Iterable[Mapping[str, str]]:
    return [series.labels for series in _ask(client, query, window).values()]


def read_scenario_inputs(
    client: PrometheusClient,
    window: Window,
    pods: Collection[PodHistory],
    *,
    max_age: float,
    rate_window: str = "1m",
) -> dict[NodeName, dict[str, float]]:
    """What a scenario needs beyond the replay: each node's allocatable (returned), and each
    pod's requests and CPU and memory usage per step (set on `pods`)."""
    allocatable: dict[NodeName, dict[str, float]] = {}
    for series in _ask(client, "kube_node_status_allocatable", window).values():
        node, resource = series.labels.get("node"), series.labels.get("resource")
        if node and resource in ("cpu", "memory", "pods") and series.points:
            allocatable.setdefault(NodeName(node), {})[resource] = series.points[-1][1]
    by_key = {(p.namespace, p.name): p for p in pods}
    requests = "sum by (namespace, pod, resource) (kube_pod_container_resource_requests)"
    for series in _ask(client, requests, window).values():
        pod = by_key.get((series.labels.get("namespace", ""), series.labels.get("pod", "")))
        resource = series.labels.get("resource")
        if pod is not None and resource in ("cpu", "memory") and series.points:
            pod.requests[resource] = series.points[-1][1]
    # cAdvisor also reports the pod's cgroup as a whole (container="") and the pause
    # container (container="POD"): only the containers' own series are summed.
    containers = '{container!="",container!="POD"}'
    usage = {
        "cpu": "sum by (namespace, pod) "
        f"(rate(container_cpu_usage_seconds_total{containers}[{rate_window}]))",
        "memory": f"sum by (namespace, pod) (container_memory_working_set_bytes{containers})",
    }
    for resource, query in usage.items():
        for series in _ask(client, query, window).values():
            pod = by_key.get((series.labels.get("namespace", ""), series.labels.get("pod", "")))
            if pod is None:
                continue
            steps = fresh_steps(window, series.points, None, max_age=max_age)
            if resource == "cpu":
                pod.cpu = steps
            else:
                pod.memory = steps
    return allocatable


def read_history(
    client: PrometheusClient,
    metrics: Collection[MetricName],
    window: Window,
    *,
    max_age: float,
    promql: Mapping[MetricName, str] | None = None,
    node_label: str = "instance",
    rate_window: str = "1m",
    scenario: bool = False,
) -> History:
    """Everything a replay (and, with `scenario`, a scenario) reads over the window."""
    columns = {
        metric: read_metric(
            client,
            metric,
            window,
            max_age=max_age,
            promql=promql,
            node_label=node_label,
            rate_window=rate_window,
        )
        for metric in sorted(metrics)
    }
    pods = read_pods(client, window, max_age=max_age, labelled_only=not scenario)
    history = History(window, columns, pods)
    if scenario:
        history.allocatable = read_scenario_inputs(
            client, window, pods, max_age=max_age, rate_window=rate_window
        )
    return history
