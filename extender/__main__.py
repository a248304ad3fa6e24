"""`python -m extender`: the same command as `tas extender` (`tas_cli.extender`)."""

import sys

from tas_cli.main import main

sys.exit(main(["extender", *sys.argv[1:]]))
