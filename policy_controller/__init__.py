"""The policy controller: node and pod labels and policy status from node telemetry."""
