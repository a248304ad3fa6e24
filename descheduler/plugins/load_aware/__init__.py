"""LoadAware, a folder of its own: its arguments (`args`), how it classifies the nodes and what
it remembers of hot ones (`classification`), idle nodes' estimates (`idle`), recent peaks
(`peaks`), how a move is weighed (`moves`, `stall`), and the plugin (`plugin`)."""

from descheduler.plugins.load_aware.args import LoadAwareArgs
from descheduler.plugins.load_aware.plugin import NAME, PLUGIN, LoadAware

__all__ = ["NAME", "PLUGIN", "LoadAware", "LoadAwareArgs"]
