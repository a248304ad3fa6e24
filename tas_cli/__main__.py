import sys

from tas_cli.main import main

sys.exit(main())
