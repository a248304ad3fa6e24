"""The alerts for operators: deploy/metrics-pipeline/prometheus/tas-alerts.yml, and the
PrometheusRule `tas-alerts` of deploy/monitoring.

Covered:
- `promtool check rules` accepts them, and the PrometheusRule holds exactly the same groups,
  with the labels of kube-prometheus's rule selector;
- `promtool test rules tests/deploy/fixtures/tas-alerts.test.yml` passes: each alert fires on
  the series that mean trouble, with its labels and rendered annotations, and does not fire
  before its `for`, once the cause is gone, or on the series it must ignore; the test file
  covers every alert (each severity) both firing and not firing, runs the shipped file, and
  fails when a rule changes (a `for`, a threshold, a matcher);
- every alert has a severity (warning or critical), a summary and a description; every metric
  an expression reads is one the components export (or `up`, or kube-state-metrics' restart
  counter), every metric and docs anchor an annotation names exists, every job an expression
  names is a shipped scrape job (and the Service the Prometheus Operator names it after), and
  the restart alert matches each shipped container and its pods' names;
- docs/deploy.md's "Alerts" section lists every alert;
- on the running pipeline (a real Prometheus with the shipped configuration,
  tests/deploy/pipeline.py) the alerts load and evaluate: the components' targets, which
  answer nothing there, make TASExtenderDown and TASComponentDown pending, with the jobs and
  instances the shipped relabelling gives them.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.kustomize import Document
from tests.deploy.pipeline import (
    ALERTS_YML,
    DEPLOY,
    PROMETHEUS_YML,
    RULES_YML,
    Pipeline,
    find,
    rendered,
)
from tests.deploy.promql import exported_metric_names, metric_names
from tests.docs.markdown import anchors
from tests.tas.adapters.metrics.processes import promtool

ROOT = DEPLOY.parent
TESTS_YML = Path(__file__).parent / "fixtures" / "tas-alerts.test.yml"
DEPLOY_GUIDE = ROOT / "docs" / "deploy.md"
#: What the alerts read that no component of ours exports.
OTHERS_METRICS = {"up", "kube_pod_container_status_restarts_total"}
COMPONENTS = ("tas-extender", "tas-policy-controller", "tas-descheduler")


def _rules() -> list[Document]:
    (group,) = yaml.safe_load(ALERTS_YML.read_text(encoding="utf-8"))["groups"]
    assert group["name"] == "tas-alerts"
    rules: list[Document] = group["rules"]
    return rules


def _alert_names() -> list[str]:
    return sorted({r["alert"] for r in _rules()})


def _unit_tests() -> list[Document]:
    tests: list[Document] = yaml.safe_load(TESTS_YML.read_text(encoding="utf-8"))["tests"]
    return tests


def _alert_rule_tests() -> list[Document]:
    return [case for group in _unit_tests() for case in group["alert_rule_test"]]


# --- the rule files ----------------------------------------------------------------------------


def test_promtool_accepts_the_alerts() -> None:
    result = promtool("check", "rules", str(ALERTS_YML))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(_rules())} rules found" in result.stdout


def test_the_prometheus_rule_of_deploy_monitoring_holds_the_same_alerts() -> None:
    monitoring = rendered(DEPLOY / "monitoring")
    rule = find(monitoring, "PrometheusRule", "tas-alerts")
    assert rule["spec"]["groups"] == yaml.safe_load(ALERTS_YML.read_text())["groups"]
    recording = find(monitoring, "PrometheusRule", "tas-recording-rules")
    # The same labels, so the same rule selector (kube-prometheus's) picks both up.
    assert rule["metadata"]["labels"] == recording["metadata"]["labels"]
    assert rule["metadata"]["namespace"] == recording["metadata"]["namespace"]


def test_the_pipeline_prometheus_loads_the_alerts() -> None:
    config = yaml.safe_load(PROMETHEUS_YML.read_text())
    assert config["rule_files"] == [RULES_YML.name, ALERTS_YML.name]


# --- promtool's unit tests ---------------------------------------------------------------------


def test_each_alert_fires_and_stays_quiet_as_the_promtool_tests_say() -> None:
    result = promtool("test", "rules", str(TESTS_YML))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_the_promtool_tests_run_the_shipped_alerts() -> None:
    (rule_file,) = yaml.safe_load(TESTS_YML.read_text())["rule_files"]
    assert (TESTS_YML.parent / rule_file).resolve() == ALERTS_YML.resolve()


@pytest.mark.parametrize(
    ("alert", "severity"),
    sorted({(r["alert"], r["labels"]["severity"]) for r in _rules()}),
)
def test_the_promtool_tests_cover_each_alert_firing_and_not_firing(
    alert: str, severity: str
) -> None:
    cases = [case for case in _alert_rule_tests() if case["alertname"] == alert]
    fired = [
        expected
        for case in cases
        for expected in case["exp_alerts"]
        if expected["exp_labels"]["severity"] == severity
    ]
    assert fired, f"no test where {alert} ({severity}) fires"
    assert all("exp_annotations" in expected for expected in fired), alert
    assert any(case["exp_alerts"] == [] for case in cases), f"no test where {alert} is quiet"


def _replace_in(name: str, old: str, new: str) -> Callable[[str], str]:
    """A change to the rule of alert `name` only (the first one, for a repeated name)."""

    def change(text: str) -> str:
        start = text.index(f"- alert: {name}\n")
        end = text.find("- alert: ", start + 1)
        end = len(text) if end < 0 else end
        rule = text[start:end]
        assert old in rule, (name, old)
        return text[:start] + rule.replace(old, new, 1) + text[end:]

    return change


#: (alert, what its rule says, what a mistaken edit would make it say)
_CHANGES = [
    ("TASExtenderDown", "for: 5m", "for: 1m"),
    ("TASExtenderCertificateExpiring", "14 * 86400", "7 * 86400"),
    (
        "TASComponentRestarting",
        'pod=~"tas-(extender|policy-controller|descheduler)-.+"',
        'pod=~".+"',
    ),
    ("TASMetricStale", "unless on (job, metric)", "or on (job, metric)"),
]


@pytest.mark.parametrize(
    ("change", "alert"),
    [pytest.param(_replace_in(*change), change[0], id=change[2]) for change in _CHANGES],
)
def test_a_changed_rule_fails_the_promtool_tests(
    tmp_path: Path, change: Callable[[str], str], alert: str
) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(change(ALERTS_YML.read_text()))
    tests = yaml.safe_load(TESTS_YML.read_text())
    tests["rule_files"] = [rules.name]
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(tests))
    result = promtool("test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode != 0
    assert f"alertname: {alert}," in result.stdout + result.stderr


# --- what each alert says and reads ------------------------------------------------------------


@pytest.mark.parametrize("rule", _rules(), ids=lambda r: f"{r['alert']}-{r['labels']['severity']}")
def test_every_alert_has_a_severity_a_summary_and_a_description(rule: Document) -> None:
    assert rule["labels"]["severity"] in ("warning", "critical")
    assert set(rule["annotations"]) == {"summary", "description"}
    assert "\n" not in rule["annotations"]["summary"]
    assert len(rule["annotations"]["description"]) > len(rule["annotations"]["summary"])


@pytest.mark.parametrize("rule", _rules(), ids=lambda r: f"{r['alert']}-{r['labels']['severity']}")
def test_every_metric_an_alert_reads_is_exported(rule: Document) -> None:
    read = metric_names(rule["expr"])
    assert read
    assert read - OTHERS_METRICS <= set(exported_metric_names()), rule["alert"]


def _annotations_text() -> str:
    return "\n".join(str(v) for r in _rules() for v in r["annotations"].values())


@pytest.mark.parametrize("metric", sorted(set(re.findall(r"\b(tas_[a-z_]+)", _annotations_text()))))
def test_every_metric_an_annotation_names_exists(metric: str) -> None:
    exported = exported_metric_names()
    assert metric in exported or f"{metric}_count" in exported  # a histogram by its name


@pytest.mark.parametrize(
    "link", sorted(set(re.findall(r"docs/[\w-]+\.md#[\w-]+", _annotations_text())))
)
def test_every_docs_anchor_an_annotation_names_exists(link: str) -> None:
    path, _, anchor = link.partition("#")
    assert anchor in anchors(ROOT / path), link


def test_every_job_an_alert_names_is_a_shipped_scrape_job_and_service() -> None:
    named = {job for r in _rules() for job in re.findall(r'job="([\w-]+)"', r["expr"])}
    named |= {
        job
        for r in _rules()
        for alternatives in re.findall(r'job=~"([\w|-]+)"', r["expr"])
        for job in alternatives.split("|")
    }
    assert named == set(COMPONENTS)
    scrape_jobs = {
        j["job_name"] for j in yaml.safe_load(PROMETHEUS_YML.read_text())["scrape_configs"]
    }
    assert named <= scrape_jobs
    # The Prometheus Operator names a ServiceMonitor's job after the Service it selects.
    services = {
        o["metadata"]["name"] for o in rendered(DEPLOY / "cluster") if o["kind"] == "Service"
    }
    assert named <= services


def _matcher(expr: str, label: str) -> re.Pattern[str]:
    (pattern,) = re.findall(rf'{label}=~"([^"]+)"', expr)
    return re.compile(pattern)  # Prometheus anchors the regex: use fullmatch


def test_the_restart_alert_matches_each_shipped_container_and_its_pods() -> None:
    (rule,) = [r for r in _rules() if r["alert"] == "TASComponentRestarting"]
    containers, pods = _matcher(rule["expr"], "container"), _matcher(rule["expr"], "pod")
    for name in COMPONENTS:
        deployment = find(rendered(DEPLOY / "cluster"), "Deployment", name)
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        assert containers.fullmatch(container["name"]), container["name"]
        # A Deployment's pods: <deployment>-<ReplicaSet hash>-<5 characters>.
        assert pods.fullmatch(f"{name}-7d9c5b6f4-x2x8q"), name
    assert not pods.fullmatch("my-operator-6c8d9f7b5-q9w8e")


def test_the_deploy_guide_lists_every_alert() -> None:
    text = DEPLOY_GUIDE.read_text(encoding="utf-8")
    (section,) = re.findall(r"^## \d+\. Alerts\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    for alert in _alert_names():
        assert f"`{alert}`" in section, alert


# --- on a running Prometheus -------------------------------------------------------------------


def _active_alerts(pipeline: Pipeline) -> list[dict[str, Any]]:
    alerts: list[dict[str, Any]] = pipeline.api("alerts")["alerts"]
    return alerts


@pytest.mark.integration
def test_the_running_prometheus_evaluates_the_alerts_on_the_shipped_scrape_jobs(
    pipeline: Pipeline,
) -> None:
    groups = pipeline.api("rules", type="alert")["groups"]
    (group,) = [g for g in groups if g["name"] == "tas-alerts"]
    assert len(group["rules"]) == len(_rules())
    assert all(r["health"] == "ok" for r in group["rules"]), group["rules"]
    # The components' targets answer nothing here: each is down, by its job and pod name.
    jobs = ["tas-policy-controller", "tas-descheduler"]
    expected = {("TASComponentDown", job, f"{job}-0") for job in jobs}
    if pipeline.has_scrape_certs:  # without a client certificate the job has no target
        expected.add(("TASExtenderDown", "tas-extender", "tas-extender-0"))
    deadline = time.monotonic() + 30
    while True:
        active = {
            (a["labels"]["alertname"], a["labels"].get("job"), a["labels"].get("instance"))
            for a in _active_alerts(pipeline)
        }
        if expected <= active or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert expected <= active
    # Their jobs have targets: not absent.
    absent = {job for name, job, _ in active if name == "TASComponentAbsent"}
    assert not absent & set(jobs)


def test_the_shipped_copy_of_the_rules_is_what_promtool_tests(tmp_path: Path) -> None:
    # The fixture names the rules by a relative path: copied elsewhere it must not pass silently.
    shutil.copy(TESTS_YML, tmp_path / TESTS_YML.name)
    result = promtool("test", "rules", TESTS_YML.name, cwd=tmp_path)
    assert result.returncode != 0
