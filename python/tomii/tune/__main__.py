"""`python -m tomii.tune CONFIG`: the same as `tomii tune CONFIG`."""

import sys

from .config import main

sys.exit(main())
