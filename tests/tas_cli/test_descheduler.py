"""The command line: `tas descheduler` / `python -m descheduler`.

Covered: a bad policy file or cron expression exits 2 printing every problem; the subcommand
registers with the `tas` parser; a run-once in Automatic mode wired end to end (policy file,
TASPolicy files, textfile metrics, an in-memory cluster) evicts the demo pod from the violating
node, and in Predictive mode evicts nothing; `python -m descheduler --help` works; a
KubeDescheduler file expands to a policy (`--print-policy` shows it, and it reads back), sets the
mode and interval unless flags do, and one that reads Prometheus without its URL says how to
give it when run, while `--print-policy` shows it anyway (a placeholder for the URL, and why on
stderr: issue 21); exactly one of the two policy files is required.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from descheduler.config import parse_config
from descheduler.cycle import Mode
from tas.vocabulary import POLICY_LABEL
from tas_cli import descheduler as tas_descheduler
from tas_cli.descheduler import DeschedulerCommandSettings, policy_document, run
from tas_cli.main import build_parser, command_parser
from tas_inmemory.cluster import InMemoryCluster
from tests.descheduler.builders import cluster_with, make_node, make_pod

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "deploy" / "descheduler" / "tas-violations.yaml"
POLICY = """
apiVersion: telemetry.intel.com/v1alpha1
kind: TASPolicy
metadata: {name: demo-policy, namespace: health-metric-demo}
spec:
  strategies:
    deschedule:
      rules: [{metricname: health_metric, operator: Equals, target: 2}]
    dontschedule:
      rules:
        - {metricname: health_metric, operator: Equals, target: 1}
        - {metricname: health_metric, operator: Equals, target: 2}
