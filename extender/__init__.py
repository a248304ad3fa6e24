"""The kube-scheduler extender: filter and prioritize nodes by TASPolicy rules."""
