"""`python -m descheduler`: the same command as `tas descheduler` (`tas_cli.descheduler`)."""

import sys

from tas_cli.main import main

sys.exit(main(["descheduler", *sys.argv[1:]]))
