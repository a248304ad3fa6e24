"""`tas explain pod NS/NAME` and `tas explain node NAME`: why a pod runs where it does and
whether it would move now; what a node looks like to every policy.

Two worlds, one explanation (`tas.explain`, pure):

- a real cluster (the default): the Kubernetes adapter's caches (nodes, pods, PDBs, TASPolicies:
  what the descheduler's ClusterRole grants, docs/explain.md), the metric source the
  components use (`--metrics`), the extender's decision log (`--extender URL`, its
  `/debug/decisions`), the Events the descheduler wrote, and a dry run of the descheduler's
  current cycle (`--descheduler-config`);
- a running `make run` (`--url URL`, or `--demo`): its dashboard builds the same explanation
  in-process (`/api/explain/...`, served from an `Explainer` that `tas run` wires with its live
  parts) and this command prints it.

"Would the descheduler move it now" is the descheduler's own cycle (`Descheduler.run_cycle`),
run in Predictive mode over a read-only view of the cluster (`descheduler.assemble`'s
`read_only`: a write is an error, an Event is dropped), with the running descheduler's memory
(cooldowns, how long a node has been hot) when there is one: nothing here restates its rules.

What cannot be read (an unreachable extender, Events the role may not list) is named in the
answer's `missing` and the rest is explained anyway. An unknown pod or node is exit 1 with the
names most like it; a setup problem (a bad flag, no cluster) exit 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import ssl
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from explainer.facts import DecisionSource, DecisionsUnavailableError, Explainer, api_message
from tas import process, startup
from tas.clock import SYSTEM_CLOCK
from tas.cluster.interface import ClusterError
from tas.explain import (
    EventFact,
    ExtenderRecord,
    NodeExplanation,
    PodExplanation,
    UnknownObjectError,
    node_from_json,
    parse_decisions,
    pod_from_json,
    render_node,
    render_pod,
    to_json,
)
from tas.policies.model import TASPolicy
from tas.types import MetricName, PolicyKey
from tas_cli import common

log = logging.getLogger("tas.explain")

TIMEOUT_SECONDS = 10.0
#: How long the cluster's caches may take to fill.
SYNC_SECONDS = 30.0
#: How many of the extender's recent decisions are read (its log keeps 100 by default).
DECISIONS_READ = 1000

PolicySource = Callable[[], Mapping[PolicyKey, TASPolicy]]


#: `tas explain --help`'s description; its one-line help is in `tas_cli.main.COMMANDS`.
DESCRIPTION = (
    "Explain a pod (where it runs, the extender's verdict and score for every "
    "candidate node at its placement, its policy, whether the descheduler would move it "
    "now and why) or a node (its metrics with their age, every policy's verdict, labels, "
    "taints, recent evictions), on a real cluster or on a running `make run`."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("kind", choices=("pod", "node"), help="what to explain")
    parser.add_argument("name", metavar="NAME", help="NAMESPACE/NAME for a pod, NAME for a node")
    parser.add_argument(
        "--output", choices=("text", "json"), default="text", help="text (default) or json"
    )
    where = parser.add_argument_group("a running make run (instead of a cluster)")
    where.add_argument("--url", metavar="URL", help="its dashboard, e.g. " + common.DEMO_URL)
    where.add_argument(
        "--demo",
        action="store_true",
        help=f"its dashboard at ${common.DEMO_URL_VARIABLE}, else {common.DEMO_URL}",
    )
    # A real cluster (the default): the flags the components take, with the same meaning.
    common.add_kubernetes_arguments(parser)
    common.add_metric_arguments(
        parser, required=False, absent_means="without it metric values are not shown"
    )
    common.add_policy_arguments(parser)
    common.add_sync_period_argument(parser)
    cluster = parser
    cluster.add_argument(
        "--descheduler-config",
        type=Path,
        metavar="FILE",
        help="the DeschedulerPolicy the descheduler runs: its cycle is run dry to say whether "
        "the pod would move now (without it, that part is not evaluated)",
    )
    cluster.add_argument(
        "--extender",
        metavar="URL",
        help="the extender's base URL, e.g. https://tas-extender.telemetry-aware-scheduling:9001"
        " (its /debug/decisions gives each candidate's verdict and score)",
    )
    cluster.add_argument("--extender-ca", type=Path, metavar="FILE", help="CA of its certificate")
    cluster.add_argument(
        "--extender-cert", type=Path, metavar="FILE", help="client certificate (mTLS)"
    )
    cluster.add_argument("--extender-key", type=Path, metavar="FILE", help="its private key")


@dataclass(frozen=True)
class ExplainCommandSettings:
    kind: str
    name: str
    output: str
    #: The dashboard of a running `make run`; None: the cluster.
    url: str | None
    kube: startup.KubeSettings
    metrics: startup.MetricsSettings
    policies: Path | None
    descheduler_config: Path | None
    extender: str | None
    extender_ca: Path | None
    extender_cert: Path | None
    extender_key: Path | None

    @property
    def cluster_flags(self) -> list[str]:
        """The cluster's flags that were given (they mean nothing with `--url`)."""
        given = {
            "--kubeconfig": self.kube.kubeconfig,
            "--context": self.kube.context,
            "--metrics": self.metrics.source,
            "--policies": self.policies,
            "--descheduler-config": self.descheduler_config,
            "--extender": self.extender,
        }
        return [flag for flag, value in given.items() if value is not None]

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> ExplainCommandSettings:
        url = args.url
        if url is None and args.demo:
            url = common.demo_url()
        return common.read_settings(cls, args, url=url)


