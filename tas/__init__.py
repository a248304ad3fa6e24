"""Shared library of the telemetry-aware scheduler.

The pure core (`policy`, `rules`, `quantity`, `types`) takes values and returns decisions;
`metrics` and `cluster` are the adapters that do I/O. The components (`extender`,
`policy_controller`, `descheduler`) are built from these parts and never from each other.
"""
