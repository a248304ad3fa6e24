"""The embedded default: what `make run` needs to show the closed loop without a cluster."""
