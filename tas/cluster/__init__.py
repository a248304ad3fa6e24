"""The cluster: one interface, a Kubernetes adapter and an in-memory implementation."""
