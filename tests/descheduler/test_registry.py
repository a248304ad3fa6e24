"""The plugin registry: a plugin is one value, registered once, and nothing else names it.

Covered: a throwaway plugin registered through the registry alone has its arguments parsed from
a DeschedulerPolicy (defaults, and bad arguments reported with their path), is accepted only at
the extension point it serves, is built once and keeps its memory across cycles, and runs in a
real cycle on the in-memory cluster with its
evictions held by the evictor's rails (the total and per-node limits, the DefaultEvictor's
protections, Predictive mode); registering into one registry leaves the built-in set alone; a
name or alias is taken once; every plugin module in the package is listed.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from typing import Any

import pytest

import descheduler.plugins
from descheduler.args import FieldReader, NamespaceFilter
from descheduler.config import ConfigError, parse_config
from descheduler.cycle import Mode
from descheduler.framework import (
    EvictOptions,
    ExtensionPoint,
    Outcome,
    Plugin,
    PluginContext,
    PluginName,
    sort_candidates,
)
from descheduler.plugins import load_aware, low_node_utilization
from descheduler.plugins.registry import PLUGINS, Registry, RegistryError, default_registry
from tas.cluster.model import OwnerReference
from tests.descheduler.builders import cluster_with, make_descheduler, make_node, make_pod, replace

# ------------------------------------------------------------------- a throwaway plugin

LABEL = "example.com/evict-me"


@dataclass(frozen=True, slots=True)
class EvictLabelledArgs:
    value: str = "yes"
    namespaces: NamespaceFilter = field(default_factory=NamespaceFilter)


def parse_evict_labelled(r: FieldReader) -> EvictLabelledArgs:
    value = r.get("value")
    if value is None:
        return EvictLabelledArgs(namespaces=r.namespaces())
    if not isinstance(value, str) or not value:
        r.problem(r.at("value"), f"must be a label value, got {value!r}")
        value = "yes"
    return EvictLabelledArgs(value=value, namespaces=r.namespaces())


class EvictLabelled:
    """A plugin object, built once per profile: what it remembers across cycles (here, the
    pods it evicted) is its own."""

    def __init__(self, args: EvictLabelledArgs) -> None:
        self.args = args
        self.evicted: list[str] = []

    def run(self, context: PluginContext) -> None:
        evictor = context.evictor
        for pod in sort_candidates(context.state.running_in_scope()):
            if pod.labels.get(LABEL) != self.args.value:
                continue
            if not self.args.namespaces.allows(pod.namespace) or not evictor.filter(pod):
                continue
            attempt = evictor.evict(
                pod, EvictOptions(strategy="EvictLabelled", reason=f"{LABEL}={self.args.value}")
            )
            if attempt.done:
                self.evicted.append(pod.name)
            elif attempt.outcome is Outcome.STOPPED:
                return


EVICT_LABELLED = Plugin(
    name=PluginName("EvictLabelled"),
    points=frozenset({ExtensionPoint.DESCHEDULE}),
    args_type=EvictLabelledArgs,
    parse_args=parse_evict_labelled,
    new=EvictLabelled,
)


def with_evict_labelled() -> Registry:
    registry = default_registry()
    registry.register(EVICT_LABELLED)
    return registry


def policy(args: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    plugin_config = [{"name": "EvictLabelled", "args": args}] if args is not None else []
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "evictionCooldownSeconds": 0,
        **top,
        "profiles": [
            {
                "name": "custom",
                "pluginConfig": plugin_config,
                "plugins": {"deschedule": {"enabled": ["EvictLabelled"]}},
            }
        ],
    }


def labelled(name: str, node: str, value: str = "yes", **kw: Any) -> Any:
    return make_pod(name, node=node, owner=name, labels={LABEL: value}, **kw)


# ------------------------------------------------------------------------------ parsing


def test_a_registered_plugin_gets_its_arguments_from_the_policy() -> None:
    config = parse_config(
        policy({"value": "please", "namespaces": {"exclude": ["kube-system"]}}),
        registry=with_evict_labelled(),
    )
    (profile,) = config.profiles
    assert profile.deschedule == (EVICT_LABELLED,)
    assert profile.args_of(EVICT_LABELLED) == EvictLabelledArgs(
        value="please", namespaces=NamespaceFilter(exclude=frozenset({"kube-system"}))
    )


def test_a_registered_plugin_enabled_without_arguments_gets_its_defaults() -> None:
    config = parse_config(policy(), registry=with_evict_labelled())
    assert config.profiles[0].args_of(EVICT_LABELLED) == EvictLabelledArgs()


def test_a_registered_plugins_bad_arguments_are_reported_with_their_path() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(policy({"value": 3, "typo": True}), registry=with_evict_labelled())
    assert caught.value.problems == (
        "profiles[0].pluginConfig[0].args.value: must be a label value, got 3",
        "profiles[0].pluginConfig[0].args.typo: unknown field",
    )


def test_a_registered_plugin_is_accepted_only_at_the_points_it_serves() -> None:
    document = policy()
    document["profiles"][0]["plugins"] = {"balance": {"enabled": ["EvictLabelled"]}}
    with pytest.raises(ConfigError) as caught:
        parse_config(document, registry=with_evict_labelled())
    assert caught.value.problems == (
        "profiles[0].plugins.balance.enabled[0]: EvictLabelled is not a balance plugin; "
        "balance takes RemoveDuplicates, RemovePodsViolatingTopologySpreadConstraint, "
        "LowNodeUtilization, HighNodeUtilization, LoadAware, MakeRoomForPending, SoftTainter",
    )


def test_registering_into_one_registry_leaves_the_built_in_set_alone() -> None:
    with_evict_labelled()
    with pytest.raises(ConfigError) as caught:
        parse_config(policy())
    (problem,) = caught.value.problems
    assert problem.startswith("profiles[0].plugins.deschedule.enabled[0]: unknown plugin")
    assert problem.endswith("LoadAware, MakeRoomForPending, SoftTainter")


def test_a_name_is_taken_once() -> None:
    registry = default_registry()
    clash = Plugin(
        name=PluginName("LoadAware"),
        points=frozenset({ExtensionPoint.BALANCE}),
        args_type=EvictLabelledArgs,
        parse_args=parse_evict_labelled,
    )
    with pytest.raises(RegistryError, match="'LoadAware' is registered already"):
        registry.register(clash)
    assert registry.get("LoadAware") is load_aware.PLUGIN


def test_an_alias_is_taken_once() -> None:
    registry = Registry([load_aware.PLUGIN])
    aliased = Plugin(
        name=PluginName("Other"),
        points=frozenset({ExtensionPoint.BALANCE}),
        args_type=EvictLabelledArgs,
        parse_args=parse_evict_labelled,
        aliases=("LoadAware",),
    )
    with pytest.raises(RegistryError, match="'LoadAware' is registered already"):
        registry.register(aliased)


def test_the_upstream_name_low_node_utilization_is_upstreams_plugin_not_load_aware() -> None:
    registry = default_registry()
    assert registry.get("LowNodeUtilization") is low_node_utilization.PLUGIN
    assert "LowNodeUtilization" not in load_aware.PLUGIN.aliases


def test_every_plugin_module_is_listed_in_the_registry() -> None:
    modules = [
        importlib.import_module(f"descheduler.plugins.{info.name}")
        for info in pkgutil.iter_modules(descheduler.plugins.__path__)
        if info.name != "registry"
    ]
    assert {module.PLUGIN for module in modules} == set(PLUGINS)
    assert all(module.PLUGIN.name == module.NAME for module in modules)


# ------------------------------------------------------------------------------ running


def test_a_registered_plugin_runs_in_a_cycle_within_the_total_limit() -> None:
    pods = (
        labelled("a-1", "node-a"),
        labelled("a-2", "node-a"),
        labelled("b-1", "node-b"),
        labelled("c-1", "node-c"),
        labelled("not-me", "node-c", value="no"),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), make_node("node-c"), pods=pods)
    config = parse_config(policy({}, maxNoOfPodsToEvictTotal=3), registry=with_evict_labelled())
    descheduler = make_descheduler(cluster, config)
    report = descheduler.run_cycle()
    evicted = sorted(d.name for d in report.by_result("evicted"))
    assert len(evicted) == 3
    assert "not-me" not in evicted
    assert {r.name for r in cluster.evictions} == set(evicted)
    assert all(d.reason == f"EvictLabelled: {LABEL}=yes" for d in report.decisions)
    # The plugin object outlives the cycle: the next cycle runs the same one, memory and all.
    plugin = descheduler.plugin_run("custom", EVICT_LABELLED.name)
    assert isinstance(plugin, EvictLabelled)
    descheduler.run_cycle()
    assert descheduler.plugin_run("custom", EVICT_LABELLED.name) is plugin
    assert sorted(plugin.evicted) == ["a-1", "a-2", "b-1", "c-1"]


def test_a_registered_plugins_evictions_pass_the_per_node_limit_and_the_protections() -> None:
    daemon = (OwnerReference("DaemonSet", "ds", controller=True),)
    pods = (
        labelled("a-1", "node-a"),
        labelled("a-2", "node-a"),
        labelled("b-daemon", "node-b", apply=replace(owners=daemon)),
        labelled("b-1", "node-b"),
    )
    cluster = cluster_with(make_node("node-a"), make_node("node-b"), pods=pods)
    config = parse_config(policy({}, maxNoOfPodsToEvictPerNode=1), registry=with_evict_labelled())
    report = make_descheduler(cluster, config, mode=Mode.PREDICTIVE).run_cycle()
    done = report.by_result("dry-run")
    assert sorted(d.node or "" for d in done) == ["node-a", "node-b"]
    assert "b-daemon" not in {d.name for d in done}
    assert cluster.evictions == ()
