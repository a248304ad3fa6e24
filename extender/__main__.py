"""`python -m extender`: the same command as `tas extender` (wired in `tas_cli.extender`)."""

import sys

from tas_cli.extender import main

sys.exit(main())
