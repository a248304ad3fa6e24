"""`tas explain pod NS/NAME` and `tas explain node NAME`: why a pod runs where it does and
whether it would move now; what a node looks like to every policy.

Two worlds, one explanation (`tas_explain.explain`, pure):

- a real cluster (the default): the Kubernetes adapter's caches (nodes, pods, PDBs, TASPolicies:
  what the descheduler's ClusterRole grants, docs/explain.md), the metric source the
  components use (`--metrics`), the extender's decision log (`--extender URL`, its
  `/debug/decisions`), the Events the descheduler wrote, and a dry run of the descheduler's
  current cycle (`--descheduler-config`), gathered by `tas_explain.cluster`;
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
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tas.policies.model import TASPolicy
from tas.runtime import process, startup
from tas.types import PolicyKey
from tas_cli import common
from tas_explain.cluster import TIMEOUT_SECONDS, explain_from_cluster
from tas_explain.explanation import (
    NodeExplanation,
    PodExplanation,
    UnknownObjectError,
    node_from_json,
    pod_from_json,
    to_json,
)
from tas_explain.render import render_node, render_pod

log = logging.getLogger("tas.explain")


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
        found = _from_dashboard(settings) if settings.url else explain_from_cluster(settings)
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


__all__ = ["DESCRIPTION", "add_arguments", "run"]
