"""`python -m policy_controller`: the same command as `tas controller`."""

from __future__ import annotations

import sys

from policy_controller.cli import main

if __name__ == "__main__":
    sys.exit(main())
