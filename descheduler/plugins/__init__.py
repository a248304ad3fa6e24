"""The descheduler's plugins, one module per plugin.

Each module (LoadAware: a package) exports its `NAME`, its arguments (a frozen dataclass whose
defaults are the upstream defaults), `parse_args` (which notes every problem with its path),
what a cycle runs (a `run(args, context)` function; for a plugin that goes node by node, the
pods to evict from each node (`Plugin.node_by_node`); or a class whose objects keep what the
plugin remembers across cycles) and the `PLUGIN` value (`descheduler.framework.Plugin`) that
ties them together. A run reads the cycle's snapshot through its handle (`PluginContext`) and
asks its evictor to evict; none touches the cluster itself, so every safety rail applies to
all of them.

`registry.PLUGINS` lists the plugins the policy file knows. Adding one is a new module here and
one line there.
"""
