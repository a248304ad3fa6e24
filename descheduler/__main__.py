"""`python -m descheduler`: the same command as `tas descheduler` (`tas_cli.descheduler`)."""

import sys

from tas_cli.descheduler import main

sys.exit(main())
