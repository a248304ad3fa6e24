"""The policy controller: node and pod labels and policy status from node telemetry.

Every sync period, one consistent node view and one metric view (fresh values only) are turned
into the labels and statuses the TASPolicies ask for, and only the differences are written.

    desired.py     pure: every policy's verdict and the owned labels each node should carry
    diff.py        pure: patches from current to desired labels; which labels are ours
    status.py      pure: a policy's `status`, and when it is worth writing
    reconciler.py  one cycle against a `tas.cluster` Cluster: read, compute, write, events
    loop.py        the periodic loop behind the leader gate
    metrics.py     the controller's Prometheus metrics (injected registry)
    cli.py         `tas controller` / `python -m policy_controller`: wiring only
"""