def run(args: argparse.Namespace) -> int:
    settings = ExplainCommandSettings.from_args(args)
    common.configure_logging("warning")
    return _run(settings)


def _run(settings: ExplainCommandSettings) -> int:
    if settings.kind == "pod" and settings.name.count("/") != 1:
        raise process.SetupError(f"a pod is NAMESPACE/NAME, not {settings.name!r}")
    if settings.url and settings.cluster_flags:
        raise process.SetupError(
            f"{', '.join(settings.cluster_flags)}: for a cluster, not with --url/--demo "
            "(a running make run explains from its own parts)"
        )
    try:
        found = _from_dashboard(settings) if settings.url else _from_cluster(settings)
    except UnknownObjectError as error:
        print(f"tas explain: {error}", file=sys.stderr)
        return 1
    if settings.output == "json":
        print(json.dumps(to_json(found), indent=2))
    elif isinstance(found, PodExplanation):
        print(render_pod(found))
    else:
        print(render_node(found))
    return 0


# ------------------------------------------------------------------------- make run


def _from_dashboard(settings: ExplainCommandSettings) -> PodExplanation | NodeExplanation:
    assert settings.url is not None
    base = settings.url.rstrip("/")
    quoted = "/".join(urllib.parse.quote(part, safe="") for part in settings.name.split("/"))
    url = f"{base}/api/explain/{settings.kind}/{quoted}"
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_SECONDS) as response:
            data = json.loads(response.read())
    except urllib.error.HTTPError as error:
        answer = _json_or_none(error.read())
        if error.code == 404 and isinstance(answer, dict) and "near" in answer:
            raise UnknownObjectError(settings.kind, settings.name, answer["near"]) from error
        why = answer.get("error") if isinstance(answer, dict) else error.reason
        raise process.SetupError(f"{url}: {error.code}: {why}") from error
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise process.SetupError(
            f"cannot read {url} (is `make run` running there?): {error}"
        ) from error
    try:
        return pod_from_json(data) if settings.kind == "pod" else node_from_json(data)
    except (KeyError, TypeError, ValueError) as error:
        raise process.SetupError(
            f"{url}: not an explanation this version reads: {error}"
        ) from error


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


# ------------------------------------------------------------------------- a real cluster


def _from_cluster(settings: ExplainCommandSettings) -> PodExplanation | NodeExplanation:
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
        api_client = startup.kube_api_client(settings.kube)
    except process.SetupError as error:
        raise process.SetupError(f"{error} (to explain a running make run: --demo)") from error
    kubernetes = startup.open_cluster(api_client, watched=watched)
    kubernetes.start()
    closing: list[Callable[[], object]] = [kubernetes.stop]
    try:
        if not kubernetes.wait_synced(SYNC_SECONDS):
            raise process.SetupError(
                f"the cluster's caches did not fill within {SYNC_SECONDS:.0f}s (can this "
                "kubeconfig list nodes, pods, poddisruptionbudgets and taspolicies?)"
            )
        store = PolicyStore()
        if settings.policies is not None:
            loaded = load_policy_path(settings.policies)
            if not loaded.policies and loaded.problems:
                raise process.SetupError(f"--policies: {loaded.problems[0]}")
            store.replace(loaded.policies, loaded.problems)
        else:
            ClusterPolicyLoader(kubernetes, store).sync()
        view: Any
        if settings.metrics.source:
            view = startup.open_view(
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
                raise process.SetupError(f"{settings.descheduler_config}: {error}") from error
            source = startup.open_pod_usage(settings.metrics)
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


def _extender_decisions(settings: ExplainCommandSettings) -> DecisionSource:
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
            raise process.SetupError(f"--extender-ca/--extender-cert: {error}") from error
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


__all__ = ["DESCRIPTION", "add_arguments", "run"]
