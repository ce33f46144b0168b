"""`python -m tomii.experiments CONFIG`: the same as `tomii sweep CONFIG`."""

import sys

from .config import main

sys.exit(main())
