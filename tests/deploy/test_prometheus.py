"""The metrics pipeline: Prometheus configuration, recording rules, prometheus-adapter rules.

Covered:
- `promtool check config` accepts every shipped Prometheus configuration (the cluster's and
  docker-compose's), and `promtool check rules` the recording rules, as a file and as the
  PrometheusRule of deploy/monitoring (which must hold the same groups); `promtool test rules`
  checks what the rules compute on series with known rates;
- the recording rules are exactly the PromQL the components evaluate for the built-in names
  (tas.metrics.names), so dashboards, prometheus-adapter and policies agree;
- with real node-exporters started with the shipped DaemonSet's command line and a real
  Prometheus with the shipped configuration (tests/deploy/pipeline.py): the relabelling names
  every node-exporter target by its node (`instance`, `node`) and each component target by its
  pod, and drops other pods and ports; the recorded utilization is per node and within 0..1;
- prometheus-adapter's rule, applied the way the adapter applies it to the series that real
  Prometheus returns for the rule's seriesQuery, turns `node_health_metric` into the node metric
  `health_metric`, and its metricsQuery, run on that Prometheus, gives each node its value;
- the Deployment, Service and ServiceMonitors agree with the configuration: the file paths the
  configuration names are mounted, the components' `--metrics` URL is the shipped Service, the
  textfile directory is the one set-health.sh writes, every ServiceMonitor selects a Service
  that has the port it names, and those of components whose series carry their own `namespace`
  label (the controller, the descheduler) honour it over the operator's target label.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from descheduler.self_metrics import DeschedulerMetrics
from policy_controller.self_metrics import ControllerMetrics
from tas.metrics.names import Derived, derived_promql
from tas.types import Namespace, PolicyKey, PolicyName
from tests.deploy.kustomize import Document
from tests.deploy.pipeline import (
    ADAPTER_CONFIG,
    DEPLOY,
    HEALTH,
    PIPELINE,
    PROMETHEUS_YML,
    RULES_YML,
    Pipeline,
    find,
    rendered,
    write_extender_scrape_files,
)
from tests.tas.adapters.metrics.processes import promtool

COMPOSE_PROMETHEUS = DEPLOY / "compose" / "prometheus.yml"


def _rule_groups() -> list[Document]:
    groups: list[Document] = yaml.safe_load(RULES_YML.read_text(encoding="utf-8"))["groups"]
    return groups


# --- static checks ------------------------------------------------------------------------


#: What Prometheus's `kubernetes_sd_configs` accepts (its documentation), for promtools built
#: without Kubernetes discovery (Debian's is: that part of the file is checked here instead).
KUBERNETES_SD_FIELDS = {
    "role",
    "namespaces",
    "selectors",
    "api_server",
    "kubeconfig_file",
    "attach_metadata",
    "follow_redirects",
    "enable_http2",
    "tls_config",
    "authorization",
}
KUBERNETES_SD_ROLES = {"node", "service", "pod", "endpoints", "endpointslice", "ingress"}
NO_KUBERNETES_SD = "field kubernetes_sd_configs not found"


def _check_kubernetes_discovery(job: Document) -> Document:
    """`job` with its Kubernetes discovery checked by hand and swapped for a static target."""
    for discovery in job.pop("kubernetes_sd_configs"):
        assert set(discovery) <= KUBERNETES_SD_FIELDS, (job["job_name"], discovery)
        assert discovery["role"] in KUBERNETES_SD_ROLES, job["job_name"]
        namespaces = discovery.get("namespaces", {})
        assert set(namespaces) <= {"names", "own_namespace"}, job["job_name"]
        assert all(isinstance(n, str) for n in namespaces.get("names", [])), job["job_name"]
    job["static_configs"] = [{"targets": ["127.0.0.1:9"]}]
    return job


def test_promtool_accepts_the_cluster_prometheus_configuration(tmp_path: Path) -> None:
    # As mounted in the pod: the ConfigMap in config/, the scrape Secret in extender-scrape/.
    config = tmp_path / "config"
    config.mkdir()
    shutil.copy(PROMETHEUS_YML, config / PROMETHEUS_YML.name)
    for rule_file in yaml.safe_load(PROMETHEUS_YML.read_text())["rule_files"]:
        shutil.copy(PROMETHEUS_YML.parent / rule_file, config / rule_file)
    write_extender_scrape_files(tmp_path)
    result = promtool("check", "config", str(config / PROMETHEUS_YML.name))
    if NO_KUBERNETES_SD in result.stdout + result.stderr:
        # This promtool lacks Kubernetes discovery: check the discovery blocks against the
        # documented fields, and everything else (relabelling, TLS files, rule files) with
        # promtool, on the same file with static targets in their place.
        shipped = yaml.safe_load(PROMETHEUS_YML.read_text())
        shipped["scrape_configs"] = [
            _check_kubernetes_discovery(j) for j in shipped["scrape_configs"]
        ]
        (config / PROMETHEUS_YML.name).write_text(yaml.safe_dump(shipped))
        result = promtool("check", "config", str(config / PROMETHEUS_YML.name))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout + result.stderr
    # The rule files it names were checked too: the recording rules and the alerts, each
    # with every rule it holds.
    for rule_file in yaml.safe_load(PROMETHEUS_YML.read_text())["rule_files"]:
        groups = yaml.safe_load((PROMETHEUS_YML.parent / rule_file).read_text())["groups"]
        rules = sum(len(group["rules"]) for group in groups)
        assert f"{rule_file}\n  SUCCESS: {rules} rules found" in result.stdout


def test_promtool_accepts_the_compose_prometheus_configuration() -> None:
    result = promtool("check", "config", str(COMPOSE_PROMETHEUS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_configuration_check_catches_a_mistake(tmp_path: Path) -> None:
    broken = tmp_path / "prometheus.yml"
    broken.write_text(COMPOSE_PROMETHEUS.read_text().replace("scrape_interval", "scrape_intreval"))
    assert promtool("check", "config", str(broken)).returncode != 0


def test_promtool_accepts_the_recording_rules() -> None:
    result = promtool("check", "rules", str(RULES_YML))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "6 rules found" in result.stdout


def test_the_prometheus_rule_of_deploy_monitoring_holds_the_same_rules(tmp_path: Path) -> None:
    rule = find(rendered(DEPLOY / "monitoring"), "PrometheusRule", "tas-recording-rules")
    assert rule["spec"]["groups"] == _rule_groups()
    extracted = tmp_path / "prometheusrule.yml"
    extracted.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    result = promtool("check", "rules", str(extracted))
    assert result.returncode == 0, result.stdout + result.stderr


def _normalized(expr: str) -> str:
    return re.sub(r"\s+", " ", expr).replace("( ", "(").replace(" )", ")").strip()


@pytest.mark.parametrize("metric", list(Derived), ids=str)
def test_each_recording_rule_is_the_promql_the_components_evaluate(metric: Derived) -> None:
    rules = {r["record"]: r["expr"] for g in _rule_groups() for r in g["rules"]}
    assert _normalized(rules[f"node_{metric}"]) == _normalized(derived_promql(metric))


def test_the_recording_rules_compute_utilization_and_pressure(tmp_path: Path) -> None:
    # Two CPUs idle half the time, PSI counters growing 0.25 s per second, memory 3/4 free.
    rules = tmp_path / "rules.yml"
    shutil.copy(RULES_YML, rules)
    labels = 'instance="node-a", job="node-exporter", node="node-a"'
    tests = {
        "rule_files": [rules.name],
        "evaluation_interval": "15s",
        "tests": [
            {
                "interval": "15s",
                "input_series": [
                    *(
                        {
                            "series": "node_cpu_seconds_total"
                            f'{{cpu="{cpu}", mode="idle", {labels}}}',
                            "values": "0+7.5x8",
                        }
                        for cpu in ("0", "1")
                    ),
                    *(
                        {
                            "series": f"node_pressure_{r}_waiting_seconds_total{{{labels}}}",
                            "values": "0+3.75x8",
                        }
                        for r in ("cpu", "memory", "io")
                    ),
                    {"series": f"node_memory_MemAvailable_bytes{{{labels}}}", "values": "3x8"},
                    {"series": f"node_memory_MemTotal_bytes{{{labels}}}", "values": "4x8"},
                    # One task runnable on average, on two CPUs.
                    {"series": f"node_load1{{{labels}}}", "values": "1x8"},
                ],
                "promql_expr_test": [
                    *(
                        {
                            "expr": f"node_{name}",
                            "eval_time": "2m",
                            "exp_samples": [{"labels": f"node_{name}{{{labels}}}", "value": v}],
                        }
                        for name, v in (
                            ("cpu_utilization", 0.5),
                            ("memory_utilization", 0.25),
                            ("cpu_pressure", 0.25),
                            ("memory_pressure", 0.25),
                            ("io_pressure", 0.25),
                            ("cpu_load", 0.5),
                        )
                    )
                ],
            }
        ],
    }
    test_file = tmp_path / "rules.test.yml"
    test_file.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = promtool("test", "rules", test_file.name, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# --- the pod and the files it mounts ---------------------------------------------------------


def _mounted_files(deployment: Document) -> dict[str, Document]:
    """mountPath -> the volume mounted there, for the Deployment's one container."""
    pod = deployment["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    (container,) = pod["containers"]
    return {m["mountPath"]: volumes[m["name"]] for m in container["volumeMounts"]}


def test_the_prometheus_pod_mounts_every_file_its_configuration_names() -> None:
    objects = rendered(PIPELINE / "prometheus")
    deployment = find(objects, "Deployment", "tas-prometheus")
    mounts = _mounted_files(deployment)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (config_flag,) = [a for a in container["args"] if a.startswith("--config.file=")]
    config_path = Path(config_flag.removeprefix("--config.file="))
    config_volume = mounts[str(config_path.parent)]
    config_map = find(objects, "ConfigMap", config_volume["configMap"]["name"])
    assert config_map["data"][config_path.name] == PROMETHEUS_YML.read_text()
    config = yaml.safe_load(config_map["data"][config_path.name])
    for rule_file in config["rule_files"]:
        assert rule_file in config_map["data"]
    for job in config["scrape_configs"]:
        for key, relative in job.get("tls_config", {}).items():
            if not key.endswith("_file"):
                continue
            path = (config_path.parent / relative).resolve()
            volume = mounts[str(path.parent)]
            assert volume["secret"]["secretName"] == "tas-extender-scrape-tls"
            assert volume["secret"]["optional"] is True  # Prometheus starts without it
            assert path.name in ("ca.crt", "tls.crt", "tls.key")


def test_the_standalone_profile_s_components_read_its_prometheus_service() -> None:
    service = find(rendered(PIPELINE / "prometheus"), "Service", "tas-prometheus")
    (port,) = service["spec"]["ports"]
    url = f"http://{service['metadata']['name']}.{service['metadata']['namespace']}.svc:{port['port']}"
    profile = rendered(DEPLOY / "profiles" / "standalone")
    assert find(profile, "ConfigMap", "tas-prometheus")["data"]["url"] == url


def test_node_exporter_serves_the_directory_set_health_writes() -> None:
    daemonset = find(rendered(PIPELINE / "node-exporter"), "DaemonSet", "tas-node-exporter")
    pod = daemonset["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (flag,) = [a for a in container["args"] if a.startswith("--collector.textfile.directory=")]
    directory = flag.partition("=")[2]
    volumes = {v["name"]: v for v in pod["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == directory]
    assert mount["readOnly"] is True
    assert volumes[mount["name"]]["hostPath"]["path"] == "/tmp/node-metrics"
    script = (DEPLOY / "health-metric-demo" / "set-health.sh").read_text()
    assert "remote_dir=/tmp/node-metrics" in script
    assert "--collector.pressure" in container["args"]


def _services(objects: list[Document]) -> dict[tuple[str, str], Document]:
    return {
        (o["metadata"]["namespace"], o["metadata"]["name"]): o
        for o in objects
        if o["kind"] == "Service"
    }


def test_every_service_monitor_selects_a_service_with_the_port_it_names() -> None:
    monitoring = rendered(DEPLOY / "monitoring")
    services = _services(monitoring + rendered(DEPLOY / "cluster"))
    monitors = [o for o in monitoring if o["kind"] == "ServiceMonitor"]
    assert {m["metadata"]["name"] for m in monitors} == {
        "tas-node-exporter",
        "tas-policy-controller",
        "tas-descheduler",
        "tas-extender",
    }
    for monitor in monitors:
        namespace = monitor["metadata"]["namespace"]
        selector = monitor["spec"]["selector"]["matchLabels"]
        (service,) = [
            s
            for (ns, _), s in services.items()
            if ns == namespace and selector.items() <= s["metadata"]["labels"].items()
        ]
        ports = {p["name"] for p in service["spec"]["ports"]}
        for endpoint in monitor["spec"]["endpoints"]:
            assert endpoint["port"] in ports, monitor["metadata"]["name"]


def _controller_series(registry: CollectorRegistry) -> None:
    ControllerMetrics(registry).set_violating(
        [(PolicyKey(Namespace("health-metric-demo"), PolicyName("demo-policy")), "deschedule", 1)]
    )


def _descheduler_series(registry: CollectorRegistry) -> None:
    DeschedulerMetrics(registry=registry).count_eviction(
        strategy="TASViolations", node="node-a", namespace="health-metric-demo", result="evicted"
    )


@pytest.mark.parametrize(
    ("monitor_name", "export"),
    [
        pytest.param("tas-policy-controller", _controller_series, id="controller"),
        pytest.param("tas-descheduler", _descheduler_series, id="descheduler"),
    ],
)
def test_a_component_s_own_namespace_label_is_kept_when_the_operator_scrapes_it(
    monitor_name: str, export: Callable[[CollectorRegistry], None]
) -> None:
    # The Prometheus Operator gives every target a `namespace` label (the Service's). Without
    # honorLabels a series' own `namespace` (the policy's, the evicted pod's) is renamed
    # `exported_namespace` and panels grouping by namespace show telemetry-aware-scheduling.
    registry = CollectorRegistry()
    export(registry)
    own = {
        label
        for family in registry.collect()
        for sample in family.samples
        for label in sample.labels
    }
    assert "namespace" in own
    (monitor,) = [
        o
        for o in rendered(DEPLOY / "monitoring")
        if o["kind"] == "ServiceMonitor" and o["metadata"]["name"] == monitor_name
    ]
    assert all(e.get("honorLabels") is True for e in monitor["spec"]["endpoints"])


def test_the_extender_is_scraped_over_mtls_with_the_name_its_certificate_carries() -> None:
    (monitor,) = [
        o
        for o in rendered(DEPLOY / "monitoring")
        if o["kind"] == "ServiceMonitor" and o["metadata"]["name"] == "tas-extender"
    ]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    tls = endpoint["tlsConfig"]
    assert tls["serverName"] == "tas-extender.telemetry-aware-scheduling.svc"
    assert {tls["ca"]["secret"]["name"], tls["cert"]["secret"]["name"]} == {
        tls["keySecret"]["name"]
    }
    shipped = yaml.safe_load(PROMETHEUS_YML.read_text())
    (job,) = [j for j in shipped["scrape_configs"] if j["job_name"] == "tas-extender"]
    assert job["tls_config"]["server_name"] == tls["serverName"]
    # scripts/gen-certs.sh puts this name in the extender's certificate.
    assert '"$service.$namespace.svc"' in (DEPLOY.parent / "scripts" / "gen-certs.sh").read_text()


# --- the running pipeline ---------------------------------------------------------------------


@pytest.mark.integration
def test_node_exporter_targets_are_named_by_their_node_and_components_by_their_pod(
    pipeline: Pipeline,
) -> None:
    targets = pipeline.api("targets")
    active = list(targets["activeTargets"])
    by_job: dict[str, list[dict[str, Any]]] = {}
    for target in active:
        by_job.setdefault(target["labels"]["job"], []).append(target["labels"])
    nodes = sorted(HEALTH)
    assert sorted(t["instance"] for t in by_job["node-exporter"]) == nodes
    assert sorted(t["node"] for t in by_job["node-exporter"]) == nodes
    components = ["tas-policy-controller", "tas-descheduler"]
    if pipeline.has_scrape_certs:
        components.append("tas-extender")
    for job in components:
        assert [t["instance"] for t in by_job[job]] == [f"{job}-0"], job
    dropped = {
        t["discoveredLabels"]["__meta_kubernetes_pod_name"] for t in targets["droppedTargets"]
    }
    assert dropped == {"decoy-app", "decoy-port"}
    assert all(not t["labels"].get("pod", "").startswith("decoy") for t in active)


@pytest.mark.integration
def test_recorded_utilization_and_load_are_per_node_within_zero_and_one(pipeline: Pipeline) -> None:
    for metric in ("node_cpu_utilization", "node_memory_utilization", "node_cpu_load"):
        result = pipeline.wait_for(metric, len(HEALTH))
        assert sorted(r["metric"]["instance"] for r in result) == sorted(HEALTH), metric
        assert all(0.0 <= float(r["value"][1]) <= 1.0 for r in result), result


def _adapter_rule() -> Document:
    rules: list[Document] = yaml.safe_load(ADAPTER_CONFIG.read_text(encoding="utf-8"))["rules"]
    (rule,) = rules
    return rule


def _go_template(template: str) -> str:
    """A Go regexp replacement template (`$1`, `${1}`, `$name`) in Python's spelling."""
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: rf"\g<{m[1] or m[2]}>", template)


def adapter_metric_name(rule: Document, series: str) -> str | None:
    """The custom metric name prometheus-adapter gives `series`, as its naming code does:
    the first match of `name.matches`, expanded with `name.as` (default `$1` with one group,
    `$0` without)."""
    pattern = re.compile(rule["name"]["matches"])
    template = rule["name"].get("as") or ("$1" if pattern.groups == 1 else "$0")
    match = pattern.search(series)
    if match is None:
        return None
    return match.expand(_go_template(template).replace(r"\g<0>", r"\g<0>"))


@pytest.mark.parametrize(
    ("series", "metric"),
    [
        pytest.param("node_health_metric", "health_metric", id="the TAS demo metric"),
        pytest.param("node_cpu_pressure", "cpu_pressure", id="a recording rule"),
        pytest.param("up", None, id="not a node_ series"),
        pytest.param("my_node_thing", None, id="node_ not at the start"),
    ],
)
def test_the_adapter_naming_rule_as_the_adapter_applies_it(series: str, metric: str | None) -> None:
    assert adapter_metric_name(_adapter_rule(), series) == metric


@pytest.mark.integration
def test_prometheus_adapter_serves_node_health_metric_as_health_metric(
    pipeline: Pipeline,
) -> None:
    rule = _adapter_rule()
    # The adapter lists series with the rule's seriesQuery, then names each.
    series = pipeline.api("series", **{"match[]": rule["seriesQuery"]})
    names: dict[str, set[str]] = {}
    for labels in series:
        metric = adapter_metric_name(rule, labels["__name__"])
        assert metric is not None, labels["__name__"]
        names.setdefault(metric, set()).add(labels[next(iter(rule["resources"]["overrides"]))])
    assert names["health_metric"] == set(HEALTH)
    assert {"cpu_utilization", "memory_utilization"} <= set(names)  # the recording rules
    assert rule["resources"]["overrides"] == {"instance": {"resource": "node"}}
    # `GET .../nodes/*/health_metric`: the metricsQuery for those nodes, run on Prometheus.
    query = (
        rule["metricsQuery"]
        .replace("<<.Series>>", "node_health_metric")
        .replace("<<.LabelMatchers>>", f'instance=~"{"|".join(sorted(HEALTH))}"')
    )
    assert "<<" not in query
    values = {r["metric"]["instance"]: float(r["value"][1]) for r in pipeline.query(query)}
    assert values == HEALTH
