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
run in Predictive mode over a read-only view of the cluster (`ReadOnlyCluster`: a write is an
error, an Event is dropped), with the running descheduler's memory (cooldowns, how long a node
has been hot) when there is one: nothing here restates its rules.

What cannot be read (an unreachable extender, Events the role may not list) is named in the
answer's `missing` and the rest is explained anyway. An unknown pod or node is exit 1 with the
names most like it; a setup problem (a bad flag, no cluster) exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import re
import ssl
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from descheduler.cycle import CycleReport, Descheduler, Mode
from descheduler.evictor import owner_key
from descheduler.framework import Result
from descheduler.nodefit import fitting_nodes
from descheduler.plugins import load_aware
from descheduler.plugins.default_evictor import ProtectionRules
from descheduler.state import evaluate_deschedule
from tas.clock import SYSTEM_CLOCK, Clock
from tas.cluster.interface import Cluster, ClusterError, EvictionResult, PolicyDocument
from tas.cluster.model import (
    NamespaceInfo,
    Node,
    ObjectReference,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    Taint,
)
from tas.explain import (
    EventFact,
    ExtenderRecord,
    MoveVerdict,
    NodeExplanation,
    PodExplanation,
    UnknownObjectError,
    explain_gone_pod,
    explain_node,
    explain_pod,
    find_node,
    find_pod,
    node_from_json,
    parse_decisions,
    pod_from_json,
    render_node,
    render_pod,
    to_json,
)
from tas.metrics.view import MetricView
from tas.policies.model import TASPolicy
from tas.rules import ScoreMode
from tas.types import MetricName, Namespace, NodeName, PolicyKey, PolicyName
from tas.vocabulary import POLICY_LABEL
from tas_cli import common, subcommand

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
    kube: common.KubeSettings
    metrics: common.MetricsSettings
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


