"""`python -m descheduler ...`, the same as `tas descheduler ...`."""

import sys

from descheduler.cli import main

sys.exit(main())
