"""The current set of valid policies, from files or from the cluster, shared by all components."""
