"""`python -m extender`: the same command line as `tas extender`."""

import sys

from extender.cli import main

sys.exit(main())
