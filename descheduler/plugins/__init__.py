"""The descheduler's plugins, one module per plugin.

Each module exports its `NAME`, its arguments (a frozen dataclass whose defaults are the
upstream defaults), `parse_args` (which notes every problem with its path), its `run` and the
`PLUGIN` value (`descheduler.framework.Plugin`) that ties them together. A run reads the
cycle's snapshot through its evictor and asks the evictor to evict; none touches the cluster
itself, so every safety rail applies to all of them.

`registry.PLUGINS` lists the plugins the policy file knows. Adding one is a new module here and
one line there.
"""
