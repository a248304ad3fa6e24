"""What every long-running process shares: its life (`process`: the stop, the addresses it
serves, its lead), the probes it serves (`probes`), its own metrics (`self_metrics`) and what it
opens at start from its settings (`startup`)."""
