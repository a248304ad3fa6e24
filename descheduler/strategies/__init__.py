"""One module per strategy. Each reads the cycle's snapshot through its evictor and asks the
evictor to evict; none touches the cluster itself, so every safety rail applies to all of them."""
