"""`tas explain` on a real cluster: an `Explainer` over the cluster's own parts, asked once.

The parts are the ones the components use, opened one way (`tas.runtime.startup`): the Kubernetes
adapter's caches (nodes, pods, PDBs, TASPolicies: what the descheduler's ClusterRole grants,
docs/explain.md), the metric source (`--metrics`), the extender's decision log (`--extender
URL`, its `/debug/decisions`, over HTTPS with its CA and a client certificate), the Events the
descheduler wrote, and a dry run of the descheduler's current cycle (`--descheduler-config`,
`descheduler.assemble`'s `read_only`). What cannot be read is named in the answer's `missing`;
a problem the user can fix (no cluster, a bad file) is a `tas.runtime.process.SetupError`.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from tas.clock import SYSTEM_CLOCK
from tas.cluster.interface import ClusterError
from tas.runtime.process import SetupError
from tas.runtime.startup import (
    ComponentSettings,
    kube_api_client,
    open_cluster,
    open_pod_usage,
    open_view,
)
from tas.types import MetricName
from tas_explain.explain import parse_decisions
from tas_explain.explanation import EventFact, ExtenderRecord, NodeExplanation, PodExplanation
from tas_explain.facts import DecisionSource, DecisionsUnavailableError, Explainer, api_message

TIMEOUT_SECONDS = 10.0
#: How long the cluster's caches may take to fill.
SYNC_SECONDS = 30.0
#: How many of the extender's recent decisions are read (its log keeps 100 by default).
DECISIONS_READ = 1000


class ClusterQuestion(ComponentSettings, Protocol):
    """What `tas explain` asks of a cluster (`tas_cli.explain.ExplainCommandSettings`): which
    object (`kind` "pod" or "node", `name`), and where its parts are."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def descheduler_config(self) -> Path | None: ...
    @property
    def extender(self) -> str | None: ...
    @property
    def extender_ca(self) -> Path | None: ...
    @property
    def extender_cert(self) -> Path | None: ...
    @property
    def extender_key(self) -> Path | None: ...


