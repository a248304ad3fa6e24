"""Shared library of the telemetry-aware scheduler: the parts every component is built from.

The pure core takes values and returns decisions: `policies.model` (the TASPolicy model and its
validation), `rules` (violations, filters, scores, labels), `fit` (kube-scheduler's filters),
`breaker` (the circuit breaker for a metric that says too much at once), `placements` (the
estimated load of recent placements), and the vocabulary they share: `types`, `quantity`,
`durations`, `cron`, `vocabulary` (the labels, annotations and resources written into
Kubernetes objects) and `clock` (the one Clock protocol).

The adapters do the I/O: `metrics` (the staleness-aware metric view and one module per source),
`cluster` (the Cluster interface and the Kubernetes adapter) and `policies` (the PolicyStore and
its loaders from files and from the cluster). The components (`extender`, `policy_controller`,
`descheduler`) are built from these parts and never from each other; this package imports
none of them.
"""
