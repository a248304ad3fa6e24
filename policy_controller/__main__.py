"""`python -m policy_controller`: the same command as `tas controller` (`tas_cli.controller`)."""

import sys

from tas_cli.main import main

sys.exit(main(["controller", *sys.argv[1:]]))
