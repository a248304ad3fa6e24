"""Herd control: the load of recent placements, estimated until the metrics show it
(`placements`), so a burst of pods does not all land on the node that looked idlest."""
