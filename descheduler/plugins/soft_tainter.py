"""SoftTainter: `<taintKeyPrefix>/overutilized=true:PreferNoSchedule` on the nodes LoadAware
(or LowNodeUtilization, as the OpenShift soft tainter does) classifies overutilized, so new
pods avoid them while they are hot.

Nothing runs it among the plugins: after every plugin of a cycle, the cycle keeps the taints in
step with the profile's classification (`descheduler.tainter`), and removes every such taint
when no profile enables it.
"""

from __future__ import annotations

from dataclasses import dataclass

from descheduler.args import FieldReader
from descheduler.framework import ExtensionPoint, Plugin, PluginName
from descheduler.plugins import load_aware, low_node_utilization
from tas.vocabulary import DEFAULT_TAINT_PREFIX

NAME = PluginName("SoftTainter")


@dataclass(frozen=True, slots=True)
class SoftTainterArgs:
    taint_key_prefix: str = DEFAULT_TAINT_PREFIX

    @property
    def taint_key(self) -> str:
        return f"{self.taint_key_prefix}/overutilized"


def parse_args(r: FieldReader) -> SoftTainterArgs:
    prefix = r.get("taintKeyPrefix")
    if prefix is None:
        return SoftTainterArgs()
    if not isinstance(prefix, str) or not prefix or "/" in prefix:
        r.problem(r.at("taintKeyPrefix"), f"must be a DNS prefix without '/', got {prefix!r}")
        return SoftTainterArgs()
    return SoftTainterArgs(taint_key_prefix=prefix)


PLUGIN = Plugin(
    name=NAME,
    points=frozenset({ExtensionPoint.BALANCE}),
    args_type=SoftTainterArgs,
    parse_args=parse_args,
    requires_one_of=(load_aware.NAME, low_node_utilization.NAME),
)