def explain_from_cluster(settings: ClusterQuestion) -> PodExplanation | NodeExplanation:
    from prometheus_client import CollectorRegistry

    from descheduler.assemble import assemble_descheduler
    from descheduler.config import ConfigError, load_config_file
    from tas.cluster.interface import ResourceKind
    from tas.metrics.static import StaticMetricView
    from tas.policies.cluster import ClusterPolicyLoader
    from tas.policies.files import load_policy_path
    from tas.policies.store import PolicyStore
    from tas.policies.wanted import want_policy_metrics

    missing: list[str] = []
    watched = [ResourceKind.NODE, ResourceKind.POD, ResourceKind.PDB]
    if settings.policies is None:
        watched.append(ResourceKind.POLICY)
    try:
        api_client = kube_api_client(settings.kube)
    except SetupError as error:
        raise SetupError(f"{error} (to explain a running make run: --demo)") from error
    kubernetes = open_cluster(api_client, watched=watched)
    kubernetes.start()
    closing: list[Callable[[], object]] = [kubernetes.stop]
    try:
        if not kubernetes.wait_synced(SYNC_SECONDS):
            raise SetupError(
                f"the cluster's caches did not fill within {SYNC_SECONDS:.0f}s (can this "
                "kubeconfig list nodes, pods, poddisruptionbudgets and taspolicies?)"
            )
        store = PolicyStore()
        if settings.policies is not None:
            loaded = load_policy_path(settings.policies)
            if not loaded.policies and loaded.problems:
                raise SetupError(f"--policies: {loaded.problems[0]}")
            store.replace(loaded.policies, loaded.problems)
        else:
            ClusterPolicyLoader(kubernetes, store).sync()
        view: Any
        if settings.metrics.source:
            view = open_view(
                settings.metrics, kube=settings.kube, registry=CollectorRegistry(), nodes=kubernetes
            )
        else:
            view = StaticMetricView()
            missing.append("metric values: no --metrics SOURCE (give the extender's)")
        descheduler = None
        if settings.descheduler_config is not None:
            try:
                config = load_config_file(settings.descheduler_config)
            except ConfigError as error:
                raise SetupError(f"{settings.descheduler_config}: {error}") from error
            source = open_pod_usage(settings.metrics)
            if source is not None:
                closing.append(source.close)
            descheduler = assemble_descheduler(
                config=config,
                cluster=kubernetes,
                read_only="tas explain",
                metric_view=view,
                policies=lambda: store.snapshot().policies,
                clock=SYSTEM_CLOCK,
                pod_usage_feed=source,
            )
        else:
            missing.append(
                "whether the descheduler would move it: no --descheduler-config FILE (the "
                "DeschedulerPolicy it runs)"
            )
        extra: set[MetricName] = descheduler.wanted_metrics() if descheduler else set()
        want_policy_metrics(store, view, extra=extra)
        if settings.metrics.source:
            view.refresh_once()
            for target, why in getattr(view, "failing", {}).items():
                missing.append(f"metrics from {target}: {why}")

        def events() -> list[EventFact]:
            try:
                found = kubernetes.list_events(field_selector="involvedObject.kind=Pod")
            except ClusterError as error:
                why = api_message(str(error))
                if "forbidden" in why.lower():
                    why += " (the descheduler's role does not list Events: docs/explain.md)"
                raise ClusterError(why) from error
            return [_event_fact(raw) for raw in found]

        explainer = Explainer(
            cluster=kubernetes,
            view=view,
            policies=lambda: store.snapshot().policies,
            decisions=_extender_decisions(settings),
            events=events,
            descheduler=descheduler,
            clock=SYSTEM_CLOCK,
            missing=tuple(missing),
        )
        if settings.kind == "pod":
            namespace, name = settings.name.split("/")
            return explainer.explain_pod(namespace, name)
        return explainer.explain_node(settings.name)
    finally:
        for close in reversed(closing):
            close()


def _extender_decisions(settings: ClusterQuestion) -> DecisionSource:
    url = settings.extender
    if url is None:

        def absent() -> list[ExtenderRecord]:
            raise DecisionsUnavailableError(
                "the extender's verdicts: no --extender URL (its /debug/decisions)"
            )

        return absent
    context: ssl.SSLContext | None = None
    if url.startswith("https:"):
        try:
            context = ssl.create_default_context(
                cafile=str(settings.extender_ca) if settings.extender_ca else None
            )
            if settings.extender_cert is not None:
                context.load_cert_chain(
                    str(settings.extender_cert),
                    str(settings.extender_key) if settings.extender_key else None,
                )
        except (OSError, ssl.SSLError) as error:
            raise SetupError(f"--extender-ca/--extender-cert: {error}") from error
    address = f"{url.rstrip('/')}/debug/decisions?limit={DECISIONS_READ}"

    def fetch() -> list[ExtenderRecord]:
        try:
            with urllib.request.urlopen(
                address, timeout=TIMEOUT_SECONDS, context=context
            ) as response:
                return parse_decisions(json.loads(response.read()))
        except (urllib.error.URLError, OSError, ValueError) as error:
            why = getattr(error, "reason", error)
            raise DecisionsUnavailableError(f"the extender's verdicts: {address}: {why}") from error

    return fetch


def _event_fact(raw: Mapping[str, Any]) -> EventFact:
    involved = raw.get("involvedObject") or {}
    stamp = raw.get("lastTimestamp") or raw.get("eventTime") or raw.get("firstTimestamp")
    when = None
    if isinstance(stamp, str):
        try:
            when = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            when = None
    return EventFact(
        time=when,
        kind=str(involved.get("kind") or ""),
        namespace=str(involved.get("namespace") or ""),
        name=str(involved.get("name") or ""),
        reason=str(raw.get("reason") or ""),
        message=str(raw.get("message") or ""),
        type=str(raw.get("type") or "Normal"),
    )