"""


def parse(*argv: str) -> argparse.Namespace:
    return command_parser("descheduler").parse_args(list(argv))


def test_a_bad_policy_file_exits_2_and_prints_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
        "profiles: [{name: p, plugins: {deschedule: {enabled: [Nope, PodLifeTime]}}}]\n"
    )
    assert run(parse("--policy-config-file", str(bad))) == 2
    err = capsys.readouterr().err
    assert "unknown plugin 'Nope'" in err
    assert "give at least one of maxPodLifeTimeSeconds, states, conditions or exitCodes" in err


def test_a_bad_cron_expression_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        parse(
            "--policy-config-file", str(EXAMPLE), "--descheduling-interval-cron-expression", "* *"
        )
    assert exited.value.code == 2
    assert "needs 5 fields" in capsys.readouterr().err


def test_the_subcommand_registers_with_the_tas_parser() -> None:
    args = build_parser(load=["descheduler"]).parse_args(
        ["descheduler", "--policy-config-file", "f.yaml", "--mode", "Automatic"]
    )
    assert args.mode == "Automatic"
    assert args.handler is tas_descheduler.run


def demo(tmp_path: Path) -> tuple[InMemoryCluster, list[str]]:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    for node, value in {"node-a": 0, "node-b": 0, "node-c": 2}.items():
        (metrics / f"{node}.prom").write_text(f"node_health_metric {value}\n")
    policies = tmp_path / "policy.yaml"
    policies.write_text(POLICY)
    cluster = cluster_with(
        make_node("node-a"),
        make_node("node-b"),
        make_node("node-c"),
        pods=(
            make_pod(
                "demo-app-1",
                node="node-c",
                namespace="health-metric-demo",
                owner="demo-app",
                labels={POLICY_LABEL: "demo-policy"},
            ),
        ),
    )
    argv = [
        "--policy-config-file",
        str(EXAMPLE),
        "--metrics",
        f"textfile:{metrics}",
        "--policies",
        str(policies),
    ]
    return cluster, argv


def test_run_once_in_automatic_mode_evicts_the_demo_pod(tmp_path: Path) -> None:
    cluster, argv = demo(tmp_path)
    assert run(parse(*argv, "--mode", "Automatic"), cluster=cluster) == 0
    assert [(r.name, r.node, r.outcome) for r in cluster.evictions] == [
        ("demo-app-1", "node-c", "evicted")
    ]


def test_run_once_in_predictive_mode_evicts_nothing(tmp_path: Path) -> None:
    cluster, argv = demo(tmp_path)
    assert run(parse(*argv), cluster=cluster) == 0
    assert cluster.evictions == ()


def test_python_dash_m_descheduler_shows_help() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "descheduler", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0
    assert "--descheduling-interval-cron-expression" in done.stdout


KUBEDESCHEDULER = ROOT / "deploy" / "descheduler" / "kubedescheduler"


def test_print_policy_shows_what_a_kubedescheduler_expands_to(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parse(
        "--kubedescheduler", str(KUBEDESCHEDULER / "kubevirt-relieve-and-migrate.yaml"),
        "--metrics", "prometheus:http://127.0.0.1:9090", "--print-policy",
    )  # fmt: skip
    assert run(args) == 0
    policy = yaml.safe_load(capsys.readouterr().out)
    assert (policy["apiVersion"], policy["kind"]) == ("descheduler/v1alpha2", "DeschedulerPolicy")
    assert policy["metricsProviders"][0]["prometheus"]["url"] == "http://127.0.0.1:9090"
    plugins = {p["name"] for profile in policy["profiles"] for p in profile["pluginConfig"]}
    assert "LowNodeUtilization" in plugins
    parse_config(policy)  # what is printed is a policy the descheduler reads as it is


def test_a_kubedescheduler_that_reads_prometheus_without_its_url_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = KUBEDESCHEDULER / "kubevirt-relieve-and-migrate.yaml"
    assert run(parse("--kubedescheduler", str(path))) == 2
    err = capsys.readouterr().err
    assert f"{path}: spec: the profiles read Prometheus" in err
    assert "--metrics prometheus:URL" in err


def test_print_policy_needs_no_prometheus_url(tmp_path: Path) -> None:
    """Showing what a KubeDescheduler expands to is reading, not running: no Prometheus needed.
    The URL is a placeholder that says what to give, and stderr says why (a real process: what
    a user pipes to a file is stdout alone)."""
    path = KUBEDESCHEDULER / "kubevirt-relieve-and-migrate.yaml"
    done = subprocess.run(
        [sys.executable, "-m", "tas_cli", "descheduler", "--kubedescheduler", str(path),
         "--print-policy"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    policy = yaml.safe_load(done.stdout)
    assert policy["kind"] == "DeschedulerPolicy"
    assert "KubeVirtRelieveAndMigrate" in {profile["name"] for profile in policy["profiles"]}
    url = policy["metricsProviders"][0]["prometheus"]["url"]
    assert "--metrics prometheus:URL" in url
    assert "placeholder (give --metrics prometheus:URL to fill it in)" in done.stderr


def test_a_kubedescheduler_sets_mode_and_interval_unless_flags_say_otherwise(
    tmp_path: Path,
) -> None:
    path = tmp_path / "kd.yaml"
    path.write_text(
        "apiVersion: operator.openshift.io/v1\nkind: KubeDescheduler\n"
        "metadata: {name: cluster, namespace: openshift-kube-descheduler-operator}\n"
        "spec: {mode: Automatic, deschedulingIntervalSeconds: 3600,\n"
        "       profiles: [AffinityAndTaints]}\n"
    )
    args = parse("--kubedescheduler", str(path), "--print-policy")
    assert run(args) == 0
    _, mode, interval = policy_document(DeschedulerCommandSettings.from_args(args))
    assert (mode, interval) == (Mode.AUTOMATIC, 3600.0)
    args = parse(
        "--kubedescheduler", str(path), "--print-policy",
        "--mode", "Predictive", "--descheduling-interval", "0",
    )  # fmt: skip
    assert run(args) == 0
    _, mode, interval = policy_document(DeschedulerCommandSettings.from_args(args))
    assert (mode, interval) == (Mode.PREDICTIVE, 0.0)


def test_a_policy_file_or_a_kubedescheduler_is_required_not_both(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for argv in ([], ["--policy-config-file", "a", "--kubedescheduler", "b"]):
        with pytest.raises(SystemExit) as exited:
            parse(*argv)
        assert exited.value.code == 2
    assert "--kubedescheduler" in capsys.readouterr().err