@subcommand.exit_2_on_setup_error("explain")
def _run(settings: ExplainCommandSettings) -> int:
    if settings.kind == "pod" and settings.name.count("/") != 1:
        raise common.SetupError(f"a pod is NAMESPACE/NAME, not {settings.name!r}")
    if settings.url and settings.cluster_flags:
        raise common.SetupError(
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
        raise common.SetupError(f"{url}: {error.code}: {why}") from error
    except (urllib.error.URLError, OSError, ValueError) as error:
        raise common.SetupError(
            f"cannot read {url} (is `make run` running there?): {error}"
        ) from error
    try:
        return pod_from_json(data) if settings.kind == "pod" else node_from_json(data)
    except (KeyError, TypeError, ValueError) as error:
        raise common.SetupError(f"{url}: not an explanation this version reads: {error}") from error


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


# ------------------------------------------------------------------------- a real cluster


def _from_cluster(settings: ExplainCommandSettings) -> PodExplanation | NodeExplanation:
    from prometheus_client import CollectorRegistry

    from descheduler.config import ConfigError, load_config_file
    from descheduler.usage import pod_usage_from
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
        api_client = common.kube_api_client(settings.kube)
    except common.SetupError as error:
        raise common.SetupError(f"{error} (to explain a running make run: --demo)") from error
    kubernetes = common.open_cluster(api_client, watched=watched)
    kubernetes.start()
    closing: list[Callable[[], object]] = [kubernetes.stop]
    try:
        if not kubernetes.wait_synced(SYNC_SECONDS):
            raise common.SetupError(
                f"the cluster's caches did not fill within {SYNC_SECONDS:.0f}s (can this "
                "kubeconfig list nodes, pods, poddisruptionbudgets and taspolicies?)"
            )
        store = PolicyStore()
        if settings.policies is not None:
            loaded = load_policy_path(settings.policies)
            if not loaded.policies and loaded.problems:
                raise common.SetupError(f"--policies: {loaded.problems[0]}")
            store.replace(loaded.policies, loaded.problems)
        else:
            ClusterPolicyLoader(kubernetes, store).sync()
        view: Any
        if settings.metrics.source:
            view = common.open_view(
                settings.metrics, kube=settings.kube, registry=CollectorRegistry()
            )
        else:
            view = StaticMetricView()
            missing.append("metric values: no --metrics SOURCE (give the extender's)")
        descheduler = None
        if settings.descheduler_config is not None:
            try:
                config = load_config_file(settings.descheduler_config)
            except ConfigError as error:
                raise common.SetupError(f"{settings.descheduler_config}: {error}") from error
            source = common.open_pod_usage(settings.metrics)
            if source is not None:
                closing.append(source.close)
            descheduler = Descheduler(
                config=config,
                cluster=ReadOnlyCluster(kubernetes),
                metric_view=view,
                policies=lambda: store.snapshot().policies,
                mode=Mode.PREDICTIVE,
                clock=SYSTEM_CLOCK,
                pod_usage=pod_usage_from(source) if source is not None else None,
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
                why = _refusal(str(error))
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
            raise common.SetupError(f"--extender-ca/--extender-cert: {error}") from error
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


def _refusal(text: str) -> str:
    """The API server's own words from an error carrying its Status (its `message`)."""
    # The API server's encoder (Go's) writes no space after the colon.
    found = re.search(r'"message":\s*("(?:[^"\\]|\\.)*")', text)
    if found is not None:
        with contextlib.suppress(ValueError):
            text = str(json.loads(found.group(1)))
    return text


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


# ------------------------------------------------------------------------- the explainer


class DecisionsUnavailableError(Exception):
    """The extender's decision log could not be read (the message says why)."""


DecisionSource = Callable[[], list[ExtenderRecord]]


@dataclass
class Explainer:
    """Gathers the facts of one world and builds explanations (`tas.explain`). `tas run`
    builds one over its live parts for the dashboard; this command over a real cluster."""

    cluster: Cluster
    view: MetricView
    policies: PolicySource
    #: The extender's recent decisions; raises `DecisionsUnavailableError`.
    decisions: DecisionSource
    #: Events (for evictions); raises `ClusterError` when they cannot be listed.
    events: Callable[[], Sequence[EventFact]]
    #: The descheduler whose cycle is run dry (its memory is read, never changed).
    descheduler: Descheduler | None
    clock: Clock = SYSTEM_CLOCK
    score_mode: ScoreMode = ScoreMode.PROPORTIONAL
    #: What this world cannot tell, whatever is asked (said in every answer).
    missing: tuple[str, ...] = ()
    #: One dry cycle at a time: two clicks at once need not run two.
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def explain_pod(self, namespace: str, name: str) -> PodExplanation:
        pods = self.cluster.list_pods()
        missing = list(self.missing)
        try:
            pod = find_pod(pods, namespace, name)
        except UnknownObjectError:
            # Gone: "why was it moved?" is answered by its eviction Events, if any.
            gone = explain_gone_pod(namespace, name, events=self._events(missing), missing=missing)
            if gone is None:
                raise
            return gone
        nodes = self.cluster.list_nodes()
        policies = self.policies()
        decisions: list[ExtenderRecord] | None
        try:
            decisions = self.decisions()
        except DecisionsUnavailableError as error:
            decisions = None
            missing.append(str(error))
        move = None
        if self.descheduler is not None:
            try:
                report = self._dry_run(self.descheduler)
                move = move_verdict(report, pod, descheduler=self.descheduler, policies=policies)
            except ClusterError as error:  # e.g. a PriorityClass the policy names, unreadable
                missing.append(f"whether the descheduler would move it: {_refusal(str(error))}")
        return explain_pod(
            pod,
            nodes=nodes,
            policies=policies,
            metrics=self.view.columns(),
            decisions=decisions,
            move=move,
            events=self._events(missing),
            score_mode=self.score_mode,
            missing=missing,
        )

    def explain_node(self, name: str) -> NodeExplanation:
        nodes = self.cluster.list_nodes()
        node = find_node(nodes, name)
        missing = list(self.missing)
        times = getattr(self.view, "sample_times", None)
        return explain_node(
            node,
            nodes=nodes,
            pods=self.cluster.list_pods(),
            policies=self.policies(),
            metrics=self.view.columns(),
            sample_times=times() if times is not None else {},
            now=self.clock.now().timestamp(),
            shown=getattr(self.view, "wanted", ()),
            events=self._events(missing),
            score_mode=self.score_mode,
            missing=missing,
        )

    def _events(self, missing: list[str]) -> Sequence[EventFact]:
        try:
            return self.events()
        except ClusterError as error:
            missing.append(f"recent evictions (Events): {error}")
            return ()

    def _dry_run(self, live: Descheduler) -> CycleReport:
        with self._lock, _quiet_descheduler_logs():
            return dry_run_cycle(live)


def dry_run_cycle(live: Descheduler) -> CycleReport:
    """The descheduler's current cycle, run in Predictive mode over a read-only cluster, with
    `live`'s memory: its owner cooldowns (read, never written in a dry run), how long each node
    has been overutilized, and whether its circuit breaker is open. `live` is not changed."""
    dry = Descheduler(
        config=live.config,
        cluster=ReadOnlyCluster(live.cluster),
        metric_view=live.metric_view,
        policies=live.policies,
        mode=Mode.PREDICTIVE,
        clock=live.clock,
        pod_usage=live.pod_usage,
    )
    dry.cooldown = live.cooldown
    # Shallow copies: a cycle replaces these inner maps, it never changes them in place.
    dry.last_over = dict(live.last_over)
    dry.over_since = dict(live.over_since)
    dry.halted = live.halted
    return dry.run_cycle()


def move_verdict(
    report: CycleReport,
    pod: Pod,
    *,
    descheduler: Descheduler,
    policies: Mapping[PolicyKey, TASPolicy],
) -> MoveVerdict:
    """What a dry cycle's report says about `pod`: evicted (and by what), or kept, and why."""
    if report.skipped is not None:
        return MoveVerdict(False, f"the cycle would not run: {report.skipped}")
    mine = [d for d in report.decisions if (d.namespace, d.name) == (pod.namespace, pod.name)]
    for decision in mine:
        if decision.result == Result.DRY_RUN:
            return MoveVerdict(
                True,
                f"{decision.strategy} would evict it from {decision.node}",
                strategy=decision.strategy,
                reasons=(decision.reason,),
            )
    reasons: list[str] = [f"{d.strategy} tried: {d.result}: {d.reason}" for d in mine]
    if report.circuit_breaker is not None:
        reasons.append(f"circuit breaker open, nothing is evicted: {report.circuit_breaker}")
    node = pod.node_name
    if node is None:
        return MoveVerdict(False, "it is not running on a node", reasons=tuple(reasons))
    reasons.extend(_policy_reasons(pod, node, descheduler, policies))
    reasons.extend(_settling_reasons(pod, descheduler))
    for profile, classification in report.classifications.items():
        category = classification.categories.get(node)
        usage = classification.usages.get(node, {})
        shown = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(usage.items()))
        high = ", ".join(f"{k} {v:.0f}%" for k, v in sorted(classification.thresholds.high.items()))
        state = category.value if category is not None else "not classified (no fresh usage)"
        reasons.append(
            f"profile {profile}: {node} is {state} for load-aware balancing"
            + (f" (usage {shown}; high threshold {high})" if shown else "")
        )
    others = [d for d in report.decisions if d.result == Result.DRY_RUN and d not in mine]
    if others:
        moved = ", ".join(f"{d.namespace}/{d.name} ({d.strategy})" for d in others[:5])
        reasons.append(f"this cycle would evict {len(others)} other pod(s): {moved}")
    return MoveVerdict(False, "no plugin would evict it in this cycle", reasons=tuple(reasons))


def _settling_reasons(pod: Pod, descheduler: Descheduler) -> list[str]:
    """A replacement of a pod its owner lost to an eviction, which LoadAware leaves to settle
    (`descheduler.plugins.load_aware.settle_left`): said only where a profile runs LoadAware."""
    if not any(load_aware.PLUGIN in p.balance for p in descheduler.config.profiles):
        return []
    since = descheduler.cooldown.moving_since(owner_key(pod))
    left = load_aware.settle_left(pod, since, descheduler.clock.now())
    if left <= 0:
        return []
    return [
        f"it replaced a pod its owner lost to an eviction: LoadAware leaves it where it is for "
        f"{math.ceil(left / 60)} more minute(s) (a replica is moved for balance at most once an "
        "hour)"
    ]


def _policy_reasons(
    pod: Pod, node: NodeName, descheduler: Descheduler, policies: Mapping[PolicyKey, TASPolicy]
) -> list[str]:
    label = pod.labels.get(POLICY_LABEL)
    if not label:
        return [f"no {POLICY_LABEL} label: no TAS deschedule rule applies to it"]
    key = PolicyKey(Namespace(pod.namespace), PolicyName(label))
    policy = policies.get(key)
    if policy is None:
        return [f"its policy {key} does not exist"]
    evaluation = evaluate_deschedule({key: policy}, descheduler.metric_view.columns(), [node])
    found = evaluation.get(key)
    if found is None:
        return [f"{key} has no deschedule strategy"]
    why = found.violating.get(node)
    if why is None:
        return [f"{node} does not violate {key}'s deschedule rules"]
    reasons = [f"{node} violates {why}, yet it is kept:"]
    cluster = descheduler.cluster
    now = descheduler.clock.now()
    pods = cluster.list_pods()
    pdbs = cluster.list_pdbs()
    # What nodeFit reads, the same for every profile.
    by_node: dict[NodeName, list[Pod]] = {}
    for other in pods:
        if other.node_name is not None:
            by_node.setdefault(other.node_name, []).append(other)
    ready = [n for n in cluster.list_nodes() if n.ready]
    metrics = descheduler.metric_view.columns()
    for profile in descheduler.config.profiles:
        rules = ProtectionRules.resolve(profile.evictor, cluster=cluster, pods=pods)
        protected = rules.protection(pod, pdbs=pdbs, now=now)
        if protected is not None:
            reasons.append(f"profile {profile.name} protects it: {protected}")
        elif rules.node_fit and not fitting_nodes(
            pod, ready, pods_by_node=by_node, policy=policy, metrics=metrics
        ):
            reasons.append("no other Ready node would accept it (nodeFit)")
    owner = owner_key(pod)
    if descheduler.cooldown.blocked(owner, now):
        reasons.append(f"its owner {owner[1]}/{owner[2]} is cooling down after an eviction")
    return reasons


# ------------------------------------------------------------------------- a read-only cluster


class ReadOnlyCluster:
    """A `Cluster` whose reads are the wrapped one's and whose writes never happen: an
    explanation must not label, taint, evict or record anything. A dry cycle writes nothing
    but the circuit breaker's Events, which are dropped; any other write is an error."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def list_nodes(self) -> Sequence[Node]:
        return self._cluster.list_nodes()

    def list_pods(self, *, node: NodeName | None = None) -> Sequence[Pod]:
        return self._cluster.list_pods(node=node)

    def list_policy_documents(self) -> Sequence[PolicyDocument]:
        return self._cluster.list_policy_documents()

    def list_pdbs(self) -> Sequence[PodDisruptionBudget]:
        return self._cluster.list_pdbs()

    def get_priority_class_value(self, name: str) -> int | None:
        return self._cluster.get_priority_class_value(name)

    def list_namespaces(self) -> Sequence[NamespaceInfo]:
        return self._cluster.list_namespaces()

    def list_persistent_volume_claims(self) -> Sequence[PersistentVolumeClaim]:
        return self._cluster.list_persistent_volume_claims()

    def list_node_metrics(self) -> Mapping[NodeName, Mapping[str, float]]:
        return self._cluster.list_node_metrics()

    def list_pod_metrics(self) -> Mapping[tuple[Namespace, str], Mapping[str, float]]:
        return self._cluster.list_pod_metrics()

    def patch_node_labels(
        self,
        node: NodeName,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
        annotations: Mapping[str, str | None] | None = None,
    ) -> None:
        raise ClusterError("read-only: an explanation does not label nodes")

    def patch_pod_labels(
        self,
        namespace: Namespace,
        name: str,
        *,
        set_labels: Mapping[str, str],
        remove: Iterable[str] = (),
    ) -> None:
        raise ClusterError("read-only: an explanation does not label pods")

    def set_node_taints(self, node: NodeName, taints: Sequence[Taint]) -> None:
        raise ClusterError("read-only: an explanation does not taint nodes")

    def update_policy_status(self, key: PolicyKey, status: Mapping[str, Any]) -> None:
        raise ClusterError("read-only: an explanation does not write policy status")

    def emit_event(
        self, involved: ObjectReference, *, reason: str, message: str, warning: bool = False
    ) -> None:
        return None

    def evict_pod(
        self,
        namespace: Namespace,
        name: str,
        *,
        reason: str,
        grace_period_seconds: int | None = None,
    ) -> EvictionResult:
        raise ClusterError("read-only: an explanation does not evict")


class _DropThreadRecords(logging.Filter):
    """Drops the descheduler's log records made on the threads explaining: a dry cycle's
    "Evicted pod in dry run mode" lines would read, in `tas run`'s terminal, as real ones."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.thread in self.threads and record.name.startswith("descheduler"))


_DROP = _DropThreadRecords()


@contextlib.contextmanager
def _quiet_descheduler_logs() -> Iterator[None]:
    for handler in logging.getLogger().handlers:
        if _DROP not in handler.filters:
            handler.addFilter(_DROP)
    _DROP.threads.add(threading.get_ident())
    try:
        yield
    finally:
        _DROP.threads.discard(threading.get_ident())


def embedded_events(events: Callable[[], Sequence[Any]]) -> Callable[[], list[EventFact]]:
    """The in-memory cluster's recorded Events (`embedded.cluster.RecordedEvent`) as facts."""

    def read() -> list[EventFact]:
        return [
            EventFact(
                time=e.time.timestamp(),
                kind=e.involved.kind,
                namespace=e.involved.namespace,
                name=e.involved.name,
                reason=e.reason,
                message=e.message,
                type=e.type,
            )
            for e in events()
        ]

    return read


__all__ = [
    "DESCRIPTION",
    "DecisionsUnavailableError",
    "Explainer",
    "ReadOnlyCluster",
    "add_arguments",
    "dry_run_cycle",
    "embedded_events",
    "move_verdict",
    "run",
]
