"""The descheduler: safe evictions that close the loop, and load-aware rebalancing."""
