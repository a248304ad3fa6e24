"""Moved to `tas.clock` (temporary re-export while the command line moves)."""

from tas.clock import Clock, SystemClock

__all__ = ["Clock", "SystemClock"]
