"""`python -m tomii`: see `tomii.cli_module` for the commands."""

import sys

from .cli_module import main

sys.exit(main())
